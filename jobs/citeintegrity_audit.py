"""Run the whole CiteIntegrity audit (reference 003) on a record set and write one report.

Wiring only: record files -> index rows (`index.readers`) -> source records with their
deposited family names and keyword-query strata (`corpora.citations.citeintegrity_suite.records_from_rows`)
-> suite, features and every analysis (`verifiers.citations.citeintegrity_experiments.run_audit`) -> report
(`scoring.citations.citeintegrity_report`): Markdown + JSON, optionally HTML, the paper's tables beside ours.

Record sets (any mix, read in the order given):
  --crossref-cache DIR   recorded Crossref responses, one JSON file each (sorted by name), e.g.
                         ../shared/data/bibsources/refchecker/tests/fixtures/test_cache/api_cache/crossref
  --crossref FILE        a Crossref dump part ({"items": [...]}, .json or .json.gz) or one work
  --bibtex FILE          a BibTeX file (family names as BibTeX parses them)

    python jobs/citeintegrity_audit.py --crossref-cache DIR --limit 800 --out-dir audit/
    python jobs/citeintegrity_audit.py --crossref-cache DIR --years any --near-title-cutoff 0.95 --html

Exit status: 0 written; 2 bad input (no usable records, unreadable file) or a failed construction
audit (the report is still written, its audit line says what failed).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corpora.citations.citeintegrity_suite import PAPER_YEAR_WINDOW, SuiteConfig, records_from_rows  # noqa: E402
from index.readers import crossref_row, read_source  # noqa: E402
from scoring.citations.citeintegrity_report import render_html, render_markdown  # noqa: E402
from verifiers.citations.citeintegrity_experiments import run_audit  # noqa: E402


def _years(text: str) -> tuple[int, int] | None:
    if text.lower() in ("any", "none", "off"):
        return None
    try:
        first, last = (int(x) for x in text.split("-", 1))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--years wants FIRST-LAST (e.g. 2019-2025) or 'any', not {text!r}") from exc
    return first, last


def _cutoff(text: str) -> float | None:
    return None if text.lower() in ("none", "off") else float(text)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--crossref-cache", type=Path, action="append", default=[], help="directory of recorded Crossref JSON")
    p.add_argument("--crossref", type=Path, action="append", default=[], help="Crossref dump part (.json / .json.gz)")
    p.add_argument("--bibtex", type=Path, action="append", default=[], help="BibTeX file")
    p.add_argument("--limit", type=int, default=800, help="snapshot size: first N usable records (0: all)")
    p.add_argument("--years", type=_years, default=PAPER_YEAR_WINDOW,
                   help="eligibility window FIRST-LAST on the print-first year, or 'any' (default 2019-2025)")
    p.add_argument("--near-title-cutoff", type=_cutoff, default=0.95,
                   help="drop a record this similar to an earlier title ('none' disables; default 0.95)")
    p.add_argument("--no-ablation", action="store_true", help="skip the near-title ablation suite")
    p.add_argument("--seed", type=int, default=20260921, help="primary pair-shuffle seed")
    p.add_argument("--bootstrap", type=int, default=2000, help="pair-bootstrap replicates")
    p.add_argument("--weights", type=int, default=1000, help="Dirichlet weight vectors")
    p.add_argument("--partitions", type=int, default=30,
                   help="alternative partitions, seeds 20261001 onwards (default the paper's 30)")
    p.add_argument("--out-dir", type=Path, default=Path("citeintegrity_audit"))
    p.add_argument("--html", action="store_true", help="also write report.html")
    return p


def _crossref_rows(path: Path):  # noqa: ANN202
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    data = json.loads(raw)
    if isinstance(data, dict):
        data = data.get("message", data)
        data = data.get("items", data) if isinstance(data, dict) else data
    for work in data if isinstance(data, list) else [data]:
        row = crossref_row(work, str(path)) if isinstance(work, dict) else None
        if row:
            yield row


def _rows(args: argparse.Namespace):  # noqa: ANN202
    for directory in args.crossref_cache:
        if not directory.is_dir():
            raise FileNotFoundError(f"--crossref-cache {directory}: not a directory")
        for path in sorted(directory.glob("*.json")):
            yield from _crossref_rows(path)
    for path in args.crossref:
        yield from _crossref_rows(path)
    for path in args.bibtex:
        yield from read_source("bibtex", path)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    sources = [str(p) for p in (*args.crossref_cache, *args.crossref, *args.bibtex)]
    if not sources:
        print("no record set: give --crossref-cache, --crossref or --bibtex", file=sys.stderr)
        return 2
    try:
        records = records_from_rows(_rows(args), args.limit or None, args.years)
    except (OSError, ValueError) as exc:
        print(f"cannot read the record set: {exc}", file=sys.stderr)
        return 2
    if len(records) < 4:
        print(f"{len(records)} usable records (DOI, title, family names, venue, year"
              f"{', in the window' if args.years else ''}) in {', '.join(sources)}: too few to pair", file=sys.stderr)
        return 2
    config = SuiteConfig(seed=args.seed, near_title_cutoff=args.near_title_cutoff, year_window=args.years)
    result = run_audit(records, config, bootstrap=args.bootstrap, weights=args.weights,
                       near_title_ablation=not args.no_ablation,
                       partition_seeds=tuple(range(20261001, 20261001 + args.partitions)))
    result["sources"] = sources
    args.out_dir.mkdir(parents=True, exist_ok=True)
    markdown = render_markdown(result, ", ".join(sources))
    (args.out_dir / "report.json").write_text(json.dumps(result, indent=1, default=float), encoding="utf-8")
    (args.out_dir / "report.md").write_text(markdown, encoding="utf-8")
    if args.html:
        (args.out_dir / "report.html").write_text(render_html(markdown), encoding="utf-8")
    failed = {k: v for k, v in result["primary_suite"]["audit"].items() if v}
    print(f"wrote {args.out_dir / 'report.md'} ({result['primary_suite']['records']} records, "
          f"{result['primary_suite']['pairs']} pairs)")
    if failed:
        print(f"construction audit failed: {failed}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Generate a labelled citation corpus from real references, seeded and reproducible.

Wiring only: reference list -> corpora generator -> JSONL file. Two kinds:

  hallmark        HALLMARK-format JSONL (VALID entries under acceptable formatting changes plus
                  hallucinated entries of the 14 types); default output is the bundled sample
                  corpora/samples/citations_sample.jsonl
  citeintegrity   CiteIntegrity-style suite (disjoint source-donor pairs, five acceptable and five
                  inconsistent variants per source, split by pair); default output
                  corpora/samples/citeintegrity_sample.jsonl. Its construction audits (on the
                  exported fields) run before anything is written; --near-title-cutoff none is the
                  near-title ablation, --years 2019-2025 the paper's eligibility window.

`--check` regenerates in memory and compares with the file already there (exit 1 on any difference).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corpora.citations.audit import audit_corpus  # noqa: E402
from corpora.citations.citeintegrity_suite import (  # noqa: E402
    SAMPLE_SUITE_PATH,
    SuiteConfig,
    audit_suite,
    build_suite,
    suite_jsonl,
)
from corpora.citations.generator import SAMPLE_CORPUS_PATH, CorpusConfig, corpus_jsonl, generate_corpus  # noqa: E402
from corpora.citations.real_reference import REAL_REFERENCES_PATH, load_references, references_from_hallmark  # noqa: E402
from corpora.citations.taxonomy import hallmark_taxonomy  # noqa: E402

_UNSET = object()


def _cutoff(text: str) -> float | None:
    return None if text.lower() in ("none", "off") else float(text)


def _years(text: str) -> tuple[int, int]:
    try:
        first, last = (int(x) for x in text.split("-", 1))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--years wants FIRST-LAST (e.g. 2019-2025), not {text!r}") from exc
    return first, last


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", nargs="?", choices=("hallmark", "citeintegrity"), default="hallmark", help="what to generate")
    p.add_argument("--references", type=Path, default=REAL_REFERENCES_PATH, help="real reference list (JSONL)")
    p.add_argument(
        "--references-format",
        choices=("scrutineer", "hallmark"),
        default="scrutineer",
        help="scrutineer: the real_references.jsonl format; hallmark: the VALID entries of a HALLMARK JSONL file",
    )
    p.add_argument("--out", type=Path, help="output JSONL (default: the bundled sample file of the kind)")
    p.add_argument("--seed", type=int, help="random seed (default: the kind's default)")
    p.add_argument("--n-valid", type=int, help="hallmark: number of VALID entries")
    p.add_argument("--n-hallucinated", type=int, help="hallmark: number of HALLUCINATED entries")
    p.add_argument("--types", help="hallmark: comma-separated hallucination types (default: all 14)")
    p.add_argument("--near-title-cutoff", type=_cutoff, default=_UNSET,
                   help="citeintegrity: drop a record at least this similar to an earlier title; 'none' disables "
                        "(the near-title ablation); default 0.95")
    p.add_argument("--years", type=_years, default=None,
                   help="citeintegrity: eligibility window FIRST-LAST on the recorded year (the paper's 2019-2025); "
                        "default none")
    p.add_argument("--check", action="store_true", help="compare with the existing file instead of writing it")
    return p


def _hallmark_text(args: argparse.Namespace, refs) -> tuple[str, list[str]]:
    overrides = {
        k: v
        for k, v in {"seed": args.seed, "n_valid": args.n_valid, "n_hallucinated": args.n_hallucinated}.items()
        if v is not None
    }
    if args.types:
        overrides["types"] = tuple(t.strip() for t in args.types.split(",") if t.strip())
    config = CorpusConfig(**overrides)
    entries = generate_corpus(refs, config)
    report = audit_corpus(entries, refs, hallmark_taxonomy())
    return corpus_jsonl(entries), report.failures


def _suite_text(args: argparse.Namespace, refs) -> tuple[str, list[str]]:
    overrides: dict = {"seed": args.seed} if args.seed is not None else {}
    if args.near_title_cutoff is not _UNSET:
        overrides["near_title_cutoff"] = args.near_title_cutoff
    if args.years:
        overrides["year_window"] = args.years
    config = SuiteConfig(**overrides)
    suite = build_suite(refs, config)
    return suite_jsonl(suite), audit_suite(suite).failures


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.references_format == "hallmark":
        refs = references_from_hallmark(args.references)
    else:
        refs = load_references(args.references)
    if args.kind == "hallmark":
        text, failures = _hallmark_text(args, refs)
        out = args.out or SAMPLE_CORPUS_PATH
    else:
        text, failures = _suite_text(args, refs)
        out = args.out or SAMPLE_SUITE_PATH
    if failures:
        print(f"construction audit failed ({len(failures)}):", *failures[:20], sep="\n  ", file=sys.stderr)
        return 2
    lines = text.count("\n")
    if args.check:
        current = out.read_text(encoding="utf-8") if out.exists() else None
        if current != text:
            print(f"{out}: differs from what the generator makes now ({lines} lines); regenerate it", file=sys.stderr)
            return 1
        print(f"{out}: up to date ({lines} lines)")
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    print(f"wrote {lines} entries to {out}; construction audits passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

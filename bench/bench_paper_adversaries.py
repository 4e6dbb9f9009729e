"""Paper-audit adversaries (issue 21): what quoting everything, quoting single tokens and the
built-in controls earn, beside the mechanical reviewer, on the shared papers.

Builds the paper-audit corpus from the shared papers (rule injections only, no TeX compile,
seed 7), runs `paper_reviewer_mechanical` over every injected copy (its outputs are cached in
`--cache`, so a run against other code scores the same reviews), imports two adversarial reviews
through `paper_review_import` (one flag per .tex file quoting the whole file, and one flag per
bare token "0", "+", "in", "}" ..., each "something in this file may be wrong"), adjudicates with
quote matching alone (no judge panel) and prints, per system (reviewers and the controls), the
detection rate over decided injections with its paper-bootstrap 95% CI, the rate over all
injections, the over-long / token-only quote counts and the audit's validity.

    python bench/bench_paper_adversaries.py [--papers N] [--papers-dir DIR] [--cache DIR]
    # the same reviews scored by another checkout's code (e.g. before a change):
    BENCH_CODE_ROOT=/path/to/other/checkout python bench/bench_paper_adversaries.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.environ.get("BENCH_CODE_ROOT") or str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from adjudication.papers.adjudicate import (  # noqa: E402
    PaperAdjudicationConfig,
    adjudicate_paper_controls,
    adjudicate_paper_run,
)
from corpora.papers.audit_corpus import build_paper_audit_corpus  # noqa: E402
from scoring.papers import metrics as paper_metrics  # noqa: E402
from storage.records import Item  # noqa: E402
from verifiers.registry import SystemSpec, build_system  # noqa: E402
from verifiers.system import RunContext  # noqa: E402

PAPERS = ROOT.parent / "shared" / "data" / "papers"
SEED = 7
VAGUE = "something in this file may be wrong"
TOKENS = ("0", "1", "2", "+", "-", "=", "in", "of", "}", "{")


def adversarial_reviews(items: list[Item], folder: Path, kind: str) -> None:
    """One JSON review per copy for `paper_review_import`: whole-file or bare-token quotes."""
    for item in items:
        files = item.payload.get("files") or {}
        tex = [files[f] for f in sorted(files) if f.endswith(".tex") and files[f].strip()]
        quotes = tex if kind == "whole_files" else [t for t in TOKENS if any(t in x for x in tex)]
        review = {"review_text": "\n".join(f"- {VAGUE}" for _ in quotes),
                  "flags": [{"quote": q, "type": None, "description": VAGUE} for q in quotes]}
        path = folder / f"{item.item_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(review))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=None, help="first N shared papers (default: all)")
    parser.add_argument("--papers-dir", type=Path, default=PAPERS,
                        help="folder of paper folders, e.g. held-out papers (default: the shared papers)")
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "scrutineer-bench-adversaries"))
    args = parser.parse_args()
    dirs = sorted(p for p in args.papers_dir.iterdir() if p.is_dir())[: args.papers]
    corpus = build_paper_audit_corpus(dirs, SEED, check_compile=False)
    truths = {r["item_id"]: json.loads(r["extra_json"]) for r in corpus.truth.to_pylist()}
    items = [Item.from_row(r) for r in corpus.items.to_pylist() if not truths[r["item_id"]].get("clean")]
    n_inj = sum(len(truths[i.item_id]["injections"]) for i in items)
    print(f"code: {os.environ.get('BENCH_CODE_ROOT') or ROOT}; {len(dirs)} papers, {len(items)} injected copies, "
          f"{n_inj} injections", flush=True)
    # the cache is keyed by the papers folder too: held-out papers never read the shared papers' reviews
    cache = Path(args.cache) / f"{args.papers_dir.resolve().name}-papers{len(dirs)}"
    cache.mkdir(parents=True, exist_ok=True)
    mech_path = cache / "mechanical.parquet"
    if not mech_path.exists():
        system = build_system(SystemSpec("paper_reviewer_mechanical", {"workers": 2}))
        outs = asyncio.run(system.run(items, RunContext("bench", "2026-12-02")))
        system.close()
        pq.write_table(pa.Table.from_pylist([o.to_row("bench-mech", "paper_reviewer_mechanical", 0) for o in outs]),
                       mech_path)  # fmt: skip
    outputs = {"paper_reviewer_mechanical": pq.read_table(mech_path).to_pylist()}
    for kind in ("whole_files", "tokens"):
        folder = cache / f"import_{kind}"
        adversarial_reviews(items, folder, kind)
        system = build_system(SystemSpec("paper_review_import", {"directory": str(folder)}))
        label = f"import:{kind}"
        outputs[label] = [o.to_row(f"bench-{kind}", label, 0)
                          for o in asyncio.run(system.run(items, RunContext("bench", "2026-12-02")))]
    config = PaperAdjudicationConfig(panel=[])
    tables = [adjudicate_paper_run(corpus.items, corpus.truth, rows, config) for rows in outputs.values()]
    tables.append(adjudicate_paper_controls(corpus.items, corpus.truth, [r for rows in outputs.values() for r in rows],
                                            config))  # fmt: skip
    verdicts = pa.concat_tables(tables, promote_options="default")
    rows = paper_metrics.paper_audit_metrics(verdicts, run_id="bench", n_interval=1000, n_paired=200,
                                             n_permutations=100).to_pylist()  # fmt: skip
    idx = {(r["system"], r["metric"]): r for r in rows if r["stratum"] == "all"}
    systems = sorted({s for s, m in idx if m == "detection_rate" and " vs " not in s})
    print(f"\n{'system':<44} {'DR [95% CI]':>22} {'over all':>9} {'n':>4} {'over-long':>9} {'token-only':>10}")
    for s in systems:
        dr, over = idx[(s, "detection_rate")], idx.get((s, "detection_over_all"))
        long_, tok = idx.get((s, "flags_over_long_quote")), idx.get((s, "flags_token_only_quote"))
        print(f"{s:<44} {dr['value']:>7.3f} [{dr['ci_low']:.3f}, {dr['ci_high']:.3f}] "
              f"{over['value'] if over else float('nan'):>9.3f} {dr['n']:>4} "
              f"{int(long_['value']) if long_ else '-':>9} {int(tok['value']) if tok else '-':>10}")  # fmt: skip
    print("\n" + (paper_metrics.audit_validity(rows) or "audit valid: no control reaches a reviewer's CI"))


if __name__ == "__main__":
    main()

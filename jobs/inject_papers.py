"""Inject errors into LaTeX papers: clean + three injected copies per paper, with their truth.

Wiring only: paper folders -> corpora.papers.audit_corpus -> items.parquet + truth.parquet in
--out, and with --write-copies each copy's sources under <out>/copies/<paper_id>/copy-<k>/.
Without --model no LLM is used (LLM sub-types fall back to rule sub-types and rule stand-ins); with
--model the gateway (clients.llm_gateway.LLMGateway) proposes the LLM sub-types. Prints the corpus
report (failed papers, missing input files, cells filled/substituted/skipped, hand-checked validity)
and writes it to <out>/corpus_report.json; a paper folder that cannot be loaded is named and left out.

  python jobs/inject_papers.py corpora/samples/papers/example-paper --seed 0 --out runs/papers
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from checkers.equivalence import same_at_sample_points  # noqa: E402
from corpora.papers.audit_corpus import build_paper_audit_corpus  # noqa: E402
from corpora.papers.corpus_report import HAND_LABELS, corpus_report  # noqa: E402
from corpora.papers.llm_proposer import LLMProposer  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("papers", nargs="+", type=Path, help="LaTeX project folders (folder name = paper id)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--corpus", default="paper_audit")
    p.add_argument("--variant", choices=("ml",), default=None, help="registry variant (ml: shape non-conformability)")
    p.add_argument("--model", default=None, help="gateway model for LLM sub-types (none: rule fallback)")
    p.add_argument("--api-base", default=None)
    p.add_argument("--write-copies", action="store_true")
    p.add_argument("--labels", type=Path, default=HAND_LABELS,
                   help="hand labels of injections, for the corpus report's hand-checked validity")
    args = p.parse_args(argv)
    proposer = None
    if args.model:
        from clients.llm_gateway import LLMGateway

        proposer = LLMProposer(LLMGateway(args.model, api_base=args.api_base))
    corpus = build_paper_audit_corpus(args.papers, args.seed, proposer, args.corpus, args.variant,
                                      same_maths=same_at_sample_points)
    args.out.mkdir(parents=True, exist_ok=True)
    pq.write_table(corpus.items, args.out / "items.parquet")
    pq.write_table(corpus.truth, args.out / "truth.parquet")
    if args.write_copies:
        for row in corpus.items.to_pylist():
            payload = json.loads(row["payload_json"])
            base = args.out / "copies" / payload["paper_id"] / f"copy-{payload['copy']}"
            for rel, text in payload["files"].items():
                (base / rel).parent.mkdir(parents=True, exist_ok=True)
                (base / rel).write_text(text, encoding="utf-8", newline="")
    report = corpus_report(corpus, args.labels)
    (args.out / "corpus_report.json").write_text(json.dumps(report.as_dict(), indent=1, sort_keys=True), encoding="utf-8")
    for err in corpus.errors:
        print(f"[input] {err}", file=sys.stderr)
    print(f"{corpus.name}@{corpus.version}: {corpus.items.num_rows} copies, {report.injections} injections, "
          f"{report.cells_skipped} skipped -> {args.out}")
    for line in report.lines():
        print(f"  {line}")
    return 0 if corpus.items.num_rows else 2  # no paper could be loaded: bad input


if __name__ == "__main__":
    raise SystemExit(main())

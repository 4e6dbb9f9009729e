"""Inject errors into LaTeX papers: clean + three injected copies per paper, with their truth.

Wiring only: paper folders -> corpora.papers.audit_corpus -> items.parquet + truth.parquet in
--out, and with --write-copies each copy's sources under <out>/copies/<paper_id>/copy-<k>/.
Without --model no LLM is used (LLM sub-types fall back to rule sub-types); with --model the
gateway (clients.llm_gateway.LLMGateway) proposes the LLM sub-types.

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
    n_inj = sum(len(json.loads(r["extra_json"])["injections"]) for r in corpus.truth.to_pylist())
    n_skip = sum(len(json.loads(r["extra_json"])["skipped"]) for r in corpus.truth.to_pylist())
    print(f"{corpus.name}@{corpus.version}: {corpus.items.num_rows} copies, {n_inj} injections, {n_skip} skipped -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Build a review-hallucination corpus (HalluPeer-style) from review files, with its truth.

Wiring only: review files -> corpora.reviews.ingest -> (track `injected`) the seeded injection
builder corpora.reviews.corpus_builder, or (track `natural`) the reviews as they are with their
own labels (ReviewCritique's deficient segments) -> in --out:

  items.jsonl / truth.jsonl     one review copy per line; truth kept apart (corpora/reviews/corpus_io.py)
  items.parquet / truth.parquet the same as the project's Item/Truth tables (kind "review")
  report.json                   corpus name and version, counts per anchor (screened, ungrounded, attempts,
                                equivalent, infeasible, parse_failures, rejected, kept), skipped
                                copies, load errors (file:line: reason), warnings and
                                non_utf8_lines (lines read with U+FFFD for bytes that were not UTF-8);
                                with --validity-labels FILE, the hand-checked validity per anchor
                                (injections, labelled, valid, valid_share; corpora/reviews/validity.py)

Input formats (--format auto picks by content): `reviewcritique` (ReviewCritique_LLM.jsonl, bare
NaN allowed), `jsonl` (paper_id, paper_text, review_text[, review_id] per line), `openreview`
(a note export: JSON list, {"notes": [...]}, or one note per line). A review longer than
--max-review-chars (default 200,000) is refused by line; the other reviews are kept.

Without --model only the rule injectors run (Number, Temporal, Entity); the six other anchors are
reported as unavailable. With --model the gateway (clients.llm_gateway.LLMGateway) runs the LLM
injector for them, and optionally the feasibility check (--llm-check), the LLM equivalence judge
(--llm-verify), LLM aspect tags (--llm-aspects) and HalluPeer's meta-review alignment filter
(--meta-review-filter: an OpenReview export's reviews are kept only when judged aligned with their
paper's meta-review with high confidence; report.json's `meta_review_filter` counts kept, not
aligned, low confidence, unjudged and without a meta-review). The output is the same for the same inputs,
seed and settings (the gateway's response cache, --cache-dir, makes LLM runs replayable).

  python jobs/build_review_corpus.py ../shared/data/hallupeer/reviewcritique/ReviewCritique_LLM.jsonl \\
      --seed 0 --copies 2 --out runs/review_corpus
  python jobs/build_review_corpus.py reviews.jsonl --track natural --out runs/reviews_natural
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corpora.reviews.aspects import LLMAspectTagger  # noqa: E402
from corpora.reviews.corpus_builder import BuildConfig, ReviewInjectionBuilder  # noqa: E402
from corpora.reviews.corpus_io import corpus_tables, write_jsonl  # noqa: E402
from corpora.reviews.equivalence import EquivalenceVerifier  # noqa: E402
from corpora.reviews.ingest import MAX_REVIEW_CHARS, load_reviews, retag_aspects  # noqa: E402
from corpora.reviews.llm_injector import LLMInjector  # noqa: E402
from corpora.reviews.meta_review import MetaReviewFilter  # noqa: E402
from corpora.reviews.screening import LLMFeasibilityCheck  # noqa: E402
from corpora.reviews.taxonomy import TAXONOMY_PATH, load_review_taxonomy  # noqa: E402
from corpora.reviews.validity import load_validity_labels, validity_by_anchor  # noqa: E402


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", type=Path, help="review files (all of one --format)")
    p.add_argument("--format", default="auto", choices=("auto", "reviewcritique", "jsonl", "openreview"))
    p.add_argument("--track", default="injected", choices=("injected", "natural"),
                   help="injected: clean + injected copies per review; natural: the reviews with their own labels")
    p.add_argument("--out", type=Path, required=True, help="output folder (created)")
    p.add_argument("--corpus", default=None, help="corpus name (default: review_injection / review_natural)")
    p.add_argument("--split", default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-review-chars", type=int, default=MAX_REVIEW_CHARS,
                   help=f"longest review text ingested (default {MAX_REVIEW_CHARS:,}); longer ones are load errors")
    p.add_argument("--copies", type=int, default=1, help="injected copies per review (default 1)")
    p.add_argument("--min-injections", type=int, default=1, help="fewest injections in an injected copy")
    p.add_argument("--max-injections", type=int, default=2, help="most injections in an injected copy")
    p.add_argument("--max-attempts", type=int, default=8, help="attempts per injection before giving it up")
    p.add_argument("--anchors", default=None, help="comma-separated anchors to inject (default: all nine)")
    p.add_argument("--taxonomy", type=Path, default=TAXONOMY_PATH, help="taxonomy TOML (default: bundled HalluPeer)")
    p.add_argument("--taxonomy-extra", type=Path, action="append", default=[], help="TOML adding nodes (repeatable)")
    p.add_argument("--model", default=None, help="gateway model for the LLM injector (none: rule injectors only)")
    p.add_argument("--api-base", default=None, help="OpenAI-compatible server for --model")
    p.add_argument("--api-key-env", default=None, help="environment variable holding the API key")
    p.add_argument("--cache-dir", default=None, help="response cache folder (replayable LLM runs)")
    p.add_argument("--llm-check", action="store_true", help="LLM feasibility check before each LLM injection")
    p.add_argument("--llm-verify", action="store_true", help="LLM equivalence judge after the rule check")
    p.add_argument("--llm-aspects", action="store_true", help="aspect tags from the LLM instead of rules")
    p.add_argument("--meta-review-filter", action="store_true",
                   help="keep only reviews --model judges aligned with their meta-review, high confidence (HalluPeer "
                        "Filter_M; reviews of papers without a meta-review are kept and counted)")
    p.add_argument("--meta-review-confidence", default="high",
                   help="comma-separated confidences kept by --meta-review-filter (high, medium, low; default high)")
    p.add_argument("--validity-labels", type=Path, default=None,
                   help="JSONL of hand labels (valid/invalid per injection): report the validity per anchor")
    p.add_argument("--no-grounding", action="store_true",
                   help="let rule anchors edit values the paper does not state (default: grounded only)")
    p.add_argument("--llm-all-anchors", action="store_true",
                   help="with --model, let the LLM inject Number/Temporal/Entity too (default: their rule injectors)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    taxonomy = load_review_taxonomy(args.taxonomy, args.taxonomy_extra)
    if args.meta_review_filter and not args.model:
        print("--meta-review-filter needs --model (the LLM that judges alignment)", file=sys.stderr)
        return 2
    labels = load_validity_labels(args.validity_labels) if args.validity_labels else None  # bad file: fail before building
    sources, errors, warnings, non_utf8_lines = [], [], [], 0
    meta_reviews: dict[str, str] = {}
    for path in args.inputs:
        result = load_reviews(path, args.format, max_review_chars=args.max_review_chars)
        sources += result.reviews
        meta_reviews |= result.meta_reviews
        errors += result.errors
        warnings += result.warnings
        non_utf8_lines += result.non_utf8_lines
    gateway = None
    if args.model:
        from clients.llm_gateway import LLMGateway

        gateway = LLMGateway(args.model, api_base=args.api_base, api_key_env=args.api_key_env, cache_dir=args.cache_dir)
        if args.llm_aspects:
            sources = asyncio.run(retag_aspects(sources, LLMAspectTagger(gateway, {"seed": args.seed})))
    loaded = len(sources)
    meta_counts = None
    if args.meta_review_filter:
        keep = tuple(c.strip() for c in args.meta_review_confidence.split(",") if c.strip())
        sources, meta_counts = asyncio.run(MetaReviewFilter(gateway, {"seed": args.seed}, keep).filter(sources, meta_reviews))
        print(f"meta-review filter: {meta_counts.kept} aligned kept, {meta_counts.no_meta_review} without a meta-review "
              f"kept, {meta_counts.not_aligned} not aligned, {meta_counts.low_confidence} below {'/'.join(keep)} "
              f"confidence, {meta_counts.unjudged} unjudged (of {loaded})")  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict = {"inputs": [str(p) for p in args.inputs], "track": args.track, "reviews": len(sources),
                    "reviews_loaded": loaded, "meta_reviews": len(meta_reviews),
                    "meta_review_filter": None if meta_counts is None else asdict(meta_counts),
                    "load_errors": [str(e) for e in errors], "warnings": warnings, "non_utf8_lines": non_utf8_lines,
                    "taxonomy": {"name": taxonomy.name, "version": taxonomy.version, "files": list(taxonomy.sources)}}  # fmt: skip
    if args.track == "natural":
        name = args.corpus or "review_natural"
        copies, truths = [s.copy for s in sources], [s.truth for s in sources]
        report.update(corpus=name, copies=len(copies))
    else:
        params = {"seed": args.seed}
        config = BuildConfig(seed=args.seed, injected_copies=args.copies,
                             injections_per_copy=(args.min_injections, args.max_injections),
                             max_attempts=args.max_attempts,
                             anchors=tuple(a.strip() for a in args.anchors.split(",")) if args.anchors else None,
                             prefer_rules=not (args.model and args.llm_all_anchors), llm_model=args.model,
                             require_grounding=not args.no_grounding)  # fmt: skip
        builder = ReviewInjectionBuilder(
            taxonomy, config,
            llm_injector=LLMInjector(gateway, params) if gateway else None,
            feasibility=LLMFeasibilityCheck(gateway, params) if gateway and args.llm_check else None,
            verifier=EquivalenceVerifier(gateway if args.llm_verify else None, params),
        )  # fmt: skip
        corpus = builder.build(sources, args.corpus or "review_injection")
        name, copies, truths = corpus.name, corpus.copies, corpus.truths
        report.update(corpus=name, version=corpus.version, config=asdict(config), copies=len(copies),
                      counts=corpus.counts.as_dict(), skipped=corpus.skipped,
                      unavailable_anchors=list(corpus.unavailable_anchors),
                      equivalence=asdict(builder.verifier.stats))  # fmt: skip
        if builder.llm is not None:
            report["llm_injector"] = asdict(builder.llm.stats)
        if builder.feasibility is not None:
            report["feasibility"] = asdict(builder.feasibility.stats)
    if labels is not None:
        report["validity"] = {"labels": str(args.validity_labels), **validity_by_anchor(truths, labels)}
    write_jsonl(copies, truths, args.out / "items.jsonl", args.out / "truth.jsonl", name, args.split)
    items, truth = corpus_tables(copies, truths, name, args.split)
    pq.write_table(items, args.out / "items.parquet")
    pq.write_table(truth, args.out / "truth.parquet")
    (args.out / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    kept = sum(len(t.injections) for t in truths)
    print(f"{name}: {len(sources)} reviews -> {len(copies)} copies, {kept} injections, "
          f"{len(errors)} load errors, {non_utf8_lines} lines not UTF-8 -> {args.out}")  # fmt: skip
    if lost := [s for s in report.get("skipped", ()) if s.get("error")]:
        print(f"  {len(lost)} injected copies lost to an error (report.json: skipped), first: "
              f"{lost[0]['review_id']}: {lost[0]['reason']}", file=sys.stderr)  # fmt: skip
    if labels is not None:
        for anchor, row in report["validity"]["per_anchor"].items():
            share = "-" if row["valid_share"] is None else f"{row['valid_share']:.1%}"
            print(f"  hand-checked validity {anchor}: {row['valid']}/{row['labelled']} valid ({share}), "
                  f"{row['injections'] - row['labelled']} of {row['injections']} unlabelled")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

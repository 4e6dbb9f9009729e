"""Time the seeded citation-corpus generator and the CiteIntegrity suite builder (public entry points only).

Fixed configurations, one row each: the bundled sample (81 typed-in references, 50 + 50 entries),
a 481-entry corpus from the same references, 1,000 and 2,000 entries from the VALID records of
HALLMARK dev_public (the 12 types that need no arXiv preprint), and the CiteIntegrity suite of
the bundled references. Every row includes the construction audits.

    python bench/bench_corpus_generator.py [--hallmark ../shared/data/hallmark]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corpora.citations.audit import audit_corpus  # noqa: E402
from corpora.citations.citeintegrity_suite import audit_suite, build_suite  # noqa: E402
from corpora.citations.generator import CorpusConfig, generate_corpus  # noqa: E402
from corpora.citations.real_reference import load_references, references_from_hallmark  # noqa: E402
from corpora.citations.taxonomy import hallmark_taxonomy  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hallmark", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/hallmark")
    args = ap.parse_args()
    tax = hallmark_taxonomy()
    bundled = load_references()
    no_preprint = tuple(t for t in tax.names if t not in ("preprint_as_published", "arxiv_version_mismatch"))
    configs = [
        ("bundled", bundled, CorpusConfig()),
        ("bundled", bundled, CorpusConfig(seed=9, n_valid=81, n_hallucinated=400, types=tuple(t for t in tax.names if t != "preprint_as_published"))),
    ]
    dev = args.hallmark / "dev_public.jsonl"
    if dev.exists():
        hallmark_refs = references_from_hallmark(dev)
        configs += [
            ("hallmark_dev_valid", hallmark_refs, CorpusConfig(seed=1, n_valid=400, n_hallucinated=600, types=no_preprint)),
            ("hallmark_dev_valid", hallmark_refs, CorpusConfig(seed=1, n_valid=500, n_hallucinated=1500, types=no_preprint)),
        ]
    print("kind,references,source,entries,seconds,entries_per_s,audits_ok")
    for source, refs, config in configs:
        t0 = time.perf_counter()
        entries = generate_corpus(refs, config)
        ok = audit_corpus(entries, refs, tax).ok
        dt = time.perf_counter() - t0
        print(f"hallmark,{len(refs)},{source},{len(entries)},{dt:.3f},{len(entries) / dt:.0f},{ok}")
    t0 = time.perf_counter()
    suite = build_suite(bundled)
    ok = audit_suite(suite).ok
    dt = time.perf_counter() - t0
    print(f"citeintegrity,{len(bundled)},bundled,{len(suite.instances)},{dt:.3f},{len(suite.instances) / dt:.0f},{ok}")


if __name__ == "__main__":
    main()

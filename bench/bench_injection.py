"""Injection throughput: papers per hour per worker (one process, rule injectors, no LLM, no TeX).

Builds the paper-audit corpus (4 copies per paper) for every shared real paper, REPEATS times,
and prints one row: papers, copies, injections, wall and CPU seconds, papers/hour/worker (wall).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corpora.papers.audit_corpus import build_paper_audit_corpus  # noqa: E402

PAPERS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "papers"
REPEATS = 2


def main() -> None:
    dirs = [d for d in sorted(PAPERS.iterdir()) if d.is_dir()]
    started, cpu_started = time.perf_counter(), time.process_time()
    injections = copies = 0
    for seed in range(REPEATS):
        corpus = build_paper_audit_corpus(dirs, seed=seed, check_compile=False)
        copies += corpus.items.num_rows
        injections += sum(len(json.loads(r["extra_json"])["injections"]) for r in corpus.truth.to_pylist())
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    papers = len(dirs) * REPEATS
    print("config,papers,copies,injections,seconds,cpu_seconds,papers_per_hour_per_worker")
    print(f"rules_only,{papers},{copies},{injections},{elapsed:.2f},{cpu:.2f},{papers / elapsed * 3600:.0f}")


if __name__ == "__main__":
    main()

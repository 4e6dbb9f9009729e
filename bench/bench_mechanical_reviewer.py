"""Mechanical paper reviewer: throughput per worker and the rule injections it detects.

Builds the paper-audit corpus from the shared papers (rule injections only, no TeX compile,
seed 7), runs `paper_reviewer_mechanical` (one worker, one sandboxed checker process) over every
copy, then adjudicates with the mechanical quote match alone (`adjudicate_paper_run` with an
empty panel: an injection no flag quotes counts as missed here). Prints one row for throughput
and one row per (error type, severity) with the detected fraction; then, per mathematics injection, whether
it lies inside an extracted statement and what that check says; then per clean copy (no injection)
the statements checked, their outcomes, their kinds and every flag (each a false positive unless
the paper is wrong), and the clean-copy totals.

    python bench/bench_mechanical_reviewer.py [--papers N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adjudication.papers.adjudicate import PaperAdjudicationConfig, adjudicate_paper_run  # noqa: E402
from corpora.papers.audit_corpus import build_paper_audit_corpus  # noqa: E402
from storage.records import Item  # noqa: E402
from verifiers.registry import SystemSpec, build_system  # noqa: E402
from verifiers.reviewers.statements import extract_statements  # noqa: E402
from verifiers.system import RunContext  # noqa: E402

PAPERS = Path(__file__).resolve().parents[2] / "shared" / "data" / "papers"
SEED = 7


def reach_by_injection(items: list[Item], truth: list[dict]) -> None:
    """Which mathematics injections fall inside an extracted statement, and what its check said
    (in-process, no limits): the ceiling of what the mechanical reviewer can detect."""
    from checkers.registry import run_check

    by_id = {i.item_id: i for i in items}
    reach: Counter[str] = Counter()
    for row in truth:
        extra = json.loads(row["extra_json"])
        maths = [j for j in extra.get("injections", []) if j["error_type"] == "mathematics"]
        if not maths:
            continue
        item = by_id[row["item_id"]]
        statements = extract_statements(item.payload["files"], item.payload.get("main_file"))
        for j in maths:
            hits = [s for s in statements if any(q.file == j["file"] and q.start < j["end"] and q.end > j["start"]
                                                 for q in s.quotes)]  # fmt: skip
            if not hits:
                reach["not_in_a_checked_statement"] += 1
                continue
            result = run_check(hits[0].kind, hits[0].payload)
            reach[result.outcome] += 1
            print(f"  math_injection {row['item_id']} {j['subtype']} [{hits[0].kind}] -> {result.outcome}: "
                  f"{result.reason[:110]}")
    print("config=math_injections " + " ".join(f"{k}={v}" for k, v in sorted(reach.items())))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--papers", type=int, default=100)
    parser.add_argument("--papers-dir", type=Path, default=PAPERS, help="the shared papers (default %(default)s)")
    args = parser.parse_args()
    dirs = sorted(p for p in args.papers_dir.iterdir() if p.is_dir())[: args.papers]
    started = time.perf_counter()
    corpus = build_paper_audit_corpus(dirs, SEED, check_compile=False)
    build_s = time.perf_counter() - started
    items = [Item.from_row(r) for r in corpus.items.to_pylist()]
    system = build_system(SystemSpec("paper_reviewer_mechanical", {"workers": 1}))
    started = time.perf_counter()
    outputs = asyncio.run(system.run(items, RunContext("bench", "2026-05-05")))
    review_s = time.perf_counter() - started
    system.close()
    n_papers = len(dirs)
    print(f"config=mechanical_reviewer workers=1 papers={n_papers} copies={len(items)} review_s={review_s:.1f} "
          f"papers_per_hour_per_worker={n_papers / review_s * 3600:.0f} copies_per_hour_per_worker="
          f"{len(items) / review_s * 3600:.0f} corpus_build_s={build_s:.1f} "
          f"errors={sum(o.error is not None for o in outputs)}")
    rows = [o.to_row("bench", "mechanical", 0) for o in outputs]
    injected = {r["item_id"] for r in corpus.truth.to_pylist() if not json.loads(r["extra_json"])["clean"]}
    verdicts = adjudicate_paper_run(corpus.items, corpus.truth, [r for r in rows if r["item_id"] in injected],
                                    PaperAdjudicationConfig(panel=[]))
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for v in verdicts.to_pylist():
        d = json.loads(v["detail_json"])
        cells[(d["error_type"], d["severity"])][0] += v["outcome"] == "detected"
        cells[(d["error_type"], d["severity"])][1] += 1
    for (etype, sev), (hit, n) in sorted(cells.items()):
        print(f"config=detection type={etype} severity={sev} detected={hit} n={n} rate={hit / n:.2f}")
    total_hit, total_n = sum(c[0] for c in cells.values()), sum(c[1] for c in cells.values())
    print(f"config=detection type=all severity=all detected={total_hit} n={total_n} rate={total_hit / max(total_n, 1):.2f}")
    reach_by_injection(items, corpus.truth.to_pylist())
    clean = [o for o in outputs if o.item_id not in injected and o.detail]
    totals: Counter[str] = Counter()
    for o in clean:
        totals.update(o.detail["check_outcomes"])
        kinds = {k: sum(c.values()) for k, c in o.detail.get("outcomes_by_kind", {}).items()}
        print(f"config=clean_paper item={o.item_id} statements={o.detail['statements']} "
              + " ".join(f"{k}={v}" for k, v in sorted(o.detail["check_outcomes"].items()))
              + (" kinds=" + ",".join(f"{k}:{v}" for k, v in sorted(kinds.items())) if kinds else "")
              + f" flags={len(o.detail['flags'])}")
        for f in o.detail["flags"]:
            print(f"  clean_flag {f['location']} [{f['check']['kind']}] {f['quote'].strip()[:160]!r} "
                  f"-- {f['check']['result'].get('reason', '')[:160]}")
    print(f"config=clean_copies copies={len(clean)} statements={sum(o.detail['statements'] for o in clean)} "
          + " ".join(f"{k}={v}" for k, v in sorted(totals.items()))
          + f" flags={sum(len(o.detail['flags']) for o in clean)}")


if __name__ == "__main__":
    main()

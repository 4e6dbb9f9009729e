"""Source requests of a small field_match run with and without the run's shared services.

Runs `jobs/run_corpus.py` (2 Ray workers, crossref on the local bib server at its polite default,
300 rpm) twice per checkout: once on an empty cache, once again with fresh storage and the same
cache and snapshot. Prints, per run: requests the server received, the most it saw in any one
second, and the mean rate. `--before` points at a checkout without the shared services (e.g. the
main branch) to compare with.

    python bench/bench_run_services.py --items 40 --before /work/main
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.helpers.bib_server import start_bib_server  # noqa: E402
from tests.helpers.ray_cluster import start_head, stop_head  # noqa: E402

SAMPLE = REPO / "corpora" / "samples" / "citations_sample.jsonl"


def peak(stamps: list[float], window: float = 1.0) -> int:
    stamps = sorted(stamps)
    return max((sum(1 for t in stamps[i:] if t < s + window) for i, s in enumerate(stamps)), default=0)


def one(checkout: Path, work: Path, name: str, items: int, bib, env: dict) -> dict:  # noqa: ANN001
    corpus = work / "corpus.jsonl"
    corpus.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:items]))
    config = work / f"{name}.toml"
    config.write_text(
        f'bootstrap = 0\ntracking_uri = "none"\nshard_size = 5\nworkers = 2\nsnapshot = "2026-11-01"\n'
        f'[corpus]\npath = "{corpus}"\nname = "bench"\n[llm]\ncache_dir = "{work / (name + "-cache")}"\n'
        f'[[systems]]\nname = "field_match"\nargs = {{ sources = ["crossref"], client_options = '
        f'{{ base_urls = {{ crossref = "{bib.base_url("crossref")}" }} }} }}\n'
    )
    rows = {}
    for attempt in ("first", "repeat"):
        bib.reset_stats()
        done = subprocess.run([sys.executable, str(checkout / "jobs" / "run_corpus.py"), "--config", str(config),
                               "--storage", str(work / f"{name}-{attempt}")], cwd=work, env=env,
                              capture_output=True, text=True, timeout=900)  # fmt: skip
        stats = bib.stats["crossref"]
        span = (max(stats.stamps) - min(stats.stamps)) if len(stats.stamps) > 1 else 0.0
        rows[attempt] = {"exit": done.returncode, "requests": stats.requests, "peak_per_s": peak(stats.stamps),
                         "mean_per_s": round(stats.requests / span, 2) if span else None}  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--before", type=Path, help="checkout without the shared services, to compare")
    args = parser.parse_args()
    head = start_head()
    bib = start_bib_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            for name, checkout in [("before", args.before), ("after", REPO)]:
                if checkout is None:
                    continue
                for attempt, row in one(checkout, work, name, args.items, bib, head.env()).items():
                    print(f"{name:<7} {attempt:<7} {row}", flush=True)
    finally:
        bib.stop()
        stop_head(head)


if __name__ == "__main__":
    main()

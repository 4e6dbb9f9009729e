"""Time HALLMARK scoring with stratified bootstrap CIs (public entry points only).

Fixed configurations: the 1,119-entry dev_public split, Gemini 2.5 Pro's predictions,
conservative mode, 0 / 1,000 / 10,000 resamples, seed 42. One row per configuration.

    python bench/bench_scoring.py [--hallmark ../shared/data/hallmark]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scoring import score_citation_outputs  # noqa: E402
from scoring.citations.hallmark_jsonl import read_entries, read_predictions  # noqa: E402

RESAMPLES = (0, 1_000, 10_000)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hallmark", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/hallmark")
    args = ap.parse_args()
    truth = read_entries(args.hallmark / "dev_public.jsonl")
    outputs = read_predictions(
        args.hallmark / "per_entry_predictions/llm_openrouter_gemini_pro_dev_public.jsonl", system="gemini"
    ).outputs
    print("entries,resamples,eval_mode,seconds")
    for b in RESAMPLES:
        t0 = time.perf_counter()
        score_citation_outputs(truth, outputs, run_id="bench", system="gemini", bootstrap=b, seed=42)
        print(f"{truth.num_rows},{b},conservative,{time.perf_counter() - t0:.3f}")


if __name__ == "__main__":
    main()

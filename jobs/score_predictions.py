"""Score any tool's HALLMARK predictions against a split, HALLMARK's way (wiring only).

    python jobs/score_predictions.py --entries SPLIT.jsonl --predictions PREDS.jsonl \
        [--eval-mode conservative|aggressive|both] [--bootstrap N] [--seed 42] --out RESULT.json

Accepts HALLMARK Prediction JSONL (`bibtex_key`, `label`, `confidence`, ...) and per-entry dumps
(`pred_label` / `pred_confidence`); unknown keys and bad labels stop the run with file and line.
The logic lives in `scoring.citations.result_file`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scoring.citations.hallmark_jsonl import DEFAULT_EXTRA_PREFIXES, PredictionFileError  # noqa: E402
from scoring.citations.result_file import score_prediction_file, write_result_json  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", required=True, type=Path, help="HALLMARK split JSONL with ground truth")
    ap.add_argument("--predictions", required=True, type=Path, help="prediction JSONL (either format)")
    ap.add_argument("--eval-mode", default="conservative", choices=["conservative", "aggressive", "both"])
    ap.add_argument("--bootstrap", type=int, default=0, help="stratified bootstrap resamples (0: no CIs)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--tool-name", default=None, help="tool_name in the result (default: predictions file stem)")
    ap.add_argument(
        "--extra-prefix", action="append", default=None,
        help=f"accept per-entry keys with this tool prefix (default: {list(DEFAULT_EXTRA_PREFIXES)})",
    )
    ap.add_argument("--hallmark-keys-only", action="store_true",
                    help="write HALLMARK's result keys only (diffs key for key against a released result file)")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    if args.bootstrap < 0:
        ap.error("--bootstrap must be >= 0")
    try:
        _, result = score_prediction_file(
            args.entries, args.predictions, eval_mode=args.eval_mode, bootstrap=args.bootstrap, seed=args.seed,
            tool_name=args.tool_name, extra_prefixes=tuple(args.extra_prefix or DEFAULT_EXTRA_PREFIXES),
            hallmark_only=args.hallmark_keys_only,
        )
    except (PredictionFileError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    write_result_json(result, args.out)
    print(f"wrote {args.out}: DR {result['detection_rate']}, FPR {result['false_positive_rate']}, "
          f"F1 {result['f1_hallucination']}, scored {result.get('num_scored', '-')}/{result['num_entries']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

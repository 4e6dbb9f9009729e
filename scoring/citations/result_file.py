"""Score a HALLMARK prediction file against a split file and write HALLMARK's result JSON.

This is the logic behind `jobs/score_predictions.py`: the JSON's metric keys are HALLMARK's own,
so a maintainer can diff it with a released `baseline_results/*.json`. With eval mode "both" the
top level holds the conservative numbers and `"eval_modes"` holds both blocks. Every key of
HALLMARK's EvaluationResult is written, in its order (`scoring.citations.hallmark_result`), then ours;
`hallmark_only=True` (`jobs/score_predictions.py --hallmark-keys-only`) writes HALLMARK's keys
alone, so the file diffs key for key against a released result. Undefined numbers are written as
null (never NaN), except where HALLMARK writes 0.0 for a structurally undefined per-type rate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scoring.citations.hallmark_jsonl import DEFAULT_EXTRA_PREFIXES, read_entries, read_predictions
from scoring.citations.hallmark_result import hallmark_extras, hallmark_view, with_hallmark_keys
from scoring.citations.score import CitationScore, score_citation_outputs
from storage.result_json import write_result_json as write_json_file


def split_name_of(path: Path) -> str:
    return path.name.removesuffix(".jsonl")


def score_prediction_file(
    entries_path: str | Path,
    predictions_path: str | Path,
    *,
    eval_mode: str = "conservative",
    bootstrap: int = 0,
    seed: int = 42,
    tool_name: str | None = None,
    extra_prefixes: tuple[str, ...] = DEFAULT_EXTRA_PREFIXES,
    hallmark_only: bool = False,
) -> tuple[CitationScore, dict[str, Any]]:
    """Score `predictions_path` against `entries_path`; return the score and the result dict."""
    entries_path, predictions_path = Path(entries_path), Path(predictions_path)
    split = split_name_of(entries_path)
    tool = tool_name or predictions_path.name.removesuffix(".jsonl").removesuffix(f"_{split}")
    truth = read_entries(entries_path)
    preds = read_predictions(predictions_path, system=tool, extra_prefixes=extra_prefixes)
    score = score_citation_outputs(
        truth, preds.outputs, run_id=f"{tool}@{split}", system=tool, eval_mode=eval_mode,
        bootstrap=bootstrap, seed=seed,
    )
    truth_labels = dict(zip(truth.column("item_id").to_pylist(), truth.column("label").to_pylist(), strict=True))
    n_pred = preds.outputs.num_rows
    extra = {
        **hallmark_extras(truth, preds.outputs, split_name=split, api_calls_known=preds.api_calls_known),
        "predictions_file": str(predictions_path),
        "prediction_format": preds.format,
        "num_gold_label_mismatches": sum(1 for k, g in preds.gold_labels.items() if truth_labels.get(k, g) != g),
    }
    if n_pred == 0:
        extra["mean_api_calls"] = None
    result = with_hallmark_keys(score.summary, extra)
    if hallmark_only:
        return score, hallmark_view(result, btu_status=preds.btu_status, source=str(predictions_path))
    if preds.btu_status is not None:
        result["_btu_status_histogram"] = preds.btu_status
    if len(score.modes) > 1:
        result["eval_modes"] = {m: with_hallmark_keys(s, extra) for m, s in score.summaries.items()}
    return score, result


def write_result_json(result: dict[str, Any], out: str | Path) -> Path:
    """Write `result` as indented JSON (NaN -> null) through a temporary file and a rename."""
    return write_json_file(out, result)

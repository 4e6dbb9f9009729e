"""Score a HALLMARK prediction file against a split file and write HALLMARK's result JSON.

This is the logic behind `jobs/score_predictions.py`: the JSON's metric keys are HALLMARK's own,
so a maintainer can diff it with a released `baseline_results/*.json`. With eval mode "both" the
top level holds the conservative numbers and `"eval_modes"` holds both blocks. Undefined numbers
are written as null (never NaN, never a made-up 0.0).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scoring.citation_score import CitationScore, score_citation_outputs
from scoring.hallmark_jsonl import DEFAULT_EXTRA_PREFIXES, read_entries, read_predictions
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
        "split_name": split,
        "predictions_file": str(predictions_path),
        "prediction_format": preds.format,
        "mean_api_calls": preds.total_api_calls / n_pred if n_pred and preds.total_api_calls is not None else None,
        "cost_efficiency": n_pred / preds.total_wall_clock_seconds if preds.total_wall_clock_seconds > 0 else None,
        "num_gold_label_mismatches": sum(1 for k, g in preds.gold_labels.items() if truth_labels.get(k, g) != g),
    }
    result = _with(score.summary, extra)
    if len(score.modes) > 1:
        result["eval_modes"] = {m: _with(s, extra) for m, s in score.summaries.items()}
    return score, result


def _with(summary: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(summary)
    out.update(extra)
    return out


def write_result_json(result: dict[str, Any], out: str | Path) -> Path:
    """Write `result` as indented JSON (NaN -> null) through a temporary file and a rename."""
    return write_json_file(out, result)

"""The review audit's report: Markdown + HTML tables and PNG figures, from METRIC_SCHEMA rows alone.

Figures (matplotlib, Agg): `type_f1_heatmap` (systems x types: Task 2's per-anchor F1 on the
injected track, per-error-type segment F1 on the natural track; an undefined cell is blank and
says n/a) and `level_bars` (review- vs sentence-level F1 per system on the injected track; segment
F1 overall and per LLM reviewer on the natural track). Every number the text shows is a row of
`review_metrics.csv`, written beside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from scoring.report_context import ReportContext  # noqa: E402
from scoring.report_pages import Figure, ReportPage, Section, with_interval, write_metrics_csv, write_page  # noqa: E402
from scoring.reviews.review_score import MISS_METRICS, MISS_SUFFIX  # noqa: E402

Rows = Sequence[dict]

INJECTED_HEADLINE = ("review_f1", "review_mcc", "sentence_f1", "sentence_mcc", "type_macro_f1", "token_f1",
                     "exact_span_f1", "overlap_span_f1")  # fmt: skip
AS_MISS = MISS_METRICS
NATURAL_HEADLINE = ("segment_precision", "segment_recall", "segment_f1", "segment_mcc")


LABELS = {"review_f1": "review-level F1", "review_mcc": "review-level MCC", "sentence_f1": "sentence-level F1",
          "sentence_mcc": "sentence-level MCC", "type_macro_f1": "type macro-F1", "type_micro_f1": "type micro-F1",
          "type_f1": "type F1", "token_f1": "token F1", "exact_span_f1": "exact-span F1",
          "type_macro_f1_gold": "type macro-F1 (gold labels)", "type_oracle_macro_f1": "oracle type macro-F1",
          "type_oracle_micro_f1": "oracle type micro-F1", "type_oracle_macro_f1_gold": "oracle type macro-F1 (gold labels)",
          "type_oracle_f1": "oracle type F1", "lc_token_f1": "label-conditioned token F1",
          "lc_exact_span_f1": "label-conditioned exact-span F1", "lc_overlap_span_f1": "label-conditioned overlapping-span F1",
          "review_recall": "review-level recall", "sentence_recall": "sentence-level recall",
          "overlap_span_f1": "overlapping-span F1", "segment_precision": "segment precision",
          "segment_recall": "segment recall", "segment_f1": "segment F1", "segment_mcc": "segment MCC"}
LABELS |= {m + MISS_SUFFIX: f"{LABELS.get(m, m)}, unanswered as miss" for m in AS_MISS}
"""Readable column names for the metric keys of review_metrics.csv."""

GLOSSARY = (
    ("review-level F1 / MCC", "does the detector flag a review that holds an injected hallucination (F1 on the "
                              "hallucinated class; MCC: -1 to 1, 0 = chance)."),
    ("sentence-level F1 / MCC", "the same per sentence: is the flagged sentence one that holds an injection."),
    ("type macro-F1 / micro-F1", "Task 2 end to end: on gold-hallucinated sentences, the anchor type the detector "
                                 "gave the ones it flagged (an unflagged one is a miss); macro averages the types "
                                 "gold or predicted equally, micro pools the sentences."),
    ("type macro-F1 (gold labels)", "macro-F1 averaged over the types present in the truth only."),
    ("oracle type macro-F1 / micro-F1", "Task 2 as the paper sets it (fig. 20): every gold-hallucinated sentence "
                                        "typed by the detector told it is hallucinated; detection does not enter."),
    ("type F1", "F1 of one anchor type (n/a: the type was neither in the truth nor said)."),
    ("token F1", "Task 3: overlap of flagged tokens with the injected span's tokens."),
    ("exact-span F1 / overlapping-span F1", "a flagged span counts when it equals / overlaps an injected span; "
                                            "one-to-one maximum matching, no injected span counted twice."),
    ("label-conditioned", "Task 3 as the paper sets it (fig. 21): asked for each type the review holds, the span "
                          "the detector marks; matched against that type's injected spans."),
    ("as miss", "the same figure with every review the detector failed on (error, parse failure, no output) "
                "counted as 'said nothing', beside the figure that leaves them out."),
    ("segment precision / recall / F1 / MCC", "ReviewCritique track: a segment an expert marked deficient is a "
                                              "positive; the detector's flagged segments against them."),
    ("95% CI", "paper-level bootstrap interval (papers resampled, not sentences)."),
    ("AUDIT INVALID", "a control decides the figure: review_null scores above zero, or review_flag_all (flags, "
                      "types and quotes everything) reaches a detector's figure within its 95% interval; that "
                      "figure says nothing about the detector."),
)
_CAPTIONS = {"type_f1_heatmap.png": "F1 per type", "level_f1_bars.png": "F1 per level (or per LLM reviewer)"}


def _stratum_label(stratum: str) -> str:
    return stratum.split("=", 1)[-1]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def _cell(row: dict | None) -> str:
    """Value [95% CI], marked when its n is too small for the interval to mean much."""
    if row is None:
        return "n/a"
    return with_interval(row["value"], row.get("ci_low"), row.get("ci_high"), row.get("n"), ci_digits=2)


def _systems(rows: Rows) -> list[str]:
    return list(dict.fromkeys(r["system"] for r in rows))


def _index(rows: Rows) -> dict[tuple[str, str, str], dict]:
    return {(r["system"], r["metric"], r["stratum"]): r for r in rows}


def _strata(rows: Rows, prefix: str) -> list[str]:
    return sorted({r["stratum"] for r in rows if r["stratum"].startswith(prefix)})


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def type_f1_heatmap(rows: Rows, path: Path, *, track: str) -> Path:
    """Per-type F1, one row per system, one column per type (NaN cells: type neither gold nor said)."""
    metric, prefix = ("type_f1", "type=") if track == "injected" else ("segment_f1", "error_type=")
    systems, strata = _systems(rows), _strata(rows, prefix)
    idx = _index(rows)
    grid = np.array([[idx.get((s, metric, t), {}).get("value", math.nan) for t in strata] for s in systems], dtype=float)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(strata) + 2), max(2.0, 0.5 * len(systems) + 1.5)))
    if grid.size == 0:
        ax.set_title(f"{metric} per type: nothing to show")
        ax.axis("off")
        return _save(fig, path)
    ax.imshow(np.ma.masked_invalid(grid), vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(strata)), [t.removeprefix(prefix) for t in strata], rotation=45, ha="right")
    ax.set_yticks(range(len(systems)), systems)
    for i in range(len(systems)):
        for j in range(len(strata)):
            v = grid[i, j]
            ax.text(j, i, "n/a" if math.isnan(v) else f"{v:.2f}", ha="center", va="center",
                    color="white" if not math.isnan(v) and v < 0.5 else "black", fontsize=8)  # fmt: skip
    ax.set_title(f"{metric} per {'anchor' if track == 'injected' else 'error type'}")
    return _save(fig, path)


def level_bars(rows: Rows, path: Path, *, track: str) -> Path:
    """Injected: review- vs sentence-level F1 per system; natural: segment F1 overall and per reviewer."""
    idx = _index(rows)
    systems = _systems(rows)
    if track == "injected":
        groups = [("review_f1", "all", "review"), ("sentence_f1", "all", "sentence")]
    else:
        groups = [("segment_f1", "all", "all")] + [("segment_f1", s, s.removeprefix("reviewer="))
                                                    for s in _strata(rows, "reviewer=")]  # fmt: skip
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(systems) * len(groups) / 2 + 2), 3.5))
    width = 0.8 / max(1, len(groups))
    x = np.arange(len(systems))
    for k, (metric, stratum, label) in enumerate(groups):
        values, errs = [], [[], []]
        for s in systems:
            r = idx.get((s, metric, stratum))
            v = r["value"] if r and r["value"] is not None and not math.isnan(r["value"]) else math.nan
            values.append(0.0 if math.isnan(v) else v)
            lo = r.get("ci_low") if r else None
            hi = r.get("ci_high") if r else None
            ok = not math.isnan(v) and lo is not None and hi is not None and not (math.isnan(lo) or math.isnan(hi))
            errs[0].append(v - lo if ok else 0.0)
            errs[1].append(hi - v if ok else 0.0)
        ax.bar(x + (k - (len(groups) - 1) / 2) * width, values, width, yerr=errs, capsize=3, label=label)
    ax.set_xticks(x, systems, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("F1 (paper-bootstrap 95% interval)")
    ax.set_title("review- vs sentence-level F1" if track == "injected" else "segment F1 per LLM reviewer")
    ax.legend(fontsize=8)
    return _save(fig, path)


def _table(rows: Rows, metrics: Sequence[str], strata: Sequence[str] = ("all",)) -> tuple[list[str], list[list[str]]]:
    idx = _index(rows)
    head = ["system"] + [LABELS.get(m, m) if s == "all" else f"{LABELS.get(m, m)} ({_stratum_label(s)})"
                         for m in metrics for s in strata]  # fmt: skip
    body = [[s] + [_cell(idx.get((s, m, st))) for m in metrics for st in strata] for s in _systems(rows)]
    return head, body


def _sections(rows: Rows, track: str) -> list[tuple[str, str, tuple[list[str], list[list[str]]]]]:
    if track == "injected":
        return [
            ("Task 1: detection", "Review- and sentence-level detection of injected hallucinations "
             "(value [paper-bootstrap 95% interval]).", _table(rows, INJECTED_HEADLINE[:4])),
            ("Task 2: type classification, oracle setting (the paper's)", "Every gold-hallucinated sentence, typed "
             "by the detector told it is hallucinated (fig. 20): macro-F1 over types gold or predicted and over "
             "gold types only, micro-F1.",
             _table(rows, ["type_oracle_macro_f1", "type_oracle_macro_f1_gold", "type_oracle_micro_f1"])),
            ("Task 2: type classification, end to end", "On gold-hallucinated sentences, the type given to those "
             "the detector flagged (an unflagged one is a miss).",
             _table(rows, ["type_macro_f1", "type_macro_f1_gold", "type_micro_f1"])),
            ("Task 2 per anchor", "F1 of each anchor, oracle then end to end (n/a: neither gold nor said).",
             _table(rows, ["type_oracle_f1", "type_f1"], _strata(rows, "type="))),
            ("Task 3: localization", "Token F1 and exact / overlapping span F1 of the detection answer's spans "
             "against the injected spans.", _table(rows, ["token_f1", "exact_span_f1", "overlap_span_f1"])),
            ("Task 3: label-conditioned localization", "Asked for each type the review holds (fig. 21), the span "
             "marked, against that type's injected spans.",
             _table(rows, ["lc_token_f1", "lc_exact_span_f1", "lc_overlap_span_f1"])),
            ("Unanswered reviews counted as misses", "The headline figures again with every review the detector "
             "failed on counted as 'said nothing' (the tables above leave such reviews out of the denominator "
             "under `unanswered = \"exclude\"`).", _table(rows, [m + MISS_SUFFIX for m in AS_MISS])),
        ]  # fmt: skip
    return [
        ("Deficient-segment detection", "ReviewCritique track: every segment an expert marked deficient is a "
         "positive (value [paper-bootstrap 95% interval]).", _table(rows, NATURAL_HEADLINE)),
        ("Per LLM reviewer", "Segment F1 and recall of the reviews each LLM wrote.",
         _table(rows, ["segment_f1", "segment_recall"], _strata(rows, "reviewer="))),
        ("Per error type", "Recall of each error type's deficient segments (against the shared sound segments).",
         _table(rows, ["segment_recall"], _strata(rows, "error_type="))),
    ]  # fmt: skip


def write_review_report(out_dir: str | Path, rows: Rows, *, track: str, title: str = "Review audit",
                        intro: str = "", context: ReportContext | None = None,
                        warning: str | None = None) -> list[Path]:  # fmt: skip
    """Write review_report.md / .html, review_metrics.csv and the figures; return their paths.
    `warning`: the AUDIT INVALID reasons (scoring/reviews/validity.py), shown above everything."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = [type_f1_heatmap(rows, out / "type_f1_heatmap.png", track=track),
               level_bars(rows, out / "level_f1_bars.png", track=track)]  # fmt: skip
    page = ReportPage(title, context, intro, [Section(*x) for x in _sections(rows, track)], GLOSSARY,
                      [Figure(f, _CAPTIONS[f.name]) for f in figures], warning=warning)  # fmt: skip
    md_path, html_path = write_page(out, "review_report", page)
    names = ["run_id", "system", "metric", "stratum", "eval_mode", "value", "ci_low", "ci_high", "n"]
    csv_path = write_metrics_csv(out / "review_metrics.csv", rows, names)
    return [md_path, html_path, csv_path, *figures]


__all__ = ["level_bars", "type_f1_heatmap", "write_review_report"]

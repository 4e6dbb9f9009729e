"""A run's report a person reads: `write_run_report(out_dir, scores)`.

Writes into `out_dir`: `report.md` and `report.html` (leaderboard with CIs and counts of scored,
errored, unparsed (with the parse-failure rate), UNCERTAIN and missing entries; fold-ablation
table; the figures), the PNGs (`type_heatmap.png`, `tier_bars.png`, `ppv_prevalence.png`,
`risk_coverage.png`) and the tables as CSV and JSON (`leaderboard.*`, `per_type.csv`,
`per_tier.csv`, `ppv_sweep.csv`, `fold_ablation.*`, `mde.csv`). Everything is rebuilt from the `CitationScore`s alone. Returns
the written paths (log them as MLflow artifacts).
"""

from __future__ import annotations

import csv
import html
import json
import math
from pathlib import Path
from typing import Any

from scoring.citation_score import CitationScore
from scoring.detectable_effect import mde_table
from scoring.prevalence import DEFAULT_PREVALENCES, ppv_sweep
from scoring.report_figures import ppv_curves, risk_coverage_curves, tier_bars, type_heatmap
from scoring.risk_coverage import risk_coverage
from scoring.taxonomy_fold import fold_ablation

LEADER_METRICS = ("detection_rate", "false_positive_rate", "f1_hallucination", "tier_weighted_f1", "mcc", "ece",
                  "auroc")
SHORT = {"detection_rate": "DR", "false_positive_rate": "FPR", "f1_hallucination": "F1",
         "tier_weighted_f1": "TW-F1", "mcc": "MCC", "ece": "ECE", "auroc": "AUROC"}


def _fmt(x: Any, ci: tuple[float, float] | None = None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    s = f"{x:.3f}" if isinstance(x, float) else str(x)
    if ci is not None and not math.isnan(ci[0]):
        s += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return s


def _nan_none(x: Any) -> Any:
    return None if isinstance(x, float) and math.isnan(x) else x


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        if rows:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return path


def leaderboard_rows(scores: list[CitationScore]) -> list[dict[str, Any]]:
    """One row per system, sorted by MCC (undefined last)."""
    rows = []
    for s in scores:
        ms = s.modes[s.eval_mode]
        row: dict[str, Any] = {"system": s.system, "eval_mode": s.eval_mode}
        for k in LEADER_METRICS:
            row[k] = _nan_none(ms.point[k])
            lo, hi = ms.ci.get(k, (math.nan, math.nan))
            row[f"{k}_ci_low"], row[f"{k}_ci_high"] = _nan_none(lo), _nan_none(hi)
        row.update({k: s.counts[k] for k in ("num_entries", "num_errors", "num_parse_failures", "num_uncertain",
                                             "num_missing")})
        row["parse_failure_rate"] = _nan_none(s.counts["parse_failure_rate"])
        row["num_scored"] = ms.support["in_matrix"]
        row["coverage"] = s.counts["coverage"]
        row["fpr_at_90_coverage"] = _nan_none(risk_coverage(s.entries, s.eval_mode).at(0.9)["fpr"])
        rows.append(row)
    return sorted(rows, key=lambda r: -(r["mcc"] if r["mcc"] is not None else -math.inf))


def write_run_report(out_dir: Path, scores: list[CitationScore], *, title: str = "Citation verification run",
                     prevalences: tuple[float, ...] = DEFAULT_PREVALENCES) -> list[Path]:
    """Write the report for `scores` (one per system, same corpus) into `out_dir`; return the paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    board = leaderboard_rows(scores)
    paths.append(_write_csv(out_dir / "leaderboard.csv", board))
    (out_dir / "leaderboard.json").write_text(json.dumps(board, indent=2, allow_nan=False), encoding="utf-8")
    paths.append(out_dir / "leaderboard.json")

    per_type, per_tier, ppv_rows, mde_rows = [], [], [], []
    for s in scores:
        ms = s.modes[s.eval_mode]
        for t, c in ms.per_type.items():
            per_type.append({"system": s.system, "type": t, "n": c.num_hallucinated + c.num_valid,
                             "detection_rate": _nan_none(c.detection_rate),
                             "false_positive_rate": _nan_none(c.false_positive_rate)})
        for t, c in ms.per_tier.items():
            per_tier.append({"system": s.system, "tier": t, "num_hallucinated": c.num_hallucinated,
                             "detection_rate": _nan_none(c.detection_rate), "f1": _nan_none(c.f1),
                             "precision": _nan_none(c.precision)})
        for pi, v in ppv_sweep(ms.point["detection_rate"], ms.point["false_positive_rate"], prevalences).items():
            ppv_rows.append({"system": s.system, "prevalence": pi, "ppv": _nan_none(v)})
        mde_rows += [{"system": s.system, **{k: _nan_none(v) for k, v in r.items()}} for r in mde_table(ms.per_type)]
    for name, rows in (("per_type.csv", per_type), ("per_tier.csv", per_tier), ("ppv_sweep.csv", ppv_rows),
                       ("mde.csv", mde_rows)):
        paths.append(_write_csv(out_dir / name, rows))

    folds = fold_ablation({s.system: s.entries for s in scores}, eval_mode=scores[0].eval_mode) if scores else []
    fold_rows = [{"fold": f.fold, "kendall_tau": _nan_none(f.kendall_tau), "moved": f.moved,
                  "ranking": " > ".join(f.ranking), **{f"mcc[{k}]": _nan_none(v) for k, v in f.values.items()}}
                 for f in folds]
    paths.append(_write_csv(out_dir / "fold_ablation.csv", fold_rows))
    (out_dir / "fold_ablation.json").write_text(json.dumps(fold_rows, indent=2, allow_nan=False), encoding="utf-8")
    paths.append(out_dir / "fold_ablation.json")

    figs = []
    if scores:
        figs = [type_heatmap(scores, out_dir / "type_heatmap.png"), tier_bars(scores, out_dir / "tier_bars.png"),
                ppv_curves(scores, out_dir / "ppv_prevalence.png"),
                risk_coverage_curves(scores, out_dir / "risk_coverage.png")]
    paths += figs

    md = _markdown(title, scores, board, fold_rows, [p.name for p in figs])
    (out_dir / "report.md").write_text(md, encoding="utf-8")
    (out_dir / "report.html").write_text(_html(title, scores, board, fold_rows, [p.name for p in figs]),
                                         encoding="utf-8")
    return [out_dir / "report.md", out_dir / "report.html", *paths]


def _board_table(scores: list[CitationScore], board: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    by = {s.system: s for s in scores}
    head = ["system", *[SHORT[k] for k in LEADER_METRICS], "scored", "errors", "parse failures", "UNCERTAIN",
            "missing", "FPR@90%cov"]
    body = []
    for r in board:
        ms = by[r["system"]].modes[by[r["system"]].eval_mode]
        body.append([r["system"], *[_fmt(ms.point[k], ms.ci.get(k)) for k in LEADER_METRICS],
                     f"{r['num_scored']}/{r['num_entries']}", str(r["num_errors"]),
                     f"{r['num_parse_failures']} ({_fmt(r['parse_failure_rate'])})", str(r["num_uncertain"]),
                     str(r["num_missing"]), _fmt(r["fpr_at_90_coverage"])])
    return head, body


def _fold_table(fold_rows: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    head = ["fold", "Kendall tau vs as shipped", "systems moved", "ranking (by MCC)"]
    return head, [[r["fold"], _fmt(r["kendall_tau"]), str(r["moved"]), r["ranking"]] for r in fold_rows]


def _md_table(head: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def _intro(scores: list[CitationScore]) -> str:
    if not scores:
        return "No system was scored."
    s = scores[0]
    ci = f"{s.n_bootstrap} stratified bootstrap resamples, seed {s.seed}" if s.n_bootstrap else "no bootstrap"
    return (f"{s.counts['num_entries']} entries ({s.counts['num_hallucinated']} hallucinated, "
            f"{s.counts['num_valid']} valid); eval mode {s.eval_mode}; 95% CIs from {ci}.")


def _markdown(title, scores, board, fold_rows, figs) -> str:
    parts = [f"# {title}", "", _intro(scores), "", "## Leaderboard", "", _md_table(*_board_table(scores, board)),
             "", "## Taxonomy-fold ablation", "", _md_table(*_fold_table(fold_rows)), ""]
    captions = {"type_heatmap.png": "Detection rate by type", "tier_bars.png": "Detection rate by tier",
                "ppv_prevalence.png": "PPV vs prevalence", "risk_coverage.png": "Risk–coverage"}
    for f in figs:
        parts += [f"## {captions.get(f, f)}", "", f"![{captions.get(f, f)}]({f})", ""]
    return "\n".join(parts)


def _html_table(head: list[str], body: list[list[str]]) -> str:
    h = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{rows}</tbody></table>"


def _html(title, scores, board, fold_rows, figs) -> str:
    imgs = "".join(f'<figure><img src="{html.escape(f)}" alt="{html.escape(f)}"></figure>' for f in figs)
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}img{max-width:900px}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body><h1>{html.escape(title)}</h1><p>{html.escape(_intro(scores))}</p>"
            f"<h2>Leaderboard</h2>{_html_table(*_board_table(scores, board))}"
            f"<h2>Taxonomy-fold ablation</h2>{_html_table(*_fold_table(fold_rows))}{imgs}</body></html>\n")

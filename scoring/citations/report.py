"""A run's report a person reads: `write_run_report(out_dir, scores, context=...)`.

Writes into `out_dir`: `report.md` and `report.html` and the tables as CSV and JSON
(`leaderboard.*`, `said.csv`, `subtests.csv`, `per_type.csv`, `per_tier.csv`, `ppv_sweep.csv`,
`fold_ablation.*`, `mde.csv`, `pairwise.csv` and `ranking.csv` with two or more scored systems:
paired bootstrap CIs of their MCC differences with Holm and BH adjusted p-values, and a
Plackett–Luce ranking with bootstrap CIs, see `scoring.citations.system_comparisons`) and the PNGs (`type_heatmap.png`, `tier_bars.png`,
`ppv_prevalence.png`, `risk_coverage.png`; `said_bars.png` on an unlabelled corpus).
Everything is rebuilt from the `CitationScore`s and the `ReportContext` alone. Returns the
written paths (log them as MLflow artifacts).

`report.html` is one self-contained file (the PNGs are embedded as data URIs), so it renders in
MLflow's artifact viewer. It opens with the run's corpus, snapshot, code revision and
completeness (a run with a source outage says "scores withheld: source outage" there), puts each
system's coverage (share of items decided) next to DR and FPR, and ends with a glossary.

Three kinds of system row: scored; failed (every output errored: no metric, the first error
instead); and, on a corpus without labels, what the system said (label counts, UNCERTAIN,
errors, per-field diagnoses) with every metric "not applicable: no labels".
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from scoring.citations.metric_catalogue import CITATION_METRICS, leaderboard
from scoring.citations.report_figures import (
    ppv_curves,
    risk_coverage_curves,
    said_bars,
    tier_bars,
    type_heatmap,
)
from scoring.citations.risk_coverage import risk_coverage
from scoring.citations.score import NO_LABELS, CitationScore
from scoring.citations.system_comparisons import pairwise_rows, ranking_rows
from scoring.citations.taxonomy_fold import fold_ablation
from scoring.detectable_effect import mde_table
from scoring.prevalence import DEFAULT_PREVALENCES, ppv_sweep
from scoring.report_context import ReportContext
from scoring.report_pages import (
    Figure,
    ReportPage,
    Section,
    difference_text,
    p_value_text,
    with_interval,
    write_page,
)
from storage.result_json import result_json

WITHHELD = "withheld: source outage"
#: Glossary terms that are not metrics (the metrics' lines come from the catalogue).
_TERMS = (
    ("UNCERTAIN", "the system declined to decide; conservative mode leaves it out of DR/FPR, aggressive "
                  "mode counts it as HALLUCINATED."),
    ("coverage", "share of items with a definite VALID/HALLUCINATED verdict (not UNCERTAIN, not errored). "
                 "DR and FPR are computed on the covered items only: read them together."),
)


def leader_metrics() -> tuple[str, ...]:
    """The leaderboard's metric columns (catalogue entries with `leaderboard=True`), in order."""
    return tuple(d.name for d in leaderboard())


def short_label(metric: str) -> str:
    """A metric's column header (its catalogue label; the name for a metric not in it)."""
    entry = CITATION_METRICS.get(metric, None)
    return entry.label if entry is not None else metric


def glossary() -> tuple[tuple[str, str], ...]:
    """The report's glossary: each leaderboard metric's line, then the other terms."""
    return (*((d.label, d.glossary) for d in leaderboard() if d.glossary), *_TERMS)


_CAPTIONS = {"type_heatmap.png": "Detection rate by type", "tier_bars.png": "Detection rate by tier",
             "ppv_prevalence.png": "PPV vs prevalence", "risk_coverage.png": "Risk–coverage",
             "said_bars.png": "What each system said"}


def _fmt(x: Any, ci: tuple[float, float] | None = None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    s = f"{x:.3f}" if isinstance(x, float) else str(x)
    if ci is not None and not math.isnan(ci[0]):
        s += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return s


def _pct(x: Any) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1%}"


def _nan_none(x: Any) -> Any:
    return None if isinstance(x, float) and math.isnan(x) else x


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> list[Path]:
    """Write `rows` as CSV; no rows, no file (an empty file is not a table)."""
    if not rows:
        return []
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return [path]


def _write_json(path: Path, obj: Any) -> Path:
    path.write_text(result_json(obj), encoding="utf-8")
    return path


def row_state(s: CitationScore, context: ReportContext | None = None) -> str:
    """scored | failed | withheld | no labels: what a system's leaderboard row can show."""
    if s.failed:
        return "failed"
    status = context.status_of(s.system) if context else None
    if status is not None and status.withheld:
        return "withheld"
    return "scored" if s.labelled else "no labels"


def _coverage(s: CitationScore) -> float | None:
    """Share of items decided: over the labelled entries when there are labels, else over all outputs."""
    if s.labelled:
        return _nan_none(s.counts["decided_fraction"])
    return s.census.decided_share if s.census else None


def leaderboard_rows(scores: list[CitationScore], context: ReportContext | None = None) -> list[dict[str, Any]]:
    """One row per system: scored ones by MCC (undefined last), then withheld, unlabelled, failed."""
    rows = []
    for s in scores:
        ms = s.modes[s.eval_mode]
        state = row_state(s, context)
        shown = state == "scored"
        row: dict[str, Any] = {"system": s.system, "eval_mode": s.eval_mode, "state": state}
        for k in leader_metrics():
            row[k] = _nan_none(ms.point[k]) if shown else None
            lo, hi = ms.ci.get(k, (math.nan, math.nan)) if shown else (math.nan, math.nan)
            row[f"{k}_ci_low"], row[f"{k}_ci_high"] = _nan_none(lo), _nan_none(hi)
        row["decided_fraction"] = _coverage(s) if state != "failed" else 0.0
        row.update({k: s.counts[k] for k in ("num_entries", "num_errors", "num_parse_failures", "num_uncertain",
                                             "num_missing")})
        row["parse_failure_rate"] = _nan_none(s.counts["parse_failure_rate"])
        row["num_scored"] = ms.support["in_matrix"]
        row["coverage"] = _nan_none(s.counts["coverage"])
        row["fpr_at_90_coverage"] = _nan_none(risk_coverage(s.entries, s.eval_mode).at(0.9)["fpr"]) if shown else None
        census = s.census
        row.update({f"said_{k.lower()}": (census.labels.get(k, 0) if census else None)
                    for k in ("VALID", "HALLUCINATED", "UNCERTAIN")})  # fmt: skip
        row["num_outputs_errored"] = census.num_errors if census else None
        row["first_error"] = census.first_error if census and s.failed else None
        row["metrics_note"] = {"scored": None, "failed": "failed: every output errored", "withheld": WITHHELD,
                               "no labels": NO_LABELS}[state]  # fmt: skip
        rows.append(row)
    order = {"scored": 0, "withheld": 1, "no labels": 2, "failed": 3}
    return sorted(rows, key=lambda r: (order[r["state"]], -(r["mcc"] if r["mcc"] is not None else -math.inf)))


def write_run_report(out_dir: Path, scores: list[CitationScore], *, title: str = "Citation verification run",
                     prevalences: tuple[float, ...] = DEFAULT_PREVALENCES,
                     context: ReportContext | None = None) -> list[Path]:  # fmt: skip
    """Write the report for `scores` (one per system, same corpus) into `out_dir`; return the paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    board = leaderboard_rows(scores, context)
    paths += _write_csv(out_dir / "leaderboard.csv", board)
    paths.append(_write_json(out_dir / "leaderboard.json", board))
    # Metric tables and figures only for systems with numbers to show.
    plotted = [s for s in scores if row_state(s, context) == "scored"]

    said, subtests = _said_rows(scores), _subtest_rows(scores)
    paths += _write_csv(out_dir / "said.csv", said) + _write_csv(out_dir / "subtests.csv", subtests)
    per_type, per_tier, ppv_rows, mde_rows = [], [], [], []
    for s in plotted:
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
        paths += _write_csv(out_dir / name, rows)

    folds = fold_ablation({s.system: s.entries for s in plotted}, eval_mode=plotted[0].eval_mode) if plotted else []
    fold_rows = [{"fold": f.fold, "kendall_tau": _nan_none(f.kendall_tau), "moved": f.moved,
                  "ranking": " > ".join(f.ranking), **{f"mcc[{k}]": _nan_none(v) for k, v in f.values.items()}}
                 for f in folds]
    paths += _write_csv(out_dir / "fold_ablation.csv", fold_rows)
    paths.append(_write_json(out_dir / "fold_ablation.json", fold_rows))
    pairs, ranks = _comparison_rows(plotted)
    paths += _write_csv(out_dir / "pairwise.csv", pairs) + _write_csv(out_dir / "ranking.csv", ranks)

    figs = []
    if plotted:
        figs = [type_heatmap(plotted, out_dir / "type_heatmap.png"), tier_bars(plotted, out_dir / "tier_bars.png"),
                ppv_curves(plotted, out_dir / "ppv_prevalence.png"),
                risk_coverage_curves(plotted, out_dir / "risk_coverage.png")]
    elif any(s.census and s.census.num_outputs > s.census.num_errors for s in scores):
        figs = [said_bars([s.census for s in scores if s.census], out_dir / "said_bars.png")]
    paths += figs

    doc = _Document(title, scores, board, fold_rows, said, subtests, context)
    doc.pairs, doc.ranks = pairs, ranks
    md_path, html_path = write_page(out_dir, "report", doc.page(figs))
    return [md_path, html_path, *paths]


def _comparison_rows(plotted: list[CitationScore]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Pairwise tests (resamples: the run's bootstrap size; none without one) and the ranking."""
    if len(plotted) < 2:
        return [], []
    entries = {s.system: s.entries for s in plotted}
    n, seed = plotted[0].n_bootstrap, plotted[0].seed
    pairs = pairwise_rows(entries, eval_mode=plotted[0].eval_mode, n_resamples=n, seed=seed) if n else []
    return pairs, ranking_rows(entries, n_resamples=min(n, 200), seed=seed)


def _said_rows(scores: list[CitationScore]) -> list[dict[str, Any]]:
    rows = []
    for s in sorted(scores, key=lambda s: s.system):
        c = s.census
        if c is None:
            continue
        rows.append({"system": s.system, "items": c.num_items, "VALID": c.labels.get("VALID", 0),
                     "HALLUCINATED": c.labels.get("HALLUCINATED", 0), "UNCERTAIN": c.labels.get("UNCERTAIN", 0),
                     "errored": c.num_errors, "coverage": c.decided_share,
                     "errors_by_kind": "; ".join(f"{k}: {v}" for k, v in c.errors_by_kind.items()),
                     "predicted_types": "; ".join(f"{k}: {v}" for k, v in c.predicted_types.items()),
                     "first_error": c.first_error or ""})  # fmt: skip
    return rows


def _subtest_rows(scores: list[CitationScore]) -> list[dict[str, Any]]:
    return [{"system": s.system, "check": name, "pass": n.get("pass", 0), "fail": n.get("fail", 0),
             "not checked": n.get("not checked", 0)}
            for s in sorted(scores, key=lambda s: s.system) if s.census
            for name, n in s.census.subtests.items()]  # fmt: skip


def _intro(scores: list[CitationScore]) -> str:
    if not scores:
        return "No system was scored."
    s = scores[0]
    if not any(x.labelled for x in scores):
        n = max((x.census.num_items for x in scores if x.census), default=0)
        return (f"{n} items without truth labels, so no metric applies (DR, FPR, F1, MCC, ...: {NO_LABELS}). "
                "The tables say what each system said: labels, UNCERTAIN, errors, per-field checks.")
    ci = f"{s.n_bootstrap} stratified bootstrap resamples, seed {s.seed}" if s.n_bootstrap else "no bootstrap"
    return (f"{s.counts['num_entries']} entries ({s.counts['num_hallucinated']} hallucinated, "
            f"{s.counts['num_valid']} valid); eval mode {s.eval_mode}; 95% CIs from {ci}.")


class _Document:
    """The report's tables and notes, handed to the one page writer."""

    def __init__(self, title, scores, board, fold_rows, said, subtests, context: ReportContext | None) -> None:
        self.title, self.scores, self.board, self.fold_rows = title, scores, board, fold_rows
        self.said, self.subtests, self.context = said, subtests, context
        self.labelled = any(s.labelled for s in scores)
        self.pairs: list[dict[str, Any]] = []
        self.ranks: list[dict[str, Any]] = []

    def board_table(self) -> tuple[list[str], list[list[str]]]:
        by = {s.system: s for s in self.scores}
        metrics = [short_label(k) for k in leader_metrics()]
        head = ["system", metrics[0], metrics[1], "coverage", *metrics[2:], "scored", "errors", "parse failures",
                "UNCERTAIN", "missing", "FPR@90%cov"]  # fmt: skip
        body = []
        for r in self.board:
            s = by[r["system"]]
            ms = s.modes[s.eval_mode]
            if r["state"] == "scored":
                cells = [with_interval(_nan_none(ms.point[k]), *(ms.ci.get(k) or (None, None)), r["num_scored"])
                         for k in leader_metrics()]  # fmt: skip
            else:
                cells = [r["metrics_note"] if r["state"] != "failed" else "FAILED"] + ["n/a"] * (len(leader_metrics()) - 1)
            body.append([r["system"], cells[0], cells[1], _pct(r["decided_fraction"]), *cells[2:],
                         f"{r['num_scored']}/{r['num_entries']}", str(r["num_errors"]),
                         f"{r['num_parse_failures']} ({_fmt(r['parse_failure_rate'])})", str(r["num_uncertain"]),
                         str(r["num_missing"]), _fmt(r["fpr_at_90_coverage"])])  # fmt: skip
        return head, body

    def said_table(self) -> tuple[list[str], list[list[str]]]:
        head = ["system", "items", "VALID", "HALLUCINATED", "UNCERTAIN", "errored", "coverage", "errors by kind",
                "predicted types"]  # fmt: skip
        return head, [[r["system"], str(r["items"]), str(r["VALID"]), str(r["HALLUCINATED"]), str(r["UNCERTAIN"]),
                       str(r["errored"]), _pct(r["coverage"]), r["errors_by_kind"] or "-", r["predicted_types"] or "-"]
                      for r in self.said]  # fmt: skip

    def subtest_table(self) -> tuple[list[str], list[list[str]]]:
        head = ["system", "check", "pass", "fail", "not checked"]
        return head, [[r["system"], r["check"], str(r["pass"]), str(r["fail"]), str(r["not checked"])]
                      for r in self.subtests]  # fmt: skip

    def failed_lines(self) -> list[str]:
        return [f"{r['system']}: FAILED: every output errored, not scored. First error: {r['first_error']}"
                for r in self.board if r["state"] == "failed"]  # fmt: skip

    def fold_table(self) -> tuple[list[str], list[list[str]]]:
        head = ["fold", "Kendall tau vs as shipped", "systems moved", "ranking (by MCC)"]
        return head, [[r["fold"], _fmt(r["kendall_tau"]), str(r["moved"]), r["ranking"]] for r in self.fold_rows]

    def pair_table(self) -> tuple[list[str], list[list[str]]]:
        head = ["A", "B", f"{short_label(self.pairs[0]['metric'])} A - B", "95% CI", "p",
                "p (Holm)", "q (BH)"]  # fmt: skip
        return head, [[r["system_a"], r["system_b"], *difference_text(r["diff"], r["ci_low"], r["ci_high"]),
                       p_value_text(r["p"]), p_value_text(r["p_holm"]), p_value_text(r["p_bh"])]
                      for r in self.pairs]  # fmt: skip

    def rank_table(self) -> tuple[list[str], list[list[str]]]:
        head = ["rank", "system", "strength", "95% CI", "rank 95% CI"]
        return head, [[str(r["rank"]), r["system"], _fmt(r["strength"]),
                       f"[{_fmt(r['strength_ci_low'])}, {_fmt(r['strength_ci_high'])}]" if r["strength_ci_low"]
                       is not None else "n/a", f"{r['rank_ci_low']}-{r['rank_ci_high']}" if r["rank_ci_low"]
                       is not None else "n/a"] for r in self.ranks]  # fmt: skip

    def page(self, figs: list[Path]) -> ReportPage:
        """The report as one page for the shared writer (scoring/report_pages.py)."""
        sections: list[Section] = []
        if self.failed_lines():
            sections.append(Section("Failed systems", lines=self.failed_lines(), alert=True))
        if self.labelled:
            sections.append(Section("Leaderboard", "Value [95% CI]; coverage is the share of items decided.",
                                    self.board_table()))  # fmt: skip
        sections.append(Section("What the systems said", table=self.said_table()))
        if self.subtests:
            sections.append(Section("Per-field checks", table=self.subtest_table()))
        if self.labelled and self.fold_rows:
            sections.append(Section("Taxonomy-fold ablation", table=self.fold_table()))
        if self.labelled and self.pairs:
            sections.append(Section("Paired comparisons between systems", table=self.pair_table()))
        if self.labelled and self.ranks:
            sections.append(Section("Ranking (Plackett–Luce on per-entry correctness)", table=self.rank_table()))
        figures = [Figure(f, _CAPTIONS.get(f.name, f.name)) for f in figs]
        return ReportPage(self.title, self.context, _intro(self.scores), sections, glossary(), figures)

"""Score one system's outputs on a labelled citation corpus: `score_citation_outputs`.

The result, `CitationScore`, keeps the aligned entries (so plots and paired tests can reuse
them), one `ModeScore` per eval mode, and renders two views of the same numbers:

- `summary` / `summaries`: HALLMARK's own result keys (`detection_rate`, `false_positive_rate`,
  `f1_hallucination`, `tier_weighted_f1`, `mcc`, `macro_f1`, `ece`, `auroc`, `auprc`,
  `tier3_f1`, `coverage`, `num_uncertain`, `per_tier_metrics`, `per_type_metrics`, `*_ci`),
  plus our counts (`num_scored`, `num_errors`, `num_parse_failures`, `parse_failure_rate`,
  `errors_by_kind`, `num_missing`, ...). Undefined numbers are None.
- `metric_rows()`: METRIC_SCHEMA rows (strata "all", "tier=1", "type=fabricated_doi", ...),
  NaN with n = 0 for empty strata.

Errored outputs are counted by kind. A parse failure is scored as UNCERTAIN@0.5 (HALLMARK's
harness fallback): `num_uncertain` includes it, `num_parse_failures` / `parse_failure_rate` count
it apart, and it is never a VALID verdict. Every other error is a missing prediction, counted in
`num_errors`; `errors_by_kind` breaks down all errored outputs (parse included) by `error_kind`.

`coverage` follows the released aggregates: the fraction of entries that got a non-errored
prediction (UNCERTAIN included; Gemini 2.5 Pro's file says 1.0). `decided_fraction` is the
fraction with a definite VALID/HALLUCINATED label (the paper's Cov. column, 0.967 there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from scoring.bootstrap import bootstrap_samples, percentile_interval, strata_of
from scoring.citations.breakdown import stratum_counts, tier_strata, type_strata
from scoring.citations.entry_table import EVAL_MODES, MISSING, UNCERTAIN, EntryTable
from scoring.citations.metric_catalogue import CITATION_METRICS, added, ci_keys, row_metrics, summary_metrics
from scoring.citations.metrics import metric_batch, point_metrics
from scoring.output_census import OutputCensus, census_of
from scoring.proportion_interval import wilson_interval

#: Why a number is null in a summary (`null_reasons`): no labels at all, or an empty denominator
#: (each metric's reason is its catalogue entry's `undefined`).
NO_LABELS = "not applicable: no labels"


def _clean(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


@dataclass
class ModeScore:
    """Everything scored under one eval mode."""

    eval_mode: str
    point: dict[str, float]
    ci: dict[str, tuple[float, float]]
    support: dict[str, int]
    per_tier: dict[int, Any]
    per_type: dict[str, Any]
    bootstrap: dict[str, np.ndarray] = field(default_factory=dict, repr=False)


@dataclass
class CitationScore:
    """One system's scores on one corpus (see module docstring)."""

    run_id: str
    system: str
    entries: EntryTable
    modes: dict[str, ModeScore]
    counts: dict[str, int]
    n_bootstrap: int = 0
    seed: int = 42
    census: OutputCensus | None = None

    @property
    def labelled(self) -> bool:
        """Whether any entry had a truth label (without one, no metric applies)."""
        return self.counts["num_entries"] > 0

    @property
    def failed(self) -> bool:
        """Every output errored (or none came): the system is reported as failed, never scored."""
        return self.census is not None and self.census.failed

    @property
    def eval_mode(self) -> str:
        return next(iter(self.modes))

    @property
    def summary(self) -> dict[str, Any]:
        """HALLMARK-keyed summary of the first (primary) eval mode."""
        return self.summaries[self.eval_mode]

    @property
    def summaries(self) -> dict[str, dict[str, Any]]:
        return {m: self._summary(m) for m in self.modes}

    def _summary(self, mode: str) -> dict[str, Any]:
        ms = self.modes[mode]
        c = self.counts
        out: dict[str, Any] = {
            "tool_name": self.system,
            "run_id": self.run_id,
            "eval_mode": mode,
            "num_entries": c["num_entries"],
            "num_hallucinated": c["num_hallucinated"],
            "num_valid": c["num_valid"],
        }
        metrics = summary_metrics()
        for k in metrics:
            out[k] = _clean(ms.point[k])
        out["num_uncertain"] = c["num_uncertain"]
        for k, key in ci_keys().items():
            lo_hi = ms.ci.get(k)
            out[key] = None if lo_hi is None or math.isnan(lo_hi[0]) else [lo_hi[0], lo_hi[1]]
        out["per_tier_metrics"] = {
            str(t): {
                "detection_rate": _clean(s.detection_rate),
                "false_positive_rate": _clean(s.false_positive_rate),
                "f1": _clean(s.f1),
                "precision": _clean(s.precision),
                "num_hallucinated": s.num_hallucinated,
                "num_valid": s.num_valid,
            }
            for t, s in ms.per_tier.items()
        }
        out["per_type_metrics"] = {}
        for t, s in ms.per_type.items():
            lo, hi = wilson_interval(s.fp, s.fp + s.tn) if t == "valid" else wilson_interval(s.tp, s.tp + s.fn)
            # a rate that is structurally undefined in a type (FPR of a hallucination type, DR and F1
            # of `valid`) is 0.0, as HALLMARK writes it; metric_rows keep NaN with n = 0 for them
            valid_row = t == "valid"
            out["per_type_metrics"][t] = {
                "detection_rate": 0.0 if valid_row else _clean(s.detection_rate),
                "false_positive_rate": _clean(s.false_positive_rate) if valid_row else (
                    _clean(s.false_positive_rate) or 0.0),
                "f1": (_clean(s.f1) or 0.0) if valid_row else _clean(s.f1),
                "count": s.num_hallucinated + s.num_valid,
                "wilson_ci": None if math.isnan(lo) else [lo, hi],
            }
        out["coverage"] = _clean(c["coverage"])
        f1 = out["f1_hallucination"]
        out["coverage_adjusted_f1"] = None if f1 is None or out["coverage"] is None else f1 * c["coverage"]
        out.update(
            num_scored=ms.support["in_matrix"],
            num_errors=c["num_errors"],
            num_parse_failures=c["num_parse_failures"],
            parse_failure_rate=_clean(c["parse_failure_rate"]),
            errors_by_kind=dict(c["errors_by_kind"]),
            num_missing=c["num_missing"],
            num_unknown_truth=c["num_unknown_truth"],
            num_unmatched_outputs=c["num_unmatched_outputs"],
            decided_fraction=_clean(c["decided_fraction"]),
            bootstrap_resamples=self.n_bootstrap,
            bootstrap_seed=self.seed if self.n_bootstrap else None,
        )
        out["labelled"] = self.labelled
        out["null_reasons"] = {k: self._null_reason(ms, k) for k, v in out.items()
                               if v is None and k in (*metrics, "coverage", "coverage_adjusted_f1",
                                                      "parse_failure_rate", "decided_fraction")}  # fmt: skip
        if self.census is not None:
            out["outputs"] = self.census.as_dict()
        return out

    def _null_reason(self, ms: ModeScore, metric: str) -> str:
        if not self.labelled:
            return NO_LABELS
        if metric in ms.support and ms.support[metric] == 0:
            return f"undefined: no entry in its denominator ({ms.support['in_matrix']} entries in the matrix)"
        entry = CITATION_METRICS.get(metric, None)
        return entry.undefined if entry is not None else "undefined: zero denominator"

    def metric_rows(self) -> pa.Table:
        """METRIC_SCHEMA rows for every mode and stratum."""
        from storage.schemas import METRIC_SCHEMA, table_from_rows

        rows: list[dict[str, Any]] = []

        def add(mode: str, metric: str, stratum: str, value: float, n: int, ci=(math.nan, math.nan)):
            v = float("nan") if value is None or n == 0 else float(value)
            rows.append(dict(run_id=self.run_id, system=self.system, metric=metric, stratum=stratum, eval_mode=mode,
                             value=v, ci_low=float(ci[0]), ci_high=float(ci[1]), n=int(n)))

        for mode, ms in self.modes.items():
            for k in row_metrics():
                add(mode, k, "all", ms.point[k], ms.support[k], ms.ci.get(k, (math.nan, math.nan)))
            c = self.counts
            for k in ("num_errors", "num_parse_failures", "num_uncertain", "num_missing"):
                add(mode, k, "all", c[k], c["num_entries"])
            add(mode, "parse_failure_rate", "all", c["parse_failure_rate"], c["num_entries"])
            for kind, count in c["errors_by_kind"].items():
                add(mode, "num_errors", f"error_kind={kind}", count, c["num_entries"])
            add(mode, "coverage", "all", c["coverage"], c["num_entries"])
            for t, s in ms.per_tier.items():
                npos, nneg = s.tp + s.fn, s.fp + s.tn
                add(mode, "detection_rate", f"tier={t}", s.detection_rate, npos, wilson_interval(s.tp, npos))
                add(mode, "f1_hallucination", f"tier={t}", s.f1, s.tp + s.fp + s.fn)
                add(mode, "precision", f"tier={t}", s.precision, s.tp + s.fp)
            for t, s in ms.per_type.items():
                if t == "valid":
                    nneg = s.fp + s.tn
                    add(mode, "false_positive_rate", "type=valid", s.false_positive_rate, nneg,
                        wilson_interval(s.fp, nneg))
                else:
                    npos = s.tp + s.fn
                    add(mode, "detection_rate", f"type={t}", s.detection_rate, npos, wilson_interval(s.tp, npos))
        return table_from_rows(rows, METRIC_SCHEMA)


def _score_mode(entries: EntryTable, mode: str, bootstrap: int, seed: int) -> ModeScore:
    view = entries.view(mode)
    y = entries.hallucinated
    m = view.in_matrix
    point = point_metrics(entries, view)
    tier3 = ~y | (entries.tier == 3)
    nconf = int(view.has_confidence.sum())
    support = {
        "in_matrix": int(m.sum()),
        "detection_rate": int((m & y).sum()),
        "false_positive_rate": int((m & ~y).sum()),
        "precision": int((m & view.flagged).sum()),
        "f1_hallucination": int(m.sum()),
        "tier_weighted_f1": int(m.sum()),
        "mcc": int(m.sum()),
        "macro_f1": int(m.sum()),
        "tier3_f1": int((m & tier3).sum()),
        "ece": nconf,
        "auroc": nconf,
        "auprc": nconf,
    }
    for d in added():
        support[d.name] = d.support(entries, view) if d.support is not None else int(m.sum())
    ci: dict[str, tuple[float, float]] = {}
    samples: dict[str, np.ndarray] = {}
    if bootstrap > 0 and entries.n > 0:
        samples = bootstrap_samples(
            strata_of(entries.htype), lambda draws, W: metric_batch(entries, view, W, draws), bootstrap, seed
        )
        ci = {k: percentile_interval(v) for k, v in samples.items()}
    per_tier = {t: stratum_counts(entries, view, mk) for t, mk in tier_strata(entries).items()}
    per_type = {t: stratum_counts(entries, view, mk) for t, mk in type_strata(entries).items()}
    return ModeScore(mode, point, ci, support, per_tier, per_type, samples)


def score_entries(
    entries: EntryTable, *, run_id: str, system: str, eval_mode: str = "conservative", bootstrap: int = 0,
    seed: int = 42, census: OutputCensus | None = None,
) -> CitationScore:
    """Score already-aligned entries (see `score_citation_outputs`)."""
    modes = list(EVAL_MODES) if eval_mode == "both" else [eval_mode]
    for m in modes:
        if m not in EVAL_MODES:
            raise ValueError(f"eval_mode must be one of {(*EVAL_MODES, 'both')}, got {eval_mode!r}")
    n = entries.n
    num_errors = int(entries.errored.sum())
    num_parse_failures = int(entries.parse_failed.sum())
    num_missing = int(((entries.pred == MISSING) & ~entries.errored).sum())
    num_uncertain = int((entries.pred == UNCERTAIN).sum())
    answered = n - num_errors - num_missing
    kinds = [k for k in entries.error_kind.tolist() if k is not None]
    counts = {
        "num_entries": n,
        "num_hallucinated": int(entries.hallucinated.sum()),
        "num_valid": int((~entries.hallucinated).sum()),
        "num_errors": num_errors,
        "num_parse_failures": num_parse_failures,
        "parse_failure_rate": num_parse_failures / n if n else float("nan"),
        "errors_by_kind": {k: kinds.count(k) for k in sorted(set(kinds))},
        "num_missing": num_missing,
        "num_uncertain": num_uncertain,
        "num_unknown_truth": entries.num_unknown_truth,
        "num_unmatched_outputs": entries.num_unmatched_outputs,
        "coverage": answered / n if n else float("nan"),
        "decided_fraction": (answered - num_uncertain) / n if n else float("nan"),
    }
    scored = {m: _score_mode(entries, m, bootstrap, seed) for m in modes}
    return CitationScore(run_id, system, entries, scored, counts, bootstrap, seed, census)


def score_citation_outputs(
    truth: pa.Table,
    outputs: pa.Table,
    *,
    run_id: str,
    system: str,
    eval_mode: str = "conservative",
    bootstrap: int = 0,
    seed: int = 42,
) -> CitationScore:
    """Score one system's OUTPUT_SCHEMA rows against TRUTH_SCHEMA rows, HALLMARK's way.

    Args:
        truth: TRUTH_SCHEMA table; rows with a null label are not scored.
        outputs: OUTPUT_SCHEMA table (at most one row per item_id); a row with `error` set and
            `error_kind` "parse" is scored as UNCERTAIN@0.5 and counted in `num_parse_failures`;
            other errored rows are counted in `num_errors` and treated as missing predictions.
        run_id: recorded on every metric row.
        system: recorded on every metric row and as `tool_name`.
        eval_mode: "conservative", "aggressive", or "both" (conservative first).
        bootstrap: number of stratified bootstrap resamples (0: no intervals).
        seed: bootstrap seed (HALLMARK uses 42).
    """
    census = census_of(outputs, system=system, num_items=max(truth.num_rows, outputs.num_rows))
    return score_entries(
        EntryTable.from_tables(truth, outputs), run_id=run_id, system=system, eval_mode=eval_mode,
        bootstrap=bootstrap, seed=seed, census=census,
    )

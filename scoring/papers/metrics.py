"""The paper-audit statistics of a run as one METRIC_SCHEMA table: `paper_audit_metrics(verdicts, ...)`.

Takes the VERDICT_SCHEMA rows of a paper audit (issue 7 contract: injection verdicts on injected
copies, flag verdicts on clean copies) and returns every statistic of the paper's §3 and
appendices D, E, G, K, L as metric rows (see each module for its metric names and strata):
`scoring.papers.detection` (detection_rate, unscored_injections, detection_diff, sign_reversal,
false_positive_rate, false_positive_count, ambiguous_count), `scoring.papers.trend` (trend_*),
`scoring.papers.agreement` (pearson_r, cohen_kappa, unanimity_rate, first_round_unanimity_rate,
escalation_rate, escalation_reversal_rate, paper_rate_r, mean_paper_rate_r, dispersion_ratio,
mean_dispersion_ratio), `scoring.papers.self_preference`
(self_preference_*, judge_detect_rate, lone_dissenter_same_family_share, loo_*) and
`scoring.papers.coupling` (neighbour_*). All intervals resample papers, seeded: one set of
`n_interval` resamples (2,000) for every interval and one of `n_paired` (10,000) for reviewer
comparisons, so a table is reproducible from the stored verdicts alone; the counts used are rows
of the table (`bootstrap_resamples`, `paired_resamples`, `trend_permutations`). Natural errata
(issue 15) are a separate track: strata `track=natural`, never mixed into the injected rates.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from scoring.control_reach import control_reach, finite
from scoring.papers.agreement import (
    grouped_reviewers,
    judge_agreement_rows,
    panel_rate_rows,
    reviewer_agreement_rows,
)
from scoring.papers.bootstrap import N_INTERVAL, N_PAIRED, ratio_estimate, weights
from scoring.papers.coupling import coupling_rows
from scoring.papers.detection import detection_rows, false_positive_rows, paired_rows
from scoring.papers.rows import ALL, metric_row
from scoring.papers.self_preference import leave_one_judge_out_rows, self_preference_rows
from scoring.papers.trend import N_PERMUTATIONS, trend_rows
from scoring.papers.verdicts import PaperVerdicts, read_paper_verdicts
from storage.schemas import METRIC_SCHEMA, table_from_rows

CONTROL_PREFIX = "control:"
NATURAL = "natural"
"""The track of natural errors (errata from a paper's history, `corpora.papers.errata`)."""
AUDIT_METRICS = ("bootstrap_resamples", "paired_resamples", "trend_permutations", "injection_attempts",
                 "injection_invalid_draws", "injection_redrawn", "injection_unfilled_invalid", "injections_applied",
                 "injection_cells_skipped", "natural_copies", "natural_errata")
"""Audit-wide rows (system "all"): the resample counts actually used and the corpus's injection validity."""


def paper_audit_metrics(verdicts: pa.Table, *, run_id: str, families: Mapping[str, str] | None = None,
                        trend_systems: Sequence[str] | None = None,
                        agreement_groups: Mapping[str, Sequence[str]] | None = None, n_interval: int = N_INTERVAL,
                        n_paired: int = N_PAIRED, n_permutations: int = N_PERMUTATIONS, seed: int = 0,
                        alpha: float = 0.05, truth: pa.Table | None = None) -> pa.Table:
    """Every paper-audit statistic of `verdicts` as a METRIC_SCHEMA table.

    Args:
        verdicts: VERDICT_SCHEMA rows (other unit kinds are ignored).
        run_id: written into every metric row.
        families: reviewer -> provider family (e.g. {"gpt-structured": "openai"}), for the
            self-preference test; reviewers absent from it (or of a family no judge has) are not tested.
        trend_systems: reviewers pooled in the severity trend test (default all; the paper leaves
            out those with negligible detection).
        agreement_groups: for inter-reviewer agreement only, group name -> member reviewers merged
            into one reviewer that detects an injection when any member does.
        n_interval: paper resamples behind every interval.
        n_paired: paper resamples behind reviewer comparisons (sign-reversal fractions).
        n_permutations: random within-paper relabellings when exact enumeration is too large.
        seed: seeds the resamples and permutations.
        alpha: the Benjamini–Hochberg level of `trend_reject`.
        truth: the corpus truth, for the injection-validity counts (`injection_validity_rows`).

    Natural-error verdicts (detail `track: "natural"`) are kept out of every statistic above and
    scored apart: detection rows (and reviewer comparisons) with strata prefixed `track=natural`.
    Rows of system "all" record the resample counts used (`bootstrap_resamples`, ...).
    """
    injected, natural = split_tracks(verdicts)
    pv = read_paper_verdicts(injected)
    n_papers = len(pv.papers)
    W = weights(n_papers, n_interval, seed)
    W_paired = weights(n_papers, n_paired, seed + 1)
    rows = (detection_rows(pv, run_id, W) + paired_rows(pv, run_id, W_paired) + false_positive_rows(pv, run_id, W)
            + trend_rows(pv, run_id, pooled_systems=trend_systems, alpha=alpha, n_permutations=n_permutations,
                         seed=seed)
            + judge_agreement_rows(pv, run_id, W) + panel_rate_rows(pv, run_id, W)
            + self_preference_rows(pv, run_id, W, families or {}) + leave_one_judge_out_rows(pv, run_id, W)
            + coupling_rows(pv, run_id, W) + reviewer_agreement_rows(grouped_reviewers(pv, agreement_groups or {}), run_id, W))
    rows += count_rows(pv, run_id, W, ALL) + calibration_rows(pv, run_id)
    if natural.num_rows:  # issue 15: real errata, scored apart (strata "track=natural|...")
        nv = read_paper_verdicts(natural)
        Wn = weights(len(nv.papers), n_interval, seed + 2)
        Wn_paired = weights(len(nv.papers), n_paired, seed + 3)
        nat = detection_rows(nv, run_id, Wn) + paired_rows(nv, run_id, Wn_paired)
        rows += [r | {"stratum": _in_track(r["stratum"])} for r in nat]
        rows += count_rows(nv, run_id, Wn, _in_track(ALL))
    if verdicts.num_rows:  # the counts behind the intervals above, as used (reports quote these rows)
        rows += [metric_row(run_id, ALL, "bootstrap_resamples", ALL, n_interval, n=n_interval),
                 metric_row(run_id, ALL, "paired_resamples", ALL, n_paired, n=n_paired),
                 metric_row(run_id, ALL, "trend_permutations", ALL, n_permutations, n=n_permutations)]
    if truth is not None:
        rows += injection_validity_rows(truth, run_id)
    return table_from_rows(rows, METRIC_SCHEMA)


def _in_track(stratum_: str, track: str = NATURAL) -> str:
    return f"track={track}" if stratum_ == ALL else f"track={track}|{stratum_}"


def split_tracks(verdicts: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(injected-track rows, natural-track rows) of a VERDICT_SCHEMA table (track from each row's detail)."""
    if not verdicts.num_rows:
        return verdicts, verdicts.slice(0, 0)
    natural = [(json.loads(d).get("track") if d else None) == NATURAL for d in verdicts.column("detail_json").to_pylist()]
    mask = pa.array(natural, type=pa.bool_())
    return verdicts.filter(pa.compute.invert(mask)), verdicts.filter(mask)


def count_rows(pv: PaperVerdicts, run_id: str, W: np.ndarray, stratum_: str) -> list[dict[str, Any]]:
    """Per reviewer: all / visible injection counts, the detection rate over all injections and
    its flags on injected copies by quote specificity (issue 21: `flags_quoted`,
    `flags_over_long_quote` quoting more than a locatable span, `flags_token_only_quote` quoting a
    bare token; n = flags raised).

    `detection_over_all` = detected / every injection verdict (undecided and unscored ones stay in
    the denominator). For a control this is the figure its validity is judged on: judges that
    refuse or cannot decide on a null review must not shrink its denominator (issue 15)."""
    papers = pv.paper_index()
    rows = []
    for system in sorted({v.system for v in pv.injections}):
        mine = [v for v in pv.injections if v.system == system]
        num, den = np.zeros(len(papers)), np.zeros(len(papers))
        for v in mine:
            den[papers[v.paper_id]] += 1
            num[papers[v.paper_id]] += v.detected
        est = ratio_estimate(num, den, W)
        rows += [metric_row(run_id, system, "detection_over_all", stratum_, est.value, est.ci, est.n),
                 metric_row(run_id, system, "all_injections", stratum_, len(mine), n=len(mine)),
                 metric_row(run_id, system, "visible_injections", stratum_, sum(v.visible is not False for v in mine),
                            n=len(mine))]  # fmt: skip
        per_copy = {v.item_id: v.review_quotes for v in mine if v.review_quotes}  # one tally per reviewed copy
        if per_copy:
            flags = sum(t.get("flags", 0) for t in per_copy.values())
            rows += [metric_row(run_id, system, f"flags_{key}", stratum_, sum(t.get(name, 0) for t in per_copy.values()),
                                n=flags) for key, name in (("quoted", "quoted"), ("over_long_quote", "over_long"),
                                                           ("token_only_quote", "token_only"))]  # fmt: skip
    return rows


def calibration_rows(pv: PaperVerdicts, run_id: str) -> list[dict[str, Any]]:
    """Judge calibration (issue 21), from the controls' votes: per judge, `judge_control_credit`
    (stratum `control=<name>`: injections of that control it voted detected / all of them) and
    `judge_uncalibrated` (1 when adjudication excluded its votes: they carry role `uncalibrated`)."""
    controls = sorted({v.system for v in pv.injections if v.system.startswith(CONTROL_PREFIX)})
    judged = [v for v in pv.injections if v.system in controls]
    judges = sorted({j.judge for v in judged for j in v.votes if j.role in ("panel", "escalation", "uncalibrated")})
    rows = []
    for judge in judges:
        for control in controls:
            mine = [v for v in judged if v.system == control]
            yes = sum(any(j.judge == judge and j.detected is True for j in v.votes) for v in mine)
            rows.append(metric_row(run_id, judge, "judge_control_credit", f"control={control.removeprefix(CONTROL_PREFIX)}",
                                   yes / len(mine) if mine else math.nan, n=len(mine)))  # fmt: skip
        excluded = any(j.judge == judge and j.role == "uncalibrated" for v in pv.injections for j in v.votes)
        rows.append(metric_row(run_id, judge, "judge_uncalibrated", ALL, float(excluded), n=1))
    return rows


def injection_validity_rows(truth: pa.Table | Iterable[dict[str, Any]], run_id: str) -> list[dict[str, Any]]:
    """Audit-wide injection-validity counts from the corpus truth (`draws` of each injected copy):
    draws tried, draws the meaning check rejected, of those the ones re-drawn into a filled cell and
    the ones in cells left skipped; injections applied, cells skipped; natural copies and errata."""
    rows = truth.to_pylist() if isinstance(truth, pa.Table) else list(truth)
    tally = dict.fromkeys(AUDIT_METRICS[3:], 0)
    for r in rows:
        extra = json.loads(r.get("extra_json") or "{}")
        if extra.get("clean"):
            continue
        if extra.get("track") == NATURAL:
            tally["natural_copies"] += 1
            tally["natural_errata"] += len(extra.get("injections") or [])
            continue
        draws = extra.get("draws") or {}
        tally["injection_attempts"] += int(draws.get("attempts", 0))
        tally["injection_invalid_draws"] += int(draws.get("invalid", sum((extra.get("invalid_draws") or {}).values())))
        tally["injection_redrawn"] += int(draws.get("redrawn", 0))
        tally["injection_unfilled_invalid"] += int(draws.get("unfilled", 0))
        tally["injections_applied"] += len(extra.get("injections") or [])
        tally["injection_cells_skipped"] += len(extra.get("skipped") or [])
    return [metric_row(run_id, ALL, name, ALL, value, n=value) for name, value in tally.items()]


CONTROL_NAMES = ("null", "random_quote", "quote_everything", "token_quotes")
"""The controls of every paper audit besides each reviewer's shuffled reviews (`adjudication.papers.controls`)."""


def reviewer_audit_rows(rows: Sequence[dict[str, Any]], system: str, run_id: str) -> list[dict[str, Any]]:
    """What a reviewer's own MLflow run needs beside its metric rows: the controls' rates scored
    like it (`control_<name>_<metric>`, the shuffled control being its own reviews shuffled), the
    audit-wide resample and injection-validity counts, the judges excluded by calibration
    (`uncalibrated_judges`) and `audit_invalid` (1 when `audit_invalid_reasons` names any reason
    for this reviewer)."""
    out = []
    controls = {name: CONTROL_PREFIX + name for name in CONTROL_NAMES} | {"shuffled": f"{CONTROL_PREFIX}shuffled:{system}"}
    for name, control in controls.items():
        for r in rows:
            if (r["system"] == control and r["stratum"] in (ALL, _in_track(ALL))  # headline strata only
                    and r["metric"] in ("detection_rate", "detection_over_all", "undecided_injections", "all_injections")):
                out.append(r | {"run_id": run_id, "system": system, "metric": f"control_{name}_{r['metric']}"})
    out += [r | {"run_id": run_id, "system": system} for r in rows if r["system"] == ALL and r["metric"] in AUDIT_METRICS]
    uncalibrated = [r for r in rows if r["metric"] == "judge_uncalibrated"]
    if uncalibrated:
        out.append(metric_row(run_id, system, "uncalibrated_judges", ALL, sum(r["value"] for r in uncalibrated),
                              n=len(uncalibrated)))  # fmt: skip
    has_null = any(r["system"] == controls["null"] for r in rows)
    if has_null:
        invalid = bool(audit_invalid_reasons(rows, system))
        out.append(metric_row(run_id, system, "audit_invalid", ALL, float(invalid), n=1))
    return out


NULL_TOLERANCE = 0.05
"""The null control may detect at most this share of injections (`adjudication.papers.controls`)."""
_TRACKS = ((ALL, "injected"), (_in_track(ALL), NATURAL))


def _control_rate(found: Mapping[str, dict[str, Any]]) -> dict[str, Any] | None:
    """A control's rate over every injection it was scored on (`detection_over_all`: undecided
    verdicts stay in the denominator, so judges refusing to answer cannot make its rate look large
    or vanish); a table without that row falls back to the detection rate."""
    r = found.get("detection_over_all") or found.get("detection_rate")
    return r if r is not None and finite(r["value"]) else None


def reviewers_of(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The real reviewers of a metric table (not controls, pairs, judges or the audit-wide rows)."""
    return sorted({r["system"] for r in rows if r["metric"] == "detection_rate" and r["stratum"] == ALL
                   and " vs " not in r["system"] and r["system"] != ALL and not r["system"].startswith(CONTROL_PREFIX)})


def audit_invalid_reasons(rows: Sequence[dict[str, Any]], system: str | None = None) -> list[str]:
    """Why the audit (or, with `system`, that reviewer's figure) is invalid; empty when it is valid.

    1. The null control detects more than `NULL_TOLERANCE` of a track's injections: the
       adjudication awards detections to nothing (every reviewer is concerned).
    2. Any control (null, random-quote, quote-everything, token-quotes, the reviewer's own reviews
       shuffled) reaches a reviewer's detection rate within its interval: the control's rate over
       all its injections is above zero and at least the reviewer's 95% CI lower bound. The
       published rate is then not distinguishable from what the control earns; a control above
       the reviewer's rate itself is said to beat it (issue 21)."""
    idx: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for r in rows:
        idx.setdefault((r["system"], r["stratum"]), {})[r["metric"]] = r
    reasons = []
    for stratum_, track in _TRACKS:
        null = _control_rate(idx.get((CONTROL_PREFIX + "null", stratum_), {}))
        if null is not None and null["value"] > NULL_TOLERANCE:
            over = "all its injections" if null["metric"] == "detection_over_all" else "its decided injections"
            reasons.append(f"AUDIT INVALID: the null control (a review with no findings) scored detection rate "
                           f"{null['value']:.3f} > {NULL_TOLERANCE:.2f} over {over} ({track} track, "
                           f"n = {null.get('n', '?')}); the adjudication awards detections to nothing.")  # fmt: skip
        for reviewer in [system] if system is not None else reviewers_of(rows):
            own = idx.get((reviewer, stratum_), {}).get("detection_rate")
            if own is None:
                continue
            for name in (*CONTROL_NAMES, f"shuffled:{reviewer}"):
                control = _control_rate(idx.get((CONTROL_PREFIX + name, stratum_), {}))
                if control is None or (reach := control_reach(control, own)) is None:
                    continue
                how, low = reach
                reasons.append(f"AUDIT INVALID: the {name.split(':')[0]} control ({control['value']:.3f} over "
                               f"n = {control.get('n', '?')}) {how} reviewer {reviewer}'s detection rate "
                               f"{own['value']:.3f} [95% CI low {low:.3f}] ({track} track): its figure is not above "
                               "what the control earns.")  # fmt: skip
    return reasons


def audit_validity(rows: Sequence[dict[str, Any]]) -> str | None:
    """Every reason the audit is invalid (`audit_invalid_reasons`), one per line; None when valid."""
    reasons = audit_invalid_reasons(rows)
    return "\n".join(reasons) if reasons else None

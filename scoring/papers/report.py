"""A paper audit's report a person reads: `write_paper_report(out_dir, verdicts)`.

Computes `paper_audit_metrics` from the stored verdicts (or takes a precomputed metric table) and
writes into `out_dir`: `paper_metrics.csv` (every metric row), `paper_report.md` and
`paper_report.html` (detection by reviewer and error type and by type x severity, with intervals
and the unscored counts beside them; false-positive rates with FP / ambiguous counts; reviewer
comparisons with sign-reversal fractions; the severity trend tests; judge agreement, unanimity
and escalation; self-preference; leave-one-judge-out; neighbour coupling; inter-reviewer
agreement; the controls beside each reviewer and the audit's validity; the natural-error track
(errata from the papers' histories) apart from the injected errors; injection-validity counts)
and the PNGs (`dose_response.png`, `false_positive_rate.png`,
`judge_agreement_detection.png`, `judge_agreement_false_positive.png`, `reviewer_agreement.png`).
Returns the written paths (log them as MLflow artifacts).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from scoring.papers.figures import agreement_matrix, dose_response, false_positive_bars
from scoring.papers.metrics import CONTROL_PREFIX, NULL_TOLERANCE, audit_validity, paper_audit_metrics
from scoring.papers.verdicts import ERROR_TYPES, SEVERITIES
from scoring.report_context import ReportContext
from scoring.report_pages import (
    Figure,
    ReportPage,
    Section,
    Table,
    with_interval,
    write_metrics_csv,
    write_page,
)
from storage.records import CALIBRATION_MAX_CREDIT
from storage.records import QUOTE_MAX_CHARS as MAX_QUOTE_CHARS
from storage.records import QUOTE_MIN_CHARS as MIN_QUOTE_CHARS

GLOSSARY = (
    ("detection rate", "share of injected errors the reviewer found (a judge panel or the quote matcher says its "
                       "review points at the error); 'over decided' leaves undecided injections out, 'over visible' "
                       "counts only errors inside what the reviewer was shown, 'over all' keeps every injection."),
    ("undecided", "an injection whose judges could not reach a verdict with evidence quoted from the review."),
    ("unscored", "an injection no verdict could be made for (the reviewer errored or said nothing usable)."),
    ("FP rate", "false-positive rate: flags on clean copies an independent adjudicator rated false, over the flags "
                "it rated."),
    ("null control", "a reviewer that reports nothing, scored by the same adjudication: above "
                     f"{NULL_TOLERANCE:.0%} of its injections the adjudication itself is broken (AUDIT INVALID)."),
    ("random-quote / shuffled control", "a reviewer quoting random sentences of the paper / the reviewer's own "
                                        "review scored against another paper's injections: chance-level detection."),
    ("95% CI", "paper-level bootstrap interval (papers resampled, not injections)."),
    ("sign reversal", "share of paired bootstrap resamples whose difference has the other sign (below 0.05: "
                      "significant)."),
    ("Page's L", "trend test of detection over severity S1 < S2 < S3 within papers; p by permutation, BH-adjusted."),
    ("Pearson r / Cohen's kappa", "agreement of two judges' (or reviewers') votes: 1 = identical, 0 = chance."),
    ("unanimity / escalation", "share of units all judges agreed on in the first round / sent to a second round."),
    ("self-preference Δs", "a judge's detection rate on reviews by its own model family minus the other judges'."),
    ("leave one judge out", "detection rate recomputed without one judge's votes: how much the verdicts hang on it."),
    ("dispersion ratio", "spread of per-paper detection rates against what chance alone would give."),
)
_CAPTIONS = {"dose_response.png": "Detection by severity (dose-response)",
             "false_positive_rate.png": "False-positive rate per reviewer",
             "judge_agreement_detection.png": "Judge agreement on detection",
             "judge_agreement_false_positive.png": "Judge agreement on false positives",
             "reviewer_agreement.png": "Agreement between reviewers"}


def _controls(rows: Sequence[dict], track: str = "all") -> Table:
    idx = {(r["system"], r["metric"], r["stratum"]): r for r in rows}
    reviewers = sorted({r["system"] for r in rows if r["metric"] == "detection_rate" and " vs " not in r["system"]
                        and r["system"] != "all" and not r["system"].startswith(CONTROL_PREFIX)})
    head = ["reviewer", "detection", "null control", "null control over all (undecided / all)",
            "random-quote control", "random-quote over all", "shuffled-review control", "shuffled over all",
            "quote-everything over all", "token-quotes over all"]
    null, rand = CONTROL_PREFIX + "null", CONTROL_PREFIX + "random_quote"
    everything, tokens = CONTROL_PREFIX + "quote_everything", CONTROL_PREFIX + "token_quotes"
    body = [[s, _fmt(idx.get((s, "detection_rate", track))), _fmt(idx.get((null, "detection_rate", track))),
             f"{_fmt(idx.get((null, 'detection_over_all', track)))} ({_count(idx.get((null, 'undecided_injections', track)))}"
             f"/{_count(idx.get((null, 'all_injections', track)))})",
             _fmt(idx.get((rand, "detection_rate", track))), _fmt(idx.get((rand, "detection_over_all", track))),
             _fmt(idx.get((f"{CONTROL_PREFIX}shuffled:{s}", "detection_rate", track))),
             _fmt(idx.get((f"{CONTROL_PREFIX}shuffled:{s}", "detection_over_all", track))),
             _fmt(idx.get((everything, "detection_over_all", track))),
             _fmt(idx.get((tokens, "detection_over_all", track)))] for s in reviewers]
    return head, body


def _quote_table(rows: Sequence[dict]) -> Table:
    """Per reviewer and control: flags on injected copies, and how many quote too much or too little."""
    idx = {(r["system"], r["metric"]): r for r in rows if r["stratum"] == "all"}
    systems = sorted({s for s, m in idx if m == "flags_quoted"})
    body = [[s, str(idx[(s, "flags_quoted")]["n"]), _count(idx.get((s, "flags_quoted"))),
             _count(idx.get((s, "flags_over_long_quote"))), _count(idx.get((s, "flags_token_only_quote")))]
            for s in systems]
    return ["reviewer", "flags", "with a quote", f"over-long (> {MAX_QUOTE_CHARS} chars)",
            f"token-only (< {MIN_QUOTE_CHARS} non-space chars)"], body


def _calibration_table(rows: Sequence[dict]) -> Table:
    """Per judge: the share of each control's injections it credited, and whether its votes count."""
    credit = [r for r in rows if r["metric"] == "judge_control_credit"]
    controls = sorted({r["stratum"].removeprefix("control=") for r in credit})
    idx = {(r["system"], r["stratum"].removeprefix("control=")): r for r in credit}
    excluded = {r["system"]: r["value"] for r in rows if r["metric"] == "judge_uncalibrated"}
    body = [[j, *[_fmt(idx.get((j, c))) for c in controls],
             "excluded (uncalibrated)" if excluded.get(j) else "counted"] for j in sorted({r["system"] for r in credit})]
    return ["judge", *controls, "votes"], body


def _audit_count(rows: Sequence[dict], metric: str, default: int | None = None) -> int | None:
    for r in rows:
        if r["system"] == "all" and r["metric"] == metric and r["stratum"] == "all" and math.isfinite(r["value"]):
            return int(r["value"])
    return default


def _validity_table(rows: Sequence[dict]) -> Table:
    names = [("injection_attempts", "draws tried"), ("injection_invalid_draws", "rejected by the meaning check"),
             ("injection_redrawn", "of those, re-drawn into a filled cell"),
             ("injection_unfilled_invalid", "of those, in cells left skipped"),
             ("injections_applied", "injections applied"), ("injection_cells_skipped", "cells skipped"),
             ("natural_copies", "natural-error copies"), ("natural_errata", "natural errata")]
    body = [[label, str(v)] for m, label in names if (v := _audit_count(rows, m)) is not None]
    return ["count", "value"], body


def _detection_table(rows: Sequence[dict], track: str) -> Table:
    """Detection per reviewer in one track ("all" = injected errors, "track=natural" = errata)."""
    idx = {(r["system"], r["metric"], r["stratum"]): r for r in rows}

    def st(part: str | None = None) -> str:
        if track == "all":
            return part or "all"
        return track if part is None else f"{track}|{part}"

    systems = sorted({r["system"] for r in rows if r["metric"] == "detection_rate" and r["stratum"] == st()
                      and " vs " not in r["system"]})
    head = ["reviewer", "over decided", "over visible", "over all injections", *ERROR_TYPES, "scored", "undecided",
            "unscored", "visible / all"]
    body = [[s, _fmt(idx.get((s, "detection_rate", st()))), _fmt(idx.get((s, "detection_rate", st("visible=yes")))),
             _fmt(idx.get((s, "detection_over_all", st()))),
             *[_fmt(idx.get((s, "detection_rate", st(f"type={t}")))) for t in ERROR_TYPES],
             str(idx[(s, "detection_rate", st())]["n"]), _count(idx.get((s, "undecided_injections", st()))),
             _count(idx.get((s, "unscored_injections", st()))),
             f"{_count(idx.get((s, 'visible_injections', st())))} / {_count(idx.get((s, 'all_injections', st())))}"]
            for s in systems]
    return head, body


def _fmt(r: dict | None, digits: int = 3) -> str:
    """Value [95% CI], marked when its n is too small for the interval to mean much."""
    if r is None:
        return "n/a"
    return with_interval(r["value"], r.get("ci_low"), r.get("ci_high"), r.get("n"), digits=digits)


def _p(r: dict) -> str:
    return "n/a" if not math.isfinite(r["value"]) else f"{r['value']:.4g}"


def _count(r: dict | None) -> str:
    return "0" if r is None or not math.isfinite(r["value"]) else str(int(r["value"]))


METRIC_LABELS = {
    "detection_rate": "detection rate", "detection_over_all": "detection over all injections",
    "detection_diff": "detection difference", "sign_reversal": "sign-reversal share",
    "trend_page_l": "Page's L", "trend_p": "trend p", "trend_p_bh": "trend p (BH-adjusted)",
    "trend_reject": "trend significant (1 = yes)", "pearson_r": "Pearson r", "cohen_kappa": "Cohen's kappa",
    "unanimity_rate": "unanimity", "first_round_unanimity_rate": "first-round unanimity",
    "escalation_rate": "escalation rate", "escalation_reversal_rate": "escalations that reversed the vote",
    "judge_detect_rate": "judge's detection rate", "self_preference_delta": "self-preference Δs",
    "self_preference_delta_adjusted": "self-preference Δs (rate-adjusted)",
    "self_preference_delta_mean": "mean self-preference Δs",
    "self_preference_delta_adjusted_mean": "mean self-preference Δs (rate-adjusted)",
    "lone_dissenter_same_family_share": "2-1 splits whose dissenter is the reviewer's family",
    "loo_detection_rate": "detection without this judge", "loo_change": "change without this judge",
    "neighbour_detection_rate": "detection by neighbours' severity", "neighbour_diff": "blatant minus clear neighbours",
    "neighbour_sign_reversal": "sign-reversal share (neighbours)", "paper_rate_r": "per-paper rate correlation",
    "mean_paper_rate_r": "mean per-paper rate correlation", "dispersion_ratio": "dispersion ratio",
    "mean_dispersion_ratio": "mean dispersion ratio", "false_positive_rate": "false-positive rate",
}
"""What a reader sees for each metric name of `paper_metrics.csv` (the CSV keeps the names)."""
_STRATUM_KEYS = {"type": "type", "severity": "severity", "track": "track", "visible": "visible", "pair": "",
                 "panel": "panel", "judge": "judge", "neighbour": "neighbours' severity", "strict": "strict"}


def metric_label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric.replace("_", " "))


def stratum_label(stratum: str) -> str:
    """`type=numerics|severity=S2` -> `type numerics, severity S2`; `all` -> `all`."""
    if stratum == "all":
        return "all"
    parts = []
    for part in stratum.split("|"):
        key, eq, value = part.partition("=")
        if not eq:
            parts.append(part.replace("_", " "))
            continue
        name = _STRATUM_KEYS.get(key, key.replace("_", " "))
        parts.append(f"{name} {value.replace('_', ' ')}".strip())
    return ", ".join(parts)


def _system_label(system: str) -> str:
    return "all (pooled)" if system == "all" else system


def _long(rows: Sequence[dict], metrics: Sequence[str]) -> Table:
    head = ["reviewer / judge", "measure", "subset", "value [95% CI]", "n"]
    body = [[_system_label(r["system"]), metric_label(r["metric"]), stratum_label(r["stratum"]),
             _p(r) if r["metric"] in ("trend_p", "trend_p_bh") else _fmt(r), str(r["n"])]
            for r in rows if r["metric"] in metrics]  # fmt: skip
    return head, body


def _sections(rows: Sequence[dict]) -> list[tuple[str, str, Table]]:
    idx = {(r["system"], r["metric"], r["stratum"]): r for r in rows}
    systems = sorted({r["system"] for r in rows if r["metric"] == "detection_rate" and r["stratum"] == "all"})
    n_boot = _audit_count(rows, "bootstrap_resamples")
    n_paired = _audit_count(rows, "paired_resamples")
    n_perm = _audit_count(rows, "trend_permutations")
    boot = f"{n_boot:,} resamples" if n_boot else "resample count not recorded"
    paired = f"{n_paired:,} resamples" if n_paired else "resample count not recorded"
    perm = f"at most {n_perm:,} random relabellings" if n_perm else "random relabellings"
    natural = any(r["stratum"].startswith("track=natural") for r in rows)
    sev_head = ["reviewer", "type", *SEVERITIES]
    sev_body = [[s, t, *[_fmt(idx.get((s, "detection_rate", f"type={t}|severity={v}")), 2) for v in SEVERITIES]]
                for s in systems for t in ERROR_TYPES]
    fp_systems = sorted({r["system"] for r in rows if r["metric"] == "false_positive_rate" and r["stratum"] == "all"})
    fp_head = ["reviewer", "FP rate [95% CI]", "false positives", "ambiguous", "adjudicated flags", "undecided"]
    fp_body = [[s, _fmt(idx[(s, "false_positive_rate", "all")]), _count(idx.get((s, "false_positive_count", "all"))),
                _count(idx.get((s, "ambiguous_count", "all"))), str(idx[(s, "false_positive_rate", "all")]["n"]),
                _count(idx.get((s, "undecided_flags", "all")))]
               for s in fp_systems]
    judge_rows = [r for r in rows if r["system"] == "all" or r["metric"] not in ("pearson_r", "cohen_kappa")]
    has_null = any(r["system"] == CONTROL_PREFIX + "null" for r in rows)
    sections = [
        ("Controls", "Each reviewer's detection rate beside the built-in controls scored by the same adjudication: "
         "a null reviewer (no findings), a random-quote reviewer (quotes random sentences of the paper) and the "
         f"reviewer's own reviews scored against another paper's injections, a review quoting every file whole and one "
         f"quoting bare tokens. A null control above "
         f"{NULL_TOLERANCE:.0%} of all its injections (undecided ones counted in the denominator; in brackets: "
         "undecided / all), or any control above 0 that reaches a reviewer's 95% CI lower bound, makes the audit "
         "invalid."
         + ("" if has_null else " No control verdicts in this table: the audit's validity is not checked."),
         _controls(rows)),
        ("Quote specificity", f"Flags on injected copies by their quote: a quote over {MAX_QUOTE_CHARS} characters "
         f"(a whole file) or under {MIN_QUOTE_CHARS} non-space characters (a bare token) locates nothing and never "
         "counts as a detection; a located quote counts only when its description names the error.",
         _quote_table(rows)),
        ("Judge calibration", "Share of each control's injections each judge voted detected (evidence vetted). A "
         f"judge crediting any control on more than {CALIBRATION_MAX_CREDIT:.0%} of its injections is uncalibrated: its votes are recorded, "
         "not counted." + ("" if any(r["metric"] == "judge_control_credit" for r in rows)
                           else " No judge voted on a control (no panel)."), _calibration_table(rows)),
        ("Detection rate (injected errors)", f"Detected / decided injections; paper-level bootstrap 95% CI ({boot}). "
         "Undecided injections (judges could not reach a verdict with evidence in the review) are out of that "
         "denominator and counted; 'over visible' counts only injections inside what the reviewer was shown, "
         "'over all injections' keeps undecided and unscored ones in the denominator.",
         _detection_table(rows, "all")),
        ("Detection by severity", "Dose-response: detection rate per error type and severity (S1 subtle … S3 "
         "blatant).", (sev_head, sev_body)),
        ("False-positive rate", "False-positive flags / flags on clean copies that an independent adjudicator "
         "rated; n/a when none was; undecided flags are counted, not rated.", (fp_head, fp_body)),
        ("Reviewer comparisons", f"Paired paper-level bootstrap ({paired}): "
         "difference and the share of resamples whose sign reverses (significant below 0.05).",
         _long([r for r in rows if not r["stratum"].startswith("track=")], ("detection_diff", "sign_reversal"))),
        ("Severity trend", f"Page's L (mid-ranks), within-paper permutation p ({perm} when exact enumeration is "
         "too large), "
         "Benjamini–Hochberg within each family (pooled reviewers; each reviewer).",
         _long(rows, ("trend_page_l", "trend_p", "trend_p_bh", "trend_reject"))),
        ("Judge agreement", "First-round panel votes: pairwise Pearson r and Cohen's kappa; unanimity, escalation "
         "and escalation reversals.", _long(judge_rows, ("pearson_r", "cohen_kappa", "unanimity_rate",
                                                         "first_round_unanimity_rate", "escalation_rate",
                                                         "escalation_reversal_rate"))),
        ("Self-preference", "Same-family judge minus the other judges (Δs), adjusted for each judge's pooled rate, "
         "and the share of 2-1 splits whose lone dissenter is the reviewer's family.",
         _long(rows, ("judge_detect_rate", "self_preference_delta", "self_preference_delta_adjusted",
                      "self_preference_delta_mean", "self_preference_delta_adjusted_mean",
                      "lone_dissenter_same_family_share"))),
        ("Leave one judge out", "Detection rate from the remaining first-round votes; 1-1 ties missed (strict) or "
         "detected (lenient); change against the reported rate.", _long(rows, ("loo_detection_rate", "loo_change"))),
        ("Neighbour-severity coupling", "Detection rate by the highest severity among the other errors of the "
         "copy; blatant-minus-clear contrast.", _long(rows, ("neighbour_detection_rate", "neighbour_diff",
                                                              "neighbour_sign_reversal"))),
        ("Inter-reviewer agreement", "Per-injection Pearson r and kappa between reviewers; correlation of "
         "per-paper detection rates.", _long([r for r in rows if r["system"] != "all"
                                              or r["metric"] in ("mean_paper_rate_r", "mean_dispersion_ratio")],
                                             ("pearson_r", "cohen_kappa", "paper_rate_r", "mean_paper_rate_r",
                                              "dispersion_ratio", "mean_dispersion_ratio"))),
    ]
    if natural:
        sections[3:3] = [
            ("Natural errors (errata from the papers' histories)", "Real errors a later commit of the paper's "
             "repository fixed (an equation, a number or a reference); each copy is the paper before the fix and "
             f"the fix is its truth. Scored like injected errors, reported apart; bootstrap over papers ({boot}).",
             _detection_table(rows, "track=natural")),
            ("Natural-error controls", "The controls of the table above on the natural-error copies.",
             _controls(rows, "track=natural")),
            ("Natural-error reviewer comparisons", f"As above, on the natural errors ({paired}).",
             _long([r for r in rows if r["stratum"].startswith("track=natural")], ("detection_diff", "sign_reversal"))),
        ]
    sections.append(("Injection validity", "Every drawn injection is checked to change meaning in printed text "
                     "(corpora/papers/validator.py); a rejected draw is re-drawn from the same schedule cell; a cell "
                     "with no valid draw is skipped. Counts over the corpus.", _validity_table(rows)))
    return sections


def write_paper_report(out_dir: str | Path, verdicts: pa.Table, *, run_id: str = "paper-audit",
                       families: Mapping[str, str] | None = None, metrics: pa.Table | None = None,
                       title: str = "Paper audit", truth: pa.Table | None = None,
                       context: ReportContext | None = None, **metric_kwargs: Any) -> list[Path]:
    """Write the Markdown and HTML report, the metric CSV and the figures; return their paths.

    `metrics` (a METRIC_SCHEMA table) skips recomputation; otherwise `paper_audit_metrics(verdicts,
    run_id=run_id, families=families, truth=truth, **metric_kwargs)` is used. Every count the text
    quotes (bootstrap resamples, controls, visibility, undecided, injection validity) is a row of
    that table. `context` (corpus, snapshot, code revision, run ids, completeness) heads the page.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = metrics if metrics is not None else paper_audit_metrics(verdicts, run_id=run_id, families=families,
                                                                    truth=truth, **metric_kwargs)
    rows = table.to_pylist()
    figures = [
        dose_response(rows, out / "dose_response.png"),
        false_positive_bars(rows, out / "false_positive_rate.png"),
        agreement_matrix(rows, out / "judge_agreement_detection.png", kind="judges", panel="detection"),
        agreement_matrix(rows, out / "judge_agreement_false_positive.png", kind="judges", panel="false_positive"),
        agreement_matrix(rows, out / "reviewer_agreement.png", kind="reviewers"),
    ]
    n_inj = sum(1 for k in verdicts.column("unit_kind").to_pylist() if k == "injection") if verdicts.num_rows else 0
    n_flag = sum(1 for k in verdicts.column("unit_kind").to_pylist() if k == "flag") if verdicts.num_rows else 0
    intro = (f"Run `{run_id}`: {n_inj} injection verdicts, {n_flag} clean-copy flag verdicts. Every number is "
             "recomputed from the stored verdicts (`paper_metrics.csv`).")
    page = ReportPage(title, context, intro, [Section(*s) for s in _sections(rows)], GLOSSARY,
                      [Figure(f, _CAPTIONS[f.name]) for f in figures], warning=audit_validity(rows))  # fmt: skip
    md_path, html_path = write_page(out, "paper_report", page)
    csv_path = write_metrics_csv(out / "paper_metrics.csv", rows, table.schema.names)
    return [md_path, html_path, csv_path, *figures]

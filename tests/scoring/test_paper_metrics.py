"""`paper_audit_metrics` over a small verdict table whose every statistic is worked out by hand.

The table (`small_verdicts`): reviewers "claude-rev" (family anthropic) and "gpt-rev" (openai);
judges claude-judge (anthropic), gpt-judge (openai), gemini-judge (google). Four injections per
reviewer, on copy 1 of papers P1 (i1 numerics S1, i2 numerics S3) and P2 (i3 citations S2,
i4 citations S3). First-round votes (A, O, G = anthropic, openai, google judges):

    claude-rev  i1 Y Y Y   i2 Y N N   i3 Y Y N   i4 N N N   outcomes: D M D M
    gpt-rev     i1 Y Y Y   i2 N Y Y   i3 N N N   i4 N Y N   outcomes: D D M D (i4 reversed on escalation)

Clean copies: claude-rev raised 3 flags on P1 (false positive, ambiguous, confirmed) and 1 on P2
(false positive); gpt-rev none.
"""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pytest

from scoring.papers.metrics import paper_audit_metrics
from storage.schemas import METRIC_SCHEMA, VERDICT_SCHEMA, table_from_rows

JUDGES = (("claude-judge", "anthropic"), ("gpt-judge", "openai"), ("gemini-judge", "google"))
INJ = {"i1": ("P1", "numerics", "S1"), "i2": ("P1", "numerics", "S3"), "i3": ("P2", "citations", "S2"),
       "i4": ("P2", "citations", "S3")}
VOTES = {"claude-rev": {"i1": "YYY", "i2": "YNN", "i3": "YYN", "i4": "NNN"},
         "gpt-rev": {"i1": "YYY", "i2": "NYY", "i3": "NNN", "i4": "NYN"}}
OUTCOME = {"claude-rev": {"i1": "detected", "i2": "missed", "i3": "detected", "i4": "missed"},
           "gpt-rev": {"i1": "detected", "i2": "detected", "i3": "missed", "i4": "detected"}}
FAMILIES = {"claude-rev": "anthropic", "gpt-rev": "openai"}


def injection_row(system: str, paper: str, copy: int, unit: str, error_type: str, severity: str, outcome: str,
                  votes: str, run_id: str = "run-1") -> dict:
    """A VERDICT row of one injection; `votes` is one Y/N per judge of JUDGES ("" for none)."""
    vote_list = [{"judge": j, "family": f, "detected": c == "Y", "outcome": None, "confidence": 0.9,
                  "evidence": None, "reason": None, "role": "panel"} for (j, f), c in zip(JUDGES, votes, strict=False)]
    unanimous = len(set(votes)) == 1 if votes else None
    item = f"{paper}/copy-{copy}"
    detail = {"paper_id": paper, "copy": copy, "error_type": error_type, "severity": severity, "subtype": "x",
              "matched_by": "panel", "escalated": not unanimous if votes else False, "unanimous": unanimous}
    return {"run_id": run_id, "system": system, "item_id": item, "unit_id": f"{item}/{unit}",
            "unit_kind": "injection", "outcome": outcome, "votes_json": json.dumps(vote_list),
            "detail_json": json.dumps(detail)}


def flag_row(system: str, paper: str, n: int, outcome: str, flag_type: str, judge_outcomes: tuple[str, ...] = (),
             run_id: str = "run-1") -> dict:
    item = f"{paper}/copy-0"
    votes = [{"judge": j, "family": f, "detected": None, "outcome": o, "confidence": None, "evidence": None,
              "reason": None, "role": "panel"} for (j, f), o in zip(JUDGES, judge_outcomes, strict=False)]
    detail = {"paper_id": paper, "copy": 0, "flag_type": flag_type, "matched_by": "panel", "escalated": False,
              "unanimous": False}
    return {"run_id": run_id, "system": system, "item_id": item, "unit_id": f"{item}/f{n}", "unit_kind": "flag",
            "outcome": outcome, "votes_json": json.dumps(votes), "detail_json": json.dumps(detail)}


def small_verdicts() -> pa.Table:
    rows = []
    for system, votes in VOTES.items():
        for unit, v in votes.items():
            paper, t, s = INJ[unit]
            rows.append(injection_row(system, paper, 1, unit, t, s, OUTCOME[system][unit], v))
    rows += [flag_row("claude-rev", "P1", 1, "false_positive", "mathematics", ("false_positive", "false_positive")),
             flag_row("claude-rev", "P1", 2, "ambiguous", "general", ("ambiguous", "false_positive")),
             flag_row("claude-rev", "P1", 3, "confirmed_issue", "numerics", ("confirmed_issue", "confirmed_issue")),
             flag_row("claude-rev", "P2", 4, "false_positive", "mathematics", ("false_positive", "confirmed_issue"))]
    return table_from_rows(rows, VERDICT_SCHEMA)


@pytest.fixture(scope="module")
def metrics() -> dict[tuple[str, str, str], dict]:
    table = paper_audit_metrics(small_verdicts(), run_id="run-1", families=FAMILIES, n_interval=400, n_paired=400)
    assert table.schema.equals(METRIC_SCHEMA, check_metadata=False)
    out = {}
    for r in table.to_pylist():
        key = (r["system"], r["metric"], r["stratum"])
        assert key not in out, key
        out[key] = r
    return out


def value(metrics, system, metric, stratum="all"):
    return metrics[(system, metric, stratum)]["value"]


def test_detection_rates_by_reviewer_type_and_severity(metrics):
    assert value(metrics, "claude-rev", "detection_rate") == 0.5
    assert metrics[("claude-rev", "detection_rate", "all")]["n"] == 4
    assert value(metrics, "gpt-rev", "detection_rate") == 0.75
    assert value(metrics, "claude-rev", "detection_rate", "type=numerics") == 0.5
    assert value(metrics, "claude-rev", "detection_rate", "type=citations|severity=S2") == 1.0
    assert value(metrics, "gpt-rev", "detection_rate", "severity=S3") == 1.0
    empty = metrics[("claude-rev", "detection_rate", "type=general|severity=S1")]
    assert math.isnan(empty["value"]) and empty["n"] == 0
    r = metrics[("claude-rev", "detection_rate", "all")]
    # P1: 1/2, P2: 1/2 -> every resample gives 0.5
    assert (r["ci_low"], r["ci_high"]) == (0.5, 0.5)
    g = metrics[("gpt-rev", "detection_rate", "all")]
    # P1: 2/2, P2: 1/2 -> resamples 1.0, 0.5, 0.75
    assert (g["ci_low"], g["ci_high"]) == (0.5, 1.0)
    assert value(metrics, "gpt-rev", "unscored_injections") == 0


def test_paired_difference_between_reviewers(metrics):
    # claude - gpt = 0.5 - 0.75; resamples {P1,P1}: 0.5 - 1 = -0.5, {P2,P2}: 0.5 - 0.5 = 0 (reversal),
    # {P1,P2}: -0.25. Reversal probability 1/4.
    assert value(metrics, "claude-rev vs gpt-rev", "detection_diff") == pytest.approx(-0.25)
    assert value(metrics, "claude-rev vs gpt-rev", "sign_reversal") == pytest.approx(0.25, abs=0.07)


def test_false_positive_rate_on_clean_copies(metrics):
    assert value(metrics, "claude-rev", "false_positive_rate") == 0.5
    assert metrics[("claude-rev", "false_positive_rate", "all")]["n"] == 4
    assert value(metrics, "claude-rev", "false_positive_count") == 2
    assert value(metrics, "claude-rev", "ambiguous_count") == 1
    assert value(metrics, "claude-rev", "false_positive_rate", "type=mathematics") == 1.0
    none = metrics[("gpt-rev", "false_positive_rate", "all")]
    assert math.isnan(none["value"]) and none["n"] == 0
    # P1: 1 of 3, P2: 1 of 1 -> resamples 2/6, 2/2, 2/4
    r = metrics[("claude-rev", "false_positive_rate", "all")]
    assert r["ci_low"] == pytest.approx(1 / 3) and r["ci_high"] == 1.0


def test_judge_agreement(metrics):
    # Votes over the 8 units: A = 11101000, G = 10001100. both yes 2, A only 2, G only 1, both no 3:
    # p_o = 5/8, p_e = .5*.375 + .5*.625 = .5, kappa = .25; phi = (2*3 - 2*1)/sqrt(4*4*3*5) = 4/sqrt(240).
    st = "panel=detection|pair=claude-judge vs gemini-judge"
    assert value(metrics, "all", "cohen_kappa", st) == pytest.approx(0.25)
    assert value(metrics, "all", "pearson_r", st) == pytest.approx(4 / math.sqrt(240))
    assert metrics[("all", "cohen_kappa", st)]["n"] == 8
    # paper bootstrap: P1's table (YY 2, YN 1, NY 1) twice -> p_o .5, p_e .75^2 + .25^2 = .625,
    # kappa -1/3; P2's (YN 1, NN 3) twice -> p_o .75, p_e .75, kappa 0; {P1, P2} -> .25.
    k = metrics[("all", "cohen_kappa", st)]
    assert k["ci_low"] == pytest.approx(-1 / 3) and k["ci_high"] == pytest.approx(0.25)
    # FP panel (claude-judge vs gpt-judge): kappa 0.2 (see test_paper_statistics), r on "false positive": 0.
    st = "panel=false_positive|pair=claude-judge vs gpt-judge"
    assert value(metrics, "all", "cohen_kappa", st) == pytest.approx(0.2)
    assert value(metrics, "all", "pearson_r", st) == pytest.approx(0.0)


def test_unanimity_escalation_and_reversal(metrics):
    # unanimous: claude i1 i4, gpt i1 i3 -> 4/8; escalated: the other 4; gpt i4 (majority missed,
    # final detected) is the one reversal among 4 escalations.
    assert value(metrics, "all", "unanimity_rate") == 0.5
    assert value(metrics, "all", "escalation_rate") == 0.5
    assert value(metrics, "all", "escalation_reversal_rate") == 0.25
    assert value(metrics, "gpt-rev", "escalation_reversal_rate") == 0.5
    assert value(metrics, "all", "first_round_unanimity_rate") == 0.5


def test_self_preference_deltas(metrics):
    # claude-rev: r_A = 3/4, r_O = 2/4, r_G = 1/4 -> delta = .75 - (.5 + .25)/2 = .375
    # gpt-rev:    r_A = 1/4, r_O = 3/4, r_G = 2/4 -> delta = .75 - (.25 + .5)/2 = .375
    # pooled: A .5, O .625, G .375. Adjusted: claude .25 - (-.125 - .125)/2 = .375;
    # gpt .125 - (-.25 + .125)/2 = .1875. Means .375 and .28125.
    assert value(metrics, "claude-rev", "self_preference_delta") == pytest.approx(0.375)
    assert value(metrics, "gpt-rev", "self_preference_delta") == pytest.approx(0.375)
    assert value(metrics, "claude-rev", "self_preference_delta_adjusted") == pytest.approx(0.375)
    assert value(metrics, "gpt-rev", "self_preference_delta_adjusted") == pytest.approx(0.1875)
    assert value(metrics, "all", "self_preference_delta_mean") == pytest.approx(0.375)
    assert value(metrics, "all", "self_preference_delta_adjusted_mean") == pytest.approx(0.28125)
    assert metrics[("all", "self_preference_delta_mean", "all")]["n"] == 2
    assert value(metrics, "all", "judge_detect_rate", "judge_family=openai") == pytest.approx(0.625)


def test_lone_dissenter_shares(metrics):
    # splits: claude i2 (lone Y = anthropic, own family, not detected), i3 (lone N = google, detected);
    # gpt i2 (lone N = anthropic, detected), i4 (lone Y = openai, own family, not detected).
    m = "lone_dissenter_same_family_share"
    assert value(metrics, "claude-rev", m) == 0.5
    assert value(metrics, "all", m) == 0.5 and metrics[("all", m, "all")]["n"] == 4
    assert value(metrics, "all", m, "split=detected") == 0.0
    assert value(metrics, "all", m, "split=not_detected") == 1.0


def test_leave_one_judge_out_strict_and_lenient(metrics):
    # claude-rev without google: i2 (A Y, O N) is a tie -> strict .5, lenient .75;
    # without anthropic: i3 (O Y, G N) ties -> strict .25, lenient .5.
    m = "loo_detection_rate"
    assert value(metrics, "claude-rev", m, "drop=google|ties=strict") == 0.5
    assert value(metrics, "claude-rev", m, "drop=google|ties=lenient") == 0.75
    assert value(metrics, "claude-rev", m, "drop=anthropic|ties=strict") == 0.25
    assert value(metrics, "claude-rev", m, "drop=anthropic|ties=lenient") == 0.5
    # gpt-rev without openai, strict: i1 only -> .25, against the reported .75
    assert value(metrics, "gpt-rev", m, "drop=openai|ties=strict") == 0.25
    assert value(metrics, "gpt-rev", "loo_change", "drop=openai|ties=strict") == pytest.approx(-0.5)


def test_neighbour_severity_coupling(metrics):
    # neighbours: i1 -> S3, i2 -> S1, i3 -> S3, i4 -> S2. Pooled over reviewers:
    # neighbour S3: i1 (D, D), i3 (D, M) -> 3/4; S2: i4 (M, D) -> 1/2; S1: i2 (M, D) -> 1/2.
    assert value(metrics, "all", "neighbour_detection_rate", "neighbour=S3") == 0.75
    assert value(metrics, "all", "neighbour_detection_rate", "neighbour=S2") == 0.5
    assert value(metrics, "all", "neighbour_detection_rate", "neighbour=S1") == 0.5
    assert value(metrics, "all", "neighbour_diff", "contrast=S3-S2") == pytest.approx(0.25)
    assert value(metrics, "all", "neighbour_detection_rate", "severity=S3|neighbour=S2") == 0.5


def test_inter_reviewer_agreement(metrics):
    # claude D M D M, gpt D D M D: both 1, claude only 1, gpt only 2, neither 0.
    # phi = (1*0 - 1*2)/sqrt(2*2*3*1) = -2/sqrt(12); p_o = .25, p_e = .5*.75 + .5*.25 = .5, kappa = -.5.
    pair = "claude-rev vs gpt-rev"
    assert value(metrics, pair, "pearson_r") == pytest.approx(-2 / math.sqrt(12))
    assert value(metrics, pair, "cohen_kappa") == pytest.approx(-0.5)
    # paper rates: claude (.5, .5) is constant -> r undefined
    assert math.isnan(value(metrics, pair, "paper_rate_r"))
    # dispersion: gpt P1 2/2, P2 1/2, q = .75: chi2 = 2 * .25 / (2 * .75 * .25) = 4/3 over 1 df;
    # claude 1/2 and 1/2 sit on the pooled rate: 0
    assert value(metrics, "gpt-rev", "dispersion_ratio") == pytest.approx(4 / 3)
    assert value(metrics, "claude-rev", "dispersion_ratio") == 0.0
    assert value(metrics, "all", "mean_dispersion_ratio") == pytest.approx(2 / 3)


def test_trend_from_pooled_reviewers_matches_the_hand_table():
    # Two reviewers, three papers, numerics at S1, S2, S3 (one copy each). Pooled rates per paper:
    # [0, .5, 1], [.5, .5, 1], [.5, 0, 1] -> mid-ranks as in the 3x3 hand table: L = 40.5, p = 5/108.
    hits = {"P1": ("NN", "YN", "YY"), "P2": ("YN", "NY", "YY"), "P3": ("NY", "NN", "YY")}
    rows = []
    for paper, per_sev in hits.items():
        for sev, (a, b) in zip(("S1", "S2", "S3"), per_sev, strict=True):
            for system, c in (("r1", a), ("r2", b)):
                rows.append(injection_row(system, paper, int(sev[1]), f"n-{sev}", "numerics", sev,
                                          "detected" if c == "Y" else "missed", ""))
    table = paper_audit_metrics(table_from_rows(rows, VERDICT_SCHEMA), run_id="t", n_interval=50, n_paired=50)
    got = {(r["system"], r["metric"], r["stratum"]): r for r in table.to_pylist()}
    assert got[("all", "trend_page_l", "type=numerics")]["value"] == pytest.approx(40.5)
    assert got[("all", "trend_p", "type=numerics")]["value"] == pytest.approx(5 / 108)
    # only one pooled test is defined (the other types have no rows), so BH leaves p as is
    assert got[("all", "trend_p_bh", "type=numerics")]["value"] == pytest.approx(5 / 108)
    assert got[("all", "trend_reject", "type=numerics")]["value"] == 1.0
    assert got[("all", "trend_p", "type=general")]["n"] == 0
    # per reviewer: r1 hits [0, 1, 1], [1, 0, 1], [0, 0, 1]; BH over its defined tests
    assert got[("r1", "trend_page_l", "type=numerics")]["n"] == 3


def test_unscored_injections_stay_out_of_the_rate():
    rows = [injection_row("r", "P1", 1, "a", "numerics", "S1", "detected", "YYY"),
            injection_row("r", "P1", 1, "b", "numerics", "S2", "unscored", ""),
            injection_row("r", "P1", 1, "c", "numerics", "S3", "missed", "NNN")]
    table = paper_audit_metrics(table_from_rows(rows, VERDICT_SCHEMA), run_id="t", n_interval=50, n_paired=50)
    got = {(r["system"], r["metric"], r["stratum"]): r for r in table.to_pylist()}
    assert got[("r", "detection_rate", "all")]["value"] == 0.5
    assert got[("r", "detection_rate", "all")]["n"] == 2
    assert got[("r", "unscored_injections", "all")]["value"] == 1
    assert got[("r", "unscored_injections", "all")]["n"] == 3


def test_empty_table_gives_an_empty_metric_table():
    table = paper_audit_metrics(VERDICT_SCHEMA.empty_table(), run_id="t")
    assert table.schema.equals(METRIC_SCHEMA, check_metadata=False)
    rows = table.to_pylist()
    assert all(math.isnan(r["value"]) and r["n"] == 0 for r in rows)


def test_grouped_reviewers_detect_when_any_member_does():
    # claude D M D M and gpt D D M D -> the group detects all four; a third reviewer stays apart
    from scoring.papers.agreement import grouped_reviewers
    from scoring.papers.verdicts import read_paper_verdicts

    extra = injection_row("other", "P1", 1, "i1", "numerics", "S1", "missed", "NNN")
    rows = small_verdicts().to_pylist() + [extra]
    pv = grouped_reviewers(read_paper_verdicts(table_from_rows(rows, VERDICT_SCHEMA)),
                           {"single-llm": ["claude-rev", "gpt-rev"]})
    assert sorted({v.system for v in pv.injections}) == ["other", "single-llm"]
    assert [v.outcome for v in pv.injections if v.system == "single-llm"] == ["detected"] * 4
    table = paper_audit_metrics(table_from_rows(rows, VERDICT_SCHEMA), run_id="t", n_interval=50, n_paired=50,
                                agreement_groups={"single-llm": ["claude-rev", "gpt-rev"]})
    got = {(r["system"], r["metric"], r["stratum"]): r for r in table.to_pylist()}
    # one shared injection (i1): the group detected it, "other" missed it -> kappa undefined with n = 1
    assert ("other vs single-llm", "cohen_kappa", "all") in got
    assert ("claude-rev vs gpt-rev", "cohen_kappa", "all") not in got

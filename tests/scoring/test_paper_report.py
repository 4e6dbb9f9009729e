"""`write_paper_report` over the hand-worked table and over a seeded synthetic audit of 15 papers."""

from __future__ import annotations

import csv
import json

import numpy as np
import pyarrow as pa

from scoring.papers.metrics import paper_audit_metrics
from scoring.papers.report import write_paper_report
from scoring.papers.verdicts import ERROR_TYPES, SEVERITIES
from storage.schemas import VERDICT_SCHEMA, table_from_rows
from tests.scoring.test_paper_metrics import FAMILIES, JUDGES, flag_row, injection_row, small_verdicts

REVIEWERS = {"claude-structured": ("anthropic", 0.55), "gpt-structured": ("openai", 0.65),
             "gemini-free": ("google", 0.35), "mechanical": ("none", 0.25)}


def synthetic_verdicts(seed: int = 1, n_papers: int = 15) -> pa.Table:
    """A severity-balanced audit: 3 injected copies per paper, each type at each severity once per paper;
    detection probability rises with severity; judges vote with 5% noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_papers):
        paper = f"2607.{p:05d}"
        ease = rng.normal(0, 0.1)
        sched = {t: rng.permutation(SEVERITIES) for t in ERROR_TYPES}
        for copy in (1, 2, 3):
            for system, (_, base) in REVIEWERS.items():
                for t in ERROR_TYPES:
                    sev = sched[t][copy - 1]
                    prob = np.clip(base + ease + 0.15 * (SEVERITIES.index(sev) - 1), 0.02, 0.98)
                    truth = rng.random() < prob
                    votes = "".join("Y" if (truth ^ (rng.random() < 0.05)) else "N" for _ in JUDGES)
                    outcome = "detected" if votes.count("Y") >= 2 else "missed"
                    rows.append(injection_row(system, paper, copy, t, t, str(sev), outcome, votes))
        for system, (_, base) in REVIEWERS.items():
            for k in range(int(rng.integers(0, 5))):
                o = rng.choice(["false_positive", "confirmed_issue", "ambiguous"], p=[0.2 + base / 4, 0.6 - base / 4,
                                                                                    0.2])
                jo = tuple(str(o) if rng.random() < 0.7 else "ambiguous" for _ in JUDGES)
                rows.append(flag_row(system, paper, k, str(o), str(rng.choice(ERROR_TYPES)), jo))
    return table_from_rows(rows, VERDICT_SCHEMA)


def test_report_files_for_the_small_table(tmp_path):
    paths = write_paper_report(tmp_path, small_verdicts(), run_id="run-1", families=FAMILIES, n_interval=200,
                               n_paired=200)
    names = {p.name for p in paths}
    assert names == {"paper_report.md", "paper_report.html", "paper_metrics.csv", "dose_response.png",
                     "false_positive_rate.png", "judge_agreement_detection.png",
                     "judge_agreement_false_positive.png", "reviewer_agreement.png"}
    for p in paths:
        assert p.exists() and p.stat().st_size > 0
    md = (tmp_path / "paper_report.md").read_text()
    # detection row of claude-rev: total 0.500 with its interval, 4 scored, 0 unscored
    # 4 injections, 4 flags: intervals over so few units are marked, and the section says why
    assert "| claude-rev | 0.500 [0.500, 0.500] † |" in md
    assert "| claude-rev | 0.500 [0.333, 1.000] † | 2 | 1 | 4 |" in md  # FP rate, FP, ambiguous, flags
    assert "† n < 10: too few units for the 95% interval to mean much" in md
    assert "Page's L" in md and "lone" in md
    assert (tmp_path / "paper_report.html").read_text().count("<table>") >= 8
    with (tmp_path / "paper_metrics.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert any(r["metric"] == "self_preference_delta" and float(r["value"]) == 0.375 for r in rows)


def test_report_of_a_synthetic_audit(tmp_path):
    verdicts = synthetic_verdicts()
    fam = {s: f for s, (f, _) in REVIEWERS.items()}
    metrics = paper_audit_metrics(verdicts, run_id="synthetic", families=fam, n_interval=500, n_paired=1000,
                                  n_permutations=2000)
    got = {(r["system"], r["metric"], r["stratum"]): r for r in metrics.to_pylist()}
    # the generator makes detection rise with severity: the pooled trend is significant for most types
    rejected = sum(got[("all", "trend_reject", f"type={t}")]["value"] for t in ERROR_TYPES)
    assert rejected >= 2
    # 15 papers x 3 copies x 4 types per reviewer
    assert got[("gpt-structured", "detection_rate", "all")]["n"] == 180
    # the noisy judges agree strongly (5% noise each): kappa well above 0.6
    kappas = [r["value"] for k, r in got.items() if k[1] == "cohen_kappa" and k[2].startswith("panel=detection")]
    assert len(kappas) == 3 and min(kappas) > 0.6
    # no self-preference was generated: the mean delta's interval covers 0
    m = got[("all", "self_preference_delta_mean", "all")]
    assert m["ci_low"] <= 0 <= m["ci_high"] and m["n"] == 3
    paths = write_paper_report(tmp_path, verdicts, run_id="synthetic", metrics=metrics)
    assert all(p.exists() for p in paths)
    assert json.dumps(sorted(p.name for p in paths))


def test_the_rendered_report_reads_without_field_names_and_renders_alone(tmp_path):
    """Issue 21 item 7: readable measure and subset names (the CSV keeps the field names), figures inside
    the HTML (MLflow's artifact viewer shows one file, no siblings), intervals over n < 10 marked."""
    import re

    from scoring.papers.metrics import paper_audit_metrics as metrics_of
    from scoring.papers.report import METRIC_LABELS, stratum_label
    from scoring.report_context import ReportContext

    verdicts = small_verdicts()
    metrics = metrics_of(verdicts, run_id="run-1", families=FAMILIES, n_interval=200, n_paired=200)
    context = ReportContext(corpus="papers-6", snapshot="snap-1", code_revision="abc1234", run_ids=("run-1",))
    write_paper_report(tmp_path, verdicts, run_id="run-1", metrics=metrics, context=context)
    md = (tmp_path / "paper_report.md").read_text()
    html = (tmp_path / "paper_report.html").read_text()
    raw = {r["metric"] for r in metrics.to_pylist()} - {"all"}
    for page in (md, html):
        cells = re.findall(r"<td>([^<]*)</td>", page) if page is html else [
            c.strip() for line in page.splitlines() if line.startswith("| ") for c in line.split("|")]
        leaked = sorted(raw & set(cells))
        assert not leaked, leaked  # before: "detection_diff", "sign_reversal", "trend_page_l", ... as cells
    assert "| claude-rev vs gpt-rev | detection difference | all | -0.250 [-0.500, 0.000] † | 2 |" in md
    assert "| all (pooled) | Cohen's kappa | panel detection, claude-judge vs gpt-judge |" in md
    assert stratum_label("type=numerics|severity=S2") == "type numerics, severity S2"
    assert all("_" not in label for label in METRIC_LABELS.values())
    # figures: data URIs only, never a path to a sibling file
    sources = re.findall(r"<img src='([^']*)'", html)
    assert len(sources) == 5 and all(s.startswith("data:image/png;base64,") for s in sources)
    # small n flagged in both pages, with what the mark means; provenance and glossary like the citation report
    assert "† n < 10: too few units" in md and "† n &lt; 10: too few units" in html
    for page in (md, html):
        assert "snap-1" in page and "abc1234" in page and "Glossary" in page

"""The CiteIntegrity audit's experiments and its job, on a small Crossref-shaped record set made here."""

from __future__ import annotations

import gzip
import json
import random
from difflib import SequenceMatcher
from pathlib import Path

import numpy as np
import pytest

from corpora.citations.citeintegrity_suite import SuiteConfig, build_suite, records_from_rows
from corpora.citations.normalization import normalize_text
from index.readers import crossref_row
from jobs.citeintegrity_audit import main as audit_main
from verifiers.citations.citeintegrity_experiments import (
    STRONG_RULES,
    SuiteIndex,
    core,
    delete_budget,
    feature_table,
    partitions,
    sufficient_condition,
    weight_vectors,
)

WORDS = {
    "ai": ["learning", "neural", "transformer", "reinforcement", "language", "vision", "graph", "attention",
           "intelligence", "machine", "robust", "federated"],
    "health": ["epidemiology", "cohort", "vaccination", "mortality", "public", "health", "obesity", "influenza",
               "screening", "surveillance", "maternal", "tobacco"],
}
FAMILIES = ["Van Gool", "VAN DEN DRIESSCHE", "Martinez Hinarejos", "O'Neill", "de la Cruz", "García-López",
            "Nguyen", "Smith", "Le Roux", "Okafor", "Tanaka", "Kowalski", "Müller", "Ivanova", "Singh", "Haddad"]


def crossref_works(n_per_stratum: int = 16, seed: int = 5, prefix: str = "10.5555") -> list[dict]:
    rng = random.Random(seed)
    works = []
    for stratum, words in WORDS.items():
        for k in range(n_per_stratum):
            title = " ".join(rng.sample(words, 5)).capitalize() + f" study {stratum} {k}"
            families = rng.sample(FAMILIES, rng.randint(1, 4))
            venue = "Journal of Machine Learning &amp; Systems" if stratum == "ai" else "Public Health Reports"
            works.append({"DOI": f"{prefix}/{stratum}.{k}", "type": "journal-article", "title": [title],
                          "author": [{"family": f, "given": "A."} for f in families],
                          "container-title": [venue], "published-print": {"date-parts": [[2019 + k % 7]]}})
    works.append({"DOI": "10.5555/old", "title": ["Archival reinforcement learning records"], "type": "journal-article",
                  "author": [{"family": "Old", "given": "B."}], "container-title": ["Old Journal"],
                  "published-print": {"date-parts": [[1998]]}})
    return works


@pytest.fixture(scope="module")
def suite():
    rows = [crossref_row(w) for w in crossref_works()]
    return build_suite(records_from_rows(rows, year_window=(2019, 2025)), SuiteConfig(year_window=(2019, 2025)))


def test_records_keep_deposited_families_and_strata(suite):
    assert {"Martinez Hinarejos", "VAN DEN DRIESSCHE", "Van Gool"} <= {a for c in suite.records.values() for a in c.authors}
    assert set(suite.strata.values()) == {"Artificial Intelligence", "Public Health"}
    assert "10.5555/old" not in suite.records


def test_title_search_is_the_exact_sequence_matcher_argmax(suite):
    index = SuiteIndex(suite)
    for title in ("learning neural graph", "cohort mortality study health 3", "zzzz", suite.records[index.ids[4]].title[:-3]):
        q = normalize_text(title)
        sims = [SequenceMatcher(None, q, t, autojunk=False).ratio() for t in index.norm_titles]
        best = max(sims)
        expected = min(rid for rid, s in zip(index.ids, sims, strict=True) if s == best)
        assert index.best_title(title) == (expected, pytest.approx(best))
        rid, _ = index.best_title(title, exclude=expected)
        assert rid != expected


def test_features_and_sufficient_condition(suite):
    index = SuiteIndex(suite)
    t = feature_table(suite, index)
    acceptable = t.z == 1
    # every acceptable instance retrieves its own source and matches authors, year and venue exactly
    assert t.correct[acceptable].all()
    assert (t.x[acceptable][:, 1:] == 1).all()
    sc = sufficient_condition(t)
    test = t.partition == "test"
    typo_title = t.x[test & (t.variant == "title_typo"), 0]
    assert sc["epsilon"] == pytest.approx(float((1 - typo_title).max()))
    assert sc["acceptable_other_fields_one"] and sc["year_shift_year_zero"]
    assert sc["beta_w"] == pytest.approx(min(0.46 * sc["delta_t"], 0.24 * sc["delta_a"], 0.18))
    assert sc["holds"] == (0.46 * sc["epsilon"] < sc["beta_w"])


def test_partitions_and_weights_are_seeded_and_counted(suite):
    t = feature_table(suite, SuiteIndex(suite))
    runs = partitions(t, suite, seeds=(1, 2, 3))
    assert [r["seed"] for r in runs["runs"]] == [1, 2, 3]
    for rule in STRONG_RULES:
        s = runs["summary"][rule]
        assert s["runs"] == 3 and 0 <= s["perfect"] <= 3 and s["min_f1"] <= s["median_f1"] <= s["max_f1"] <= 1
    a, b = weight_vectors(t, n=40), weight_vectors(t, n=40)
    assert a == b and a["vectors"] == 40 and a["perfect"] <= 40 and a["min_f1"] <= a["max_f1"]


def test_deletion_budgets_are_nested():
    title = "Reinforcement learning for epidemic control"
    kept = [delete_budget(title, b, "10.5555/x") for b in (1, 2, 4, 8, 16)]
    letters = sum(c.isalpha() for c in normalize_text(title))
    assert [sum(c.isalpha() for c in k) for k in kept] == [letters - b for b in (1, 2, 4, 8, 16)]
    assert kept == [delete_budget(title, b, "10.5555/x") for b in (1, 2, 4, 8, 16)]


def test_core_reports_every_section(suite):
    res = core(suite, bootstrap=20, weights=10, partition_seeds=(7, 8))
    assert {"primary", "family_transfer", "sufficient_condition", "omission", "stress", "weights", "partitions",
            "pair_similarity", "composition", "audit"} <= set(res)
    assert not any(res["audit"].values())
    p = res["primary"]
    assert p["rules"]["doi_membership"]["recall"] == pytest.approx(0.6)  # the two DOI-free acceptable variants
    assert p["rules"]["normalized_exact"]["false_accepts"] == 0
    assert res["omission"]["suffixed_unresolved"] == res["records"]
    assert res["omission"]["queries"] == 2 * p["test_sources"]
    assert [r["seed"] for r in res["partitions"]["runs"]] == [7, 8]
    ps = res["pair_similarity"]
    assert ps["q1"] <= ps["median"] <= ps["q3"] <= ps["max"]


def test_audit_job_writes_one_report(tmp_path: Path):
    cache = tmp_path / "cache"
    cache.mkdir()
    works = crossref_works()
    for k in range(0, len(works), 5):
        (cache / f"{k:03d}.json").write_text(json.dumps(works[k: k + 5]))
    dump = tmp_path / "part.json.gz"
    dump.write_bytes(gzip.compress(json.dumps({"items": crossref_works(4, seed=9, prefix="10.6666")}).encode()))
    out = tmp_path / "out"
    rc = audit_main(["--crossref-cache", str(cache), "--crossref", str(dump), "--bootstrap", "20", "--weights", "20", "--partitions", "2",
                     "--out-dir", str(out), "--html"])
    assert rc == 0
    report = json.loads((out / "report.json").read_text())
    assert report["config"]["year_window"] == [2019, 2025] and report["config"]["near_title_cutoff"] == 0.95
    assert report["config"]["input_records"] == 40  # 32 + 8 from the dump part; the 1998 work is outside the window
    assert "near_title_ablation" in report and report["near_title_ablation"]["pairs"] >= report["primary_suite"]["pairs"]
    md = (out / "report.md").read_text()
    assert len(report["primary_suite"]["partitions"]["runs"]) == 2
    for heading in ("Primary test (Table 3", "Table 4", "Table 5", "Table 6", "Table 7", "Table 8", "weight vectors",
                    "Sufficient separation", "Pair title similarity", "Near-title ablation"):
        assert heading in md
    assert "0.462 / 0.462" in md  # DOI membership F1, paper / ours: 3 of 5 acceptable accepted, all 5 negatives
    assert (out / "report.html").read_text().startswith("<!doctype html>")
    assert np.isfinite(report["primary_suite"]["weights"]["min_f1"])


def test_audit_job_refuses_an_empty_record_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    (tmp_path / "c").mkdir()
    assert audit_main(["--crossref-cache", str(tmp_path / "c"), "--out-dir", str(tmp_path / "o")]) == 2
    assert "0 usable records" in capsys.readouterr().err
    assert audit_main(["--out-dir", str(tmp_path / "o")]) == 2


def test_a_row_scores_the_same_alone_and_in_a_batch():
    """Thresholds come from batch scores, stress queries are scored alone; a title tied with the
    threshold title (similarities are rationals like 12/13) must land on the same side."""
    from verifiers.citations.citeintegrity_experiments import score_rows

    rng = np.random.default_rng(3)
    rows = np.vstack([rng.random((300, 4)), [[12 / 13, 1, 1, 1]]])
    for rule, logistic in (("weighted", None), ("logistic", ([5.1, 3.3, 2.2, 0.7], -9.4)), ("equal_weights", None)):
        batch = score_rows(rule, rows, logistic)
        assert all(score_rows(rule, [r], logistic)[0] == batch[k] for k, r in enumerate(rows))

"""The bundled sample corpus: regenerated identically by the generator, loadable, audited, balanced."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from corpora.citations.audit import audit_corpus
from corpora.citations.generator import SAMPLE_CORPUS_PATH, CorpusConfig, corpus_jsonl, generate_corpus
from corpora.citations.hallmark import load_hallmark_jsonl
from corpora.citations.real_reference import REAL_REFERENCES_PATH, load_references
from corpora.citations.taxonomy import hallmark_taxonomy
from tests.helpers.paths import REPO_ROOT

JOB = REPO_ROOT / "jobs" / "generate_corpus.py"


def _lines() -> list[dict]:
    return [json.loads(line) for line in SAMPLE_CORPUS_PATH.read_text(encoding="utf-8").splitlines()]


def test_regenerating_gives_the_identical_file():
    assert corpus_jsonl(generate_corpus(load_references(), CorpusConfig())) == SAMPLE_CORPUS_PATH.read_text(encoding="utf-8")


@pytest.mark.integration
def test_job_check_passes_and_detects_a_tampered_copy(tmp_path):
    # another hash seed in the child: no set or dict ordering may leak into the output
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    ok = subprocess.run([sys.executable, str(JOB), "--check"], capture_output=True, text=True, cwd=REPO_ROOT, env=env)
    assert ok.returncode == 0, ok.stderr
    assert "up to date (100 lines)" in ok.stdout
    tampered = tmp_path / "sample.jsonl"
    tampered.write_text(SAMPLE_CORPUS_PATH.read_text(encoding="utf-8").replace('"VALID"', '"HALLUCINATED"', 1), encoding="utf-8")
    bad = subprocess.run([sys.executable, str(JOB), "--check", "--out", str(tampered)], capture_output=True, text=True, cwd=REPO_ROOT)
    assert bad.returncode == 1 and "differs" in bad.stderr
    # writing elsewhere with another seed gives a different, equally sized corpus
    other = tmp_path / "other.jsonl"
    wrote = subprocess.run([sys.executable, str(JOB), "--seed", "3", "--out", str(other)], capture_output=True, text=True, cwd=REPO_ROOT)
    assert wrote.returncode == 0, wrote.stderr
    assert len(other.read_text(encoding="utf-8").splitlines()) == 100
    assert other.read_text(encoding="utf-8") != SAMPLE_CORPUS_PATH.read_text(encoding="utf-8")


def test_composition():
    rows = _lines()
    assert len(rows) == 100
    assert Counter(r["label"] for r in rows) == {"VALID": 50, "HALLUCINATED": 50}
    tax = hallmark_taxonomy()
    per_type = Counter(r["hallucination_type"] for r in rows if r["label"] == "HALLUCINATED")
    assert set(per_type) == set(tax.names) and min(per_type.values()) >= 3
    assert Counter(r["difficulty_tier"] for r in rows if r["label"] == "HALLUCINATED") == {
        1: sum(per_type[t.name] for t in tax.by_tier(1)),
        2: sum(per_type[t.name] for t in tax.by_tier(2)),
        3: sum(per_type[t.name] for t in tax.by_tier(3)),
    }
    assert len({r["bibtex_key"] for r in rows}) == 100


def test_loads_through_the_hallmark_loader_without_errors():
    loaded = load_hallmark_jsonl(SAMPLE_CORPUS_PATH, corpus="citations_sample")
    assert loaded.errors == []
    assert loaded.items.num_rows == 100 and loaded.truth.num_rows == 100
    truth = {row["item_id"]: row for row in loaded.truth.to_pylist()}
    for r in _lines():
        assert truth[r["bibtex_key"]]["label"] == r["label"]
        assert truth[r["bibtex_key"]]["hallucination_type"] == r["hallucination_type"]
    payload = json.loads(loaded.items.to_pylist()[0]["payload_json"])
    assert "label" not in payload and "hallucination_type" not in json.dumps(payload)


def test_construction_audits_pass_on_the_bundled_corpus():
    entries = generate_corpus(load_references(), CorpusConfig())
    assert [g.entry for g in entries] == _lines()  # the audited entries are the bundled ones
    report = audit_corpus(entries, load_references(), hallmark_taxonomy())
    assert report.ok, report.failures


def test_no_identical_input_with_opposite_labels_in_the_file():
    by_input: dict[str, set[str]] = {}
    for r in _lines():
        by_input.setdefault(json.dumps([r["bibtex_type"], r["fields"]], sort_keys=True), set()).add(r["label"])
    assert all(len(labels) == 1 for labels in by_input.values())


def test_real_reference_list_is_well_formed():
    refs = load_references(REAL_REFERENCES_PATH)
    assert len(refs) >= 55
    assert Counter(r.domain for r in refs).keys() == {"ml", "statistics", "cs", "physics", "biology"}
    for r in refs:
        assert r.authors and all(len(a.split()) >= 2 for a in r.authors), r.ref_id
        assert 1900 < r.year <= 2026
        if r.doi:
            assert re.fullmatch(r"10\.\d{4,5}/\S+", r.doi), r.ref_id
        if r.arxiv_id:
            assert re.fullmatch(r"\d{4}\.\d{4,5}", r.arxiv_id), r.ref_id
            assert r.arxiv_year and r.arxiv_year <= r.year
            assert r.arxiv_id[:2] == str(r.arxiv_year)[2:], r.ref_id  # arXiv ids start with the year
        if r.preprint_only:
            assert r.arxiv_id and r.venue is None
        else:
            assert r.venue
    assert sum(r.preprint_only for r in refs) >= 4  # enough for preprint_as_published
    assert sum(bool(r.doi) for r in refs) >= 40

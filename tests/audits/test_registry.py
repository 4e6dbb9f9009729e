"""The audit registry (issue 17): `audit = "..."` picks one `Audit`; an unknown kind is a clear
bad-input error naming the known ones; every kind implements the same five steps."""

from __future__ import annotations

import inspect

import pytest

from audits import AUDITS, UnknownAudit, get_audit
from audits.base import Audit
from audits.citations import CitationAudit
from audits.papers import PaperAudit
from tests.helpers.run_job import run_job_in_process

STEPS = ("build_corpus", "run_systems", "adjudicate", "score", "publish")


def test_registry_picks_each_kind_by_its_config_name():
    assert set(AUDITS) >= {"citations", "paper_audit"}
    assert isinstance(get_audit("citations"), CitationAudit)
    assert isinstance(get_audit("paper_audit"), PaperAudit)
    for name in AUDITS:
        audit = get_audit(name)
        assert audit.name == name  # the registry key and the audit agree
        assert isinstance(audit, Audit)
        for step in STEPS:  # the same signatures as the protocol's, so the driver needs no branch
            assert list(inspect.signature(getattr(audit, step)).parameters) == \
                list(inspect.signature(getattr(Audit, step)).parameters)[1:], (name, step)


def test_corpus_on_the_cluster_only_where_it_is_built_there():
    assert get_audit("citations").corpus_needs_cluster is False  # a bad file is named before storage
    assert get_audit("paper_audit").corpus_needs_cluster is True  # injection runs on Ray


def test_unknown_kind_names_the_field_and_the_known_kinds():
    with pytest.raises(UnknownAudit) as err:
        get_audit("reviewz")
    assert str(err.value) == "config field 'audit': unknown audit kind 'reviewz'; known: " + ", ".join(AUDITS)


def test_verifier_registry_finds_systems_in_subpackages():
    from verifiers import registered

    systems = registered()
    assert {"field_match", "prescreen", "doi_only"} <= set(systems)  # verifiers/citations/
    assert {"paper_reviewer_llm", "paper_reviewer_mechanical", "paper_review_import"} <= set(systems)  # reviewers/


def test_run_corpus_rejects_an_unknown_audit_before_any_work(tmp_path, monkeypatch):
    config = tmp_path / "bad.toml"
    config.write_text('audit = "reviewz"\nstorage = "runs"\n')
    result = run_job_in_process("run_corpus.py", "--config", str(config), "--tracking-uri", "none", cwd=tmp_path,
                                monkeypatch=monkeypatch)  # fmt: skip
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    assert "error: config field 'audit': unknown audit kind 'reviewz'; known: citations, paper_audit" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "runs").exists()

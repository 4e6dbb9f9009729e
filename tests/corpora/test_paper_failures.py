"""Issue 21, item 6: a paper folder that cannot be loaded is that paper's failure, not the run's.

A folder without a main file (and one whose `\\input` names a missing file) is named with its folder,
file and line, counted in the corpus report, and the other papers are injected and audited.
"""

from __future__ import annotations

import json

import pytest

from corpora.papers.audit_corpus import build_paper_audit_corpus
from corpora.papers.corpus_report import corpus_report
from tests.helpers.paths import REPO_ROOT

EXAMPLE = REPO_ROOT / "corpora" / "samples" / "papers" / "example-paper"


def broken_folders(tmp_path):
    no_main = tmp_path / "no-main"
    no_main.mkdir()
    (no_main / "notes.tex").write_text("Just notes, no \\documentclass.\n", encoding="utf-8")
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "main.tex").write_text("\\documentclass{article}\n\\begin{document}\nWe measured 42 things.\n"
                                      "\\input{sections/results}\n\\end{document}\n", encoding="utf-8")  # fmt: skip
    return no_main, partial


def test_a_folder_without_main_file_fails_alone_and_a_missing_input_is_named(tmp_path):
    no_main, partial = broken_folders(tmp_path)
    corpus = build_paper_audit_corpus([EXAMPLE, no_main, partial], seed=7, check_compile=False)
    papers = {json.loads(r["payload_json"])["paper_id"] for r in corpus.items.to_pylist()}
    assert papers == {"example-paper", "partial"}  # the others go on
    report = corpus_report(corpus)
    assert report.papers == 3 and [f["paper"] for f in report.papers_failed] == ["no-main"]
    assert "no .tex file with \\documentclass" in report.papers_failed[0]["reason"]
    assert report.papers_missing_inputs == [{"paper": "partial", "folder": str(partial), "file": "main.tex", "line": 4,
                                             "missing": "sections/results"}]  # fmt: skip
    lines = report.lines()
    assert lines[0] == "papers: 3 (1 failed, 1 with missing input files)"
    assert f"  partial: {partial}/main.tex:4: 'sections/results' not found, not loaded" in lines
    assert any(line.startswith(f"  failed paper no-main ({no_main}):") for line in lines)
    errors = [str(e) for e in corpus.errors]
    assert any(e.startswith(f"{no_main}:0: paper 'no-main' not loaded") for e in errors)
    assert f"{partial / 'main.tex'}:4: 'sections/results' not found in the paper folder: not loaded" in errors


def test_the_corpus_report_counts_cells(tmp_path):
    corpus = build_paper_audit_corpus([EXAMPLE], seed=3, check_compile=False)
    report = corpus_report(corpus)
    assert report.cells == 12 and report.injections + report.cells_skipped == 12
    assert report.cells_filled_as_drawn + report.cells_substituted + report.cells_skipped == 12
    assert report.copies == 4 and report.hand_checked is None


def test_inject_papers_goes_on_and_prints_the_failure(tmp_path, capsys):
    from jobs.inject_papers import main

    no_main, partial = broken_folders(tmp_path)
    rc = main([str(EXAMPLE), str(no_main), str(partial), "--seed", "7", "--out", str(tmp_path / "out")])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "paper_audit@" in out.out and "8 copies" in out.out
    assert "papers: 3 (1 failed, 1 with missing input files)" in out.out
    saved = json.loads((tmp_path / "out" / "corpus_report.json").read_text())
    assert [f["paper"] for f in saved["papers_failed"]] == ["no-main"]
    assert main([str(no_main), "--seed", "7", "--out", str(tmp_path / "out2")]) == 2  # nothing loaded: bad input


@pytest.mark.integration  # a Ray run: the session's head
def test_a_config_with_one_broken_paper_folder_still_audits_the_others(ray_head, tmp_path, monkeypatch, capsys):
    from jobs.run_corpus import EXIT_OK
    from storage.store import Store
    from tests.helpers.run_job import run_corpus_on_head

    no_main, partial = broken_folders(tmp_path)
    config = tmp_path / "papers.toml"
    config.write_text('audit = "paper_audit"\nsnapshot = "2026-11-29"\nshard_size = 4\nworkers = 1\nbootstrap = 0\n'
                      'tracking_uri = "none"\n[corpus]\nname = "papers_with_a_broken_one"\n'
                      f'[papers]\npaths = ["{EXAMPLE}", "{no_main}", "{partial}"]\nseed = 7\ncheck_compile = false\n'
                      '[[systems]]\nname = "paper_reviewer_mechanical"\n', encoding="utf-8")  # fmt: skip
    rc = run_corpus_on_head(ray_head, monkeypatch, ["--config", str(config), "--storage", str(tmp_path / "runs")], tmp_path)
    out = capsys.readouterr()
    assert rc == EXIT_OK, out.out[-3000:] + out.err[-3000:]
    assert "[papers] papers: 3 (1 failed, 1 with missing input files)" in out.out
    assert "paper 'no-main' not loaded" in out.err
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if "@" in p.name]
    store = Store(str(tmp_path / "runs"))
    outputs = store.read_outputs(run_dir.name)
    assert sorted(outputs.column("item_id").to_pylist()) == sorted(
        [f"example-paper/copy-{k}" for k in range(4)] + [f"partial/copy-{k}" for k in range(4)])
    manifest = store.read_json(run_dir.name, "manifest.json")
    assert [f["paper"] for f in manifest["corpus"]["summary"]["papers_failed"]] == ["no-main"]
    assert manifest["corpus"]["summary"]["report"]["papers_missing_inputs"][0]["line"] == 4

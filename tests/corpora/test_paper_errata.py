"""Issue 15, natural errors: errata mined from a paper repository's history
(the repository: tests/helpers/errata_repo.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpora.papers.errata import ErrataSource, add_natural_track, errata_copies, find_errata
from tests.helpers.errata_repo import (
    CITE_RIGHT,
    CITE_WRONG,
    EQ_WRONG,
    NUM_RIGHT,
    NUM_WRONG,
    PAPER,
    build_errata_repo,
)
from tests.helpers.errata_repo import git as _git

pytestmark = [pytest.mark.integration, pytest.mark.requires_shared_data]


@pytest.fixture
def paper_repo(tmp_path) -> tuple[Path, dict[str, str]]:
    return build_errata_repo(tmp_path)


def test_the_equation_and_number_fixes_are_found_and_nothing_else(paper_repo):
    repo, shas = paper_repo
    scan = find_errata(ErrataSource(str(repo), folder="paper", paper_id="lloyd"))
    found = {(e.commit, e.kind, e.erroneous, e.corrected) for e in scan.errata}
    assert found == {(shas["equation"], "equation", "-", "+"), (shas["number"], "number", "12", "11"),
                     (shas["citation"], "citation", CITE_WRONG, CITE_RIGHT)}
    by = {e.kind: e for e in scan.errata}
    # the truth is the exact span of the error in the earlier copy, at the parent commit
    eq = by["equation"]
    assert eq.parent == shas["first"] and eq.error_type == "mathematics"
    old = _git(repo, "show", f"{eq.parent}:paper/lloyd.tex")
    assert old[eq.changed_start : eq.changed_end + 11] == "- |M| \\log n"
    assert by["number"].parent == shas["comment"] and by["number"].error_type == "numerics"
    # each ignored commit is ignored for its own reason
    assert scan.rejected["in a comment or unprinted block"] >= 1
    assert scan.rejected["blocks too different (a rewrite)"] + scan.rejected[
        "edit longer than 120 characters"] + scan.rejected["more than 3 edits in one hunk (a rewrite)"] >= 1
    assert scan.rejected["lines added or removed only (new or dropped text)"] >= 1
    assert scan.rejected["same replacement in many places (a notation change)"] == 2
    assert scan.rejected["citation key renamed (the old key resolved)"] == 1
    assert scan.commits_scanned == 9  # the commit outside the paper folder is not read


def test_each_fix_becomes_a_copy_of_the_earlier_text_with_its_truth(paper_repo):
    repo, shas = paper_repo
    source = ErrataSource(str(repo), folder="paper", paper_id="lloyd")
    items, truth = errata_copies(source, find_errata(source), "papers")
    assert [i["item_id"] for i in items] == [f"lloyd/erratum-{shas[k][:10]}" for k in ("citation", "number", "equation")]
    for item, t in zip(items, truth, strict=True):
        payload, extra = json.loads(item["payload_json"]), json.loads(t["extra_json"])
        assert extra["track"] == "natural" and not extra["clean"] and payload["main_file"] == "main.tex"
        assert "gpss.bib" in payload["files"]
        [inj] = extra["injections"]
        text = payload["files"][inj["file"]]
        assert text[inj["changed_start"] : inj["changed_end"]] == inj["changed_injected"]
        assert inj["mechanism"] == "natural" and inj["subtype"].startswith("natural:")
    eq_copy = json.loads(items[2]["payload_json"])["files"]["main.tex"]
    assert EQ_WRONG in eq_copy and NUM_WRONG in eq_copy  # the paper as it stood before the fix
    assert json.loads(truth[2]["extra_json"])["erratum"]["commit"] == shas["equation"]
    assert json.loads(truth[0]["extra_json"])["injections"][0]["error_type"] == "citations"


def test_the_natural_track_joins_a_corpus_and_names_its_revision_in_the_version(paper_repo):
    from corpora.papers.audit_corpus import build_paper_audit_corpus

    repo, shas = paper_repo
    base = build_paper_audit_corpus([PAPER], seed=3, check_compile=False)
    both, scans = add_natural_track(base, [{"repo": str(repo), "folder": "paper", "paper_id": "lloyd"}])
    assert both.num_items == base.num_items + 3 and scans["lloyd"].head == shas["head"]
    assert both.version != base.version
    tracks = [json.loads(t).get("track", "injected")
              for t in both.truth.column("extra_json").to_pylist()]
    assert tracks.count("natural") == 3
    _git(repo, "commit", "-q", "--allow-empty", "-m", "later")
    again, _ = add_natural_track(base, [{"repo": str(repo), "folder": "paper", "paper_id": "lloyd"}])
    assert again.version != both.version  # another revision of the history is another corpus
    with pytest.raises(ValueError, match=r"errata_repos: '.*nope'"):
        add_natural_track(base, [{"repo": str(repo / "nope")}])
    with pytest.raises(ValueError, match="not an option"):
        add_natural_track(base, [{"repo": str(repo), "rev": "--output=/tmp/x"}])
    with pytest.raises(ValueError, match="unknown field"):
        add_natural_track(base, [{"repo": str(repo), "branch": "main"}])


def test_a_config_names_errata_repositories_relative_to_itself_and_the_job_builds_the_track(paper_repo, tmp_path):
    from audits import get_audit
    from audits.base import configure
    from audits.papers import build_paper_corpus
    from cluster.run_config import load_config

    repo, _ = paper_repo
    conf_dir = repo.parent / "configs"
    conf_dir.mkdir()
    config_file = conf_dir / "audit.toml"
    config_file.write_text('audit = "paper_audit"\n[papers]\nerrata_repos = [{ repo = "../repo", folder = "paper", '
                           'paper_id = "lloyd", max_copies = 1 }]\n')
    config = configure(get_audit("paper_audit"), load_config(config_file))
    assert config.papers.errata_repos[0]["repo"] == str(repo.resolve())
    corpus = build_paper_corpus(config, None)  # errata only: no injected papers, no proposer
    assert corpus.num_items == 1  # max_copies: the most recent fixing commit only
    [extra] = [json.loads(t) for t in corpus.truth.column("extra_json").to_pylist()]
    assert extra["track"] == "natural" and extra["injections"][0]["changed_injected"] == CITE_WRONG
    assert NUM_RIGHT in json.loads(corpus.items.column("payload_json")[0].as_py())["files"]["main.tex"]

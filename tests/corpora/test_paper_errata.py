"""Issue 15, natural errors: errata mined from a paper repository's history.

A small git repository is built in tmp from a shared real paper (never copied into this
repository): its first commit holds the paper with a sign error in the BIC equation and a wrong
sunspot period; later commits fix each of them, and others must be ignored (a comment edit, a
rewritten abstract, a new section, a notation change made in two places).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from corpora.paper_errata import ErrataSource, add_natural_track, errata_copies, find_errata
from tests.helpers.paths import SHARED_DATA

PAPER = SHARED_DATA / "papers" / "auto-stat-description-2014"
pytestmark = pytest.mark.requires_shared_data

EQ_RIGHT, EQ_WRONG = r"-2 \log p(D\given M) + |M| \log n", r"-2 \log p(D\given M) - |M| \log n"
NUM_RIGHT, NUM_WRONG = "approximately 11-year sunspot cycle", "approximately 12-year sunspot cycle"
COMMENT = "% Check: the 4 panels use 3 + 4 colours\n"
ABSTRACT_OLD = "This paper presents the beginnings of an automatic statistician, focusing on regression problems."
ABSTRACT_NEW = ("We describe a system that searches 7 kinds of kernels and writes a report in plain English, for "
                "regression data sets of all sizes.")
NEW_SECTION = ("\\section{Extra experiments}\nWe ran 25 more data sets; the mean error fell by 3.5 per cent:\n"
               "\\begin{equation}\nE = \\frac{1}{n}\\sum_i e_i^2\n\\end{equation}\n\n")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                          check=True, capture_output=True, text=True).stdout


def _commit(repo: Path, edit, message: str) -> str:
    tex = repo / "paper" / "lloyd.tex"
    text = tex.read_text(encoding="utf-8")
    new = edit(text)
    assert new != text, message
    tex.write_text(new, encoding="utf-8")
    _git(repo, "commit", "-qam", message)
    return _git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def paper_repo(tmp_path) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "repo"
    (repo / "paper").mkdir(parents=True)
    for name in ("lloyd.tex", "gpss.bib"):
        shutil.copyfile(PAPER / name, repo / "paper" / name)
    (repo / "README.md").write_text("a paper\n")
    tex = repo / "paper" / "lloyd.tex"
    text = tex.read_text(encoding="utf-8")
    assert text.count(EQ_RIGHT) == 1 and text.count(NUM_RIGHT) == 1
    text = text.replace(EQ_RIGHT, EQ_WRONG).replace(NUM_RIGHT, NUM_WRONG)
    text = text.replace("\\section{Introduction}\n", "\\section{Introduction}\n" + COMMENT)
    tex.write_text(text, encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "first draft")
    shas = {"first": _git(repo, "rev-parse", "HEAD").strip()}
    shas["equation"] = _commit(repo, lambda t: t.replace(EQ_WRONG, EQ_RIGHT), "Fix the sign of the BIC penalty")
    shas["comment"] = _commit(repo, lambda t: t.replace("4 panels use 3 + 4", "5 panels use 3 - 4"), "note to self")
    shas["number"] = _commit(repo, lambda t: t.replace(NUM_WRONG, NUM_RIGHT), "The sunspot cycle is 11 years")
    shas["rewrite"] = _commit(repo, lambda t: t.replace(ABSTRACT_OLD, ABSTRACT_NEW), "Rewrite the abstract")
    shas["section"] = _commit(repo, lambda t: t.replace("\\section{Related work}", NEW_SECTION + "\\section{Related work}"),
                              "Add a section")
    shas["notation"] = _commit(repo, lambda t: t.replace(r"\kCP(\kernel_1, \kernel_2) = \kernel_1 \times",
                                                        r"\kCP(\kappa_1, \kernel_2) = \kappa_1 \times"),
                               "Rename kernel_1")
    (repo / "notes.txt").write_text("numbers 1 2 3\n")
    _git(repo, "add", "notes.txt")
    _git(repo, "commit", "-qm", "notes outside the paper")
    shas["head"] = _git(repo, "rev-parse", "HEAD").strip()
    return repo, shas


def test_the_equation_and_number_fixes_are_found_and_nothing_else(paper_repo):
    repo, shas = paper_repo
    scan = find_errata(ErrataSource(str(repo), folder="paper", paper_id="lloyd"))
    found = {(e.commit, e.kind, e.erroneous, e.corrected) for e in scan.errata}
    assert found == {(shas["equation"], "equation", "-", "+"), (shas["number"], "number", "12", "11")}
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
    assert scan.commits_scanned == 7  # the commit outside the paper folder is not read


def test_each_fix_becomes_a_copy_of_the_earlier_text_with_its_truth(paper_repo):
    repo, shas = paper_repo
    source = ErrataSource(str(repo), folder="paper", paper_id="lloyd")
    items, truth = errata_copies(source, find_errata(source), "papers")
    assert [i["item_id"] for i in items] == [f"lloyd/erratum-{shas['number'][:10]}",
                                             f"lloyd/erratum-{shas['equation'][:10]}"]
    for item, t in zip(items, truth, strict=True):
        payload, extra = json.loads(item["payload_json"]), json.loads(t["extra_json"])
        assert extra["track"] == "natural" and not extra["clean"] and payload["main_file"] == "main.tex"
        assert "gpss.bib" in payload["files"]
        [inj] = extra["injections"]
        text = payload["files"][inj["file"]]
        assert text[inj["changed_start"] : inj["changed_end"]] == inj["changed_injected"]
        assert inj["mechanism"] == "natural" and inj["subtype"].startswith("natural:")
    eq_copy = json.loads(items[1]["payload_json"])["files"]["main.tex"]
    assert EQ_WRONG in eq_copy and NUM_WRONG in eq_copy  # the paper as it stood before the fix
    assert json.loads(truth[1]["extra_json"])["erratum"]["commit"] == shas["equation"]


def test_the_natural_track_joins_a_corpus_and_names_its_revision_in_the_version(paper_repo):
    from corpora.paper_audit_corpus import build_paper_audit_corpus

    repo, shas = paper_repo
    base = build_paper_audit_corpus([PAPER], seed=3, check_compile=False)
    both, scans = add_natural_track(base, [{"repo": str(repo), "folder": "paper", "paper_id": "lloyd"}])
    assert both.num_items == base.num_items + 2 and scans["lloyd"].head == shas["head"]
    assert both.version != base.version
    tracks = [json.loads(t).get("track", "injected")
              for t in both.truth.column("extra_json").to_pylist()]
    assert tracks.count("natural") == 2
    _git(repo, "commit", "-q", "--allow-empty", "-m", "later")
    again, _ = add_natural_track(base, [{"repo": str(repo), "folder": "paper", "paper_id": "lloyd"}])
    assert again.version != both.version  # another revision of the history is another corpus
    with pytest.raises(ValueError, match=r"errata_repos: '.*nope'"):
        add_natural_track(base, [{"repo": str(repo / "nope")}])
    with pytest.raises(ValueError, match="unknown field"):
        add_natural_track(base, [{"repo": str(repo), "branch": "main"}])

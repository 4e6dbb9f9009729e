"""A small git repository of a real paper's history with real-looking errata, built in tmp (issue 15).

The paper is a shared real paper (../shared/data/papers, never copied into this repository); the
first commit holds it with a sign error in the BIC equation, a wrong sunspot period and a citation
key that names no bibliography entry; later commits fix each of them, and others must be ignored
by the errata loader: a comment edit, a rewritten abstract, a new section, a notation change made
in two places, a key renamed in both the text and the bibliography, a file outside the paper.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.helpers.paths import SHARED_DATA

PAPER = SHARED_DATA / "papers" / "auto-stat-description-2014"

EQ_RIGHT, EQ_WRONG = r"-2 \log p(D\given M) + |M| \log n", r"-2 \log p(D\given M) - |M| \log n"
NUM_RIGHT, NUM_WRONG = "approximately 11-year sunspot cycle", "approximately 12-year sunspot cycle"
COMMENT = "% Check: the 4 panels use 3 + 4 colours\n"
ABSTRACT_OLD = "This paper presents the beginnings of an automatic statistician, focusing on regression problems."
ABSTRACT_NEW = ("We describe a system that searches 7 kinds of kernels and writes a report in plain English, for "
                "regression data sets of all sizes.")
CITE_RIGHT, CITE_WRONG = "schwarz1978estimating", "schwartz1978estimating"  # the wrong key names no entry
RENAMED = ("klenske2012nonparametric", "klenske2013nonparametric")  # renamed in .tex and .bib: no error
NEW_SECTION = ("\\section{Extra experiments}\nWe ran 25 more data sets; the mean error fell by 3.5 per cent:\n"
               "\\begin{equation}\nE = \\frac{1}{n}\\sum_i e_i^2\n\\end{equation}\n\n")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                          check=True, capture_output=True, text=True).stdout


def _commit(repo: Path, edit, message: str) -> str:
    tex = repo / "paper" / "lloyd.tex"
    text = tex.read_text(encoding="utf-8")
    new = edit(text)
    assert new != text, message
    tex.write_text(new, encoding="utf-8")
    git(repo, "commit", "-qam", message)
    return git(repo, "rev-parse", "HEAD").strip()


def build_errata_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "repo"
    (repo / "paper").mkdir(parents=True)
    for name in ("lloyd.tex", "gpss.bib"):
        shutil.copyfile(PAPER / name, repo / "paper" / name)
    (repo / "README.md").write_text("a paper\n")
    tex = repo / "paper" / "lloyd.tex"
    text = tex.read_text(encoding="utf-8")
    assert text.count(EQ_RIGHT) == 1 and text.count(NUM_RIGHT) == 1
    text = text.replace(EQ_RIGHT, EQ_WRONG).replace(NUM_RIGHT, NUM_WRONG).replace(CITE_RIGHT, CITE_WRONG)
    text = text.replace("\\section{Introduction}\n", "\\section{Introduction}\n" + COMMENT)
    tex.write_text(text, encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first draft")
    shas = {"first": git(repo, "rev-parse", "HEAD").strip()}
    shas["equation"] = _commit(repo, lambda t: t.replace(EQ_WRONG, EQ_RIGHT), "Fix the sign of the BIC penalty")
    shas["comment"] = _commit(repo, lambda t: t.replace("4 panels use 3 + 4", "5 panels use 3 - 4"), "note to self")
    shas["number"] = _commit(repo, lambda t: t.replace(NUM_WRONG, NUM_RIGHT), "The sunspot cycle is 11 years")
    shas["rewrite"] = _commit(repo, lambda t: t.replace(ABSTRACT_OLD, ABSTRACT_NEW), "Rewrite the abstract")
    shas["section"] = _commit(repo, lambda t: t.replace("\\section{Related work}", NEW_SECTION + "\\section{Related work}"),
                              "Add a section")
    shas["notation"] = _commit(repo, lambda t: t.replace(r"\kCP(\kernel_1, \kernel_2) = \kernel_1 \times",
                                                        r"\kCP(\kappa_1, \kernel_2) = \kappa_1 \times"),
                               "Rename kernel_1")
    shas["citation"] = _commit(repo, lambda t: t.replace(CITE_WRONG, CITE_RIGHT), "Fix a citation key")
    bib = repo / "paper" / "gpss.bib"
    bib.write_text(bib.read_text(encoding="utf-8").replace(*RENAMED), encoding="utf-8")
    shas["rename"] = _commit(repo, lambda t: t.replace(*RENAMED), "Rename a bib key")
    (repo / "notes.txt").write_text("numbers 1 2 3\n")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-qm", "notes outside the paper")
    shas["head"] = git(repo, "rev-parse", "HEAD").strip()
    return repo, shas

"""A LaTeX paper from a snippet of body text, and the injection label check run on it, for tests
that pin a validity rule with the real sentence that showed it."""

from corpora.papers.injectors_core import Proposal
from corpora.papers.label_check import label_mismatch
from corpora.papers.latex_paper import load_latex_paper
from corpora.papers.subtypes import paper_subtypes

HEAD = "\\documentclass{article}\n\\begin{document}\n"
TAIL = "\n\\end{document}\n"


def paper_of(tmp_path, body: str):
    (tmp_path / "main.tex").write_text(HEAD + body + TAIL, encoding="utf-8")
    return load_latex_paper(tmp_path)


def check(tmp_path, body: str, original: str, injected: str, subtype: str) -> str | None:
    """Why the label check refuses `original` -> `injected` as `subtype` in the snippet, or None."""
    paper = paper_of(tmp_path, body)
    return label_mismatch(paper, Proposal("main.tex", original, injected, "r"), paper_subtypes().get(subtype))

"""Issue 15: a reviewer reads the paper in reading order, without .bib, comments or \\iffalse blocks."""

from __future__ import annotations

import pytest

from adjudication.papers.detection import DetectionMatcher
from corpora.papers.latex_paper import load_latex_paper, reading_order_text, unprinted_at
from storage.records import PaperReview
from tests.helpers.paths import SHARED_DATA

FILES = {
    "main.tex": "\\documentclass{article}\n% \\input{ghost}\n\\begin{document}\n\\input{intro}\n"
                "Body text. \\iffalse hidden draft \\fi shown.\n\\include{sections/result}\n"
                "\\bibliography{refs}\n\\end{document}\n",
    "intro.tex": "Intro here. % private note\nMore intro.\n",
    "sections/result.tex": "The result is 42.\n",
    "refs.bib": "@article{a, title={A very long bibliography entry}}\n",
    "aaa_unused.tex": "never input\n",
}


def test_inputs_are_followed_in_place_and_unprinted_text_is_dropped():
    r = reading_order_text(FILES, "main.tex")
    t = r.text
    assert t.index("Intro here.") < t.index("Body text.") < t.index("shown.") < t.index("The result is 42.")
    for gone in ("@article", "private note", "hidden draft", "ghost", "never input", "\\input{intro}"):
        assert gone not in t
    # Every source character kept maps back exactly.
    src = FILES["sections/result.tex"].index("42")
    assert t[r.position("sections/result.tex", src):].startswith("42")
    assert r.position("main.tex", FILES["main.tex"].index("hidden")) is None
    assert unprinted_at(FILES["main.tex"], FILES["main.tex"].index("hidden"), FILES["main.tex"].index("hidden") + 6)


def test_truncation_records_what_was_shown_and_visibility_follows_it():
    r = reading_order_text(FILES, "main.tex")
    cut = r.text.index("The result")  # the reviewer saw everything before the result section
    spans = r.shown_spans(cut)
    assert {s["file"] for s in spans} == {"main.tex", "intro.tex"}
    intro = FILES["intro.tex"].index("More")
    result = FILES["sections/result.tex"].index("42")
    seen = {"file": "intro.tex", "start": intro - 3, "end": intro + 4, "changed_start": intro, "changed_end": intro + 4}
    cut_off = {"file": "sections/result.tex", "start": result, "end": result + 2, "changed_start": result,
               "changed_end": result + 2}
    review = PaperReview(review_text="", prompt_style="free_form", flags=[], shown_spans=spans)
    assert DetectionMatcher.visible(seen, review) is True
    assert DetectionMatcher.visible(cut_off, review) is False
    whole = PaperReview(review_text="", prompt_style="free_form", flags=[])
    assert DetectionMatcher.visible(cut_off, whole) is None  # the reviewer saw the whole copy
    assert DetectionMatcher.visible(cut_off, None) is None  # the reviewer failed


@pytest.mark.requires_shared_data
def test_real_paper_with_inputs_reads_intro_first_and_no_bibliography():
    paper = load_latex_paper(SHARED_DATA / "papers" / "cover-your-basis-2023")
    r = reading_order_text(paper.files, paper.main_file)
    # The body in \\input order, then the preamble's 85 kB macro file (alphabetical put appendices first).
    order = ["intro.tex", "methods.tex", "results.tex", "conclusion.tex", "appendicies.tex", "macros.tex"]
    starts = [r.text.index(f"% ==== file: {f} ====") for f in order]
    assert starts == sorted(starts) and starts[0] < 3000
    assert r.text.index("==== file: ms.tex (document)") < r.text.index("==== file: ms.tex (preamble)")
    assert "==== file: bib.bib" not in r.text and "@article{" not in r.text

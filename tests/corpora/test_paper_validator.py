"""The mechanical validator's rules, one by one."""

from corpora.papers.injectors import Proposal
from corpora.papers.validator import cite_keys, tex_engine, validate

FILES = {
    "main.tex": "Intro \\input{body}\n",
    "body.tex": "We follow \\citet{smith2019,jones2021} and find 12 apples. See \\ref{sec:a}. 12 pears.\n",
    "refs.bib": "@article{smith2019, title={X}}\n",
    "other.tex": "not compiled 5\n",
}
COMPILED = ["main.tex", "body.tex"]


def check(original, injected, file="body.tex", taken=()):
    return validate(FILES, COMPILED, Proposal(file, original, injected, "why"), list(taken))


def test_accepts_a_unique_change_and_says_compile_was_not_checked():
    res = check("find 12 apples", "find 21 apples")
    assert res.ok and not res.compile_checked
    assert res.reason == "no TeX engine: compile not checked"


def test_rejects_text_not_exactly_once():
    assert "occurs 2 times" in check("12", "21").reason
    assert "occurs 0 times" in check("13 apples", "14 apples").reason
    assert not check("", "x").ok


def test_rejects_files_outside_the_compiled_document():
    assert "not a LaTeX file of the compiled document" in check("5", "6", file="other.tex").reason
    assert not check("title={X}", "title={Y}", file="refs.bib").ok


def test_rejects_no_change():
    assert check("find 12 apples", "find 12 apples").reason == "replacement does not change the text"


def test_rejects_citation_key_changes():
    assert "citation key" in check("smith2019,jones2021", "smith2019").reason
    assert "citation key" in check("smith2019,", "smith2020,").reason
    assert "citation key" in check("find 12 apples", "find 12 apples \\cite{new}").reason
    assert check("\\citet{smith2019,jones2021}", "\\citep{smith2019,jones2021}").ok  # command changes, keys do not


def test_rejects_overlap_with_earlier_injection():
    start = FILES["body.tex"].index("find 12")
    assert "overlaps" in check("find 12 apples", "find 21 apples", taken=[("body.tex", start + 2, start + 4)]).reason
    assert check("find 12 apples", "find 21 apples", taken=[("main.tex", start + 2, start + 4)]).ok


def test_cite_keys_ignore_comments():
    assert cite_keys("\\cite{a, b} % \\cite{c}\n\\citep[p.~3]{a}") == {"a": 2, "b": 1}


def test_tex_engine_reports_none_or_a_name():
    assert tex_engine() in (None, "latexmk", "tectonic", "pdflatex")

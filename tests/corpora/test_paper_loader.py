"""The LaTeX paper loader on real papers (\\input recursion, byte-exactness) and on the bundled example."""

from pathlib import Path

import pytest

from corpora.papers.latex_paper import load_latex_paper
from tests.helpers.paths import REPO_ROOT, SHARED_DATA

PAPERS = SHARED_DATA / "papers"
EXAMPLE = REPO_ROOT / "corpora" / "samples" / "papers" / "example-paper"
needs_papers = pytest.mark.requires_shared_data


@needs_papers
def test_every_real_paper_loads_byte_exact():
    dirs = sorted(d for d in PAPERS.iterdir() if d.is_dir())
    assert len(dirs) == 14
    for d in dirs:
        paper = load_latex_paper(d)
        assert paper.bib_files, d.name
        for rel in paper.files:
            assert paper.raw_bytes(rel) == (d / rel).read_bytes(), (d.name, rel)


@needs_papers
def test_input_recursion_follows_the_main_file_only():
    paper = load_latex_paper(PAPERS / "euler-inversion-2025")
    assert paper.main_file == "preprint.tex"
    assert paper.compiled == ["preprint.tex", "information.tex", "variables.tex", "abstract-plain.tex",
                              "abstract.tex", "content.tex"]  # fmt: skip
    assert "manuscript.tex" not in paper.files  # a second document root is not part of the compiled paper
    assert [a.file for a in paper.index.abstract] == ["abstract.tex"]
    deep = load_latex_paper(PAPERS / "deep-limits-2014")
    assert "tables/architecture-comparison-aistats.tex" in deep.compiled
    assert len(deep.index.tables) == 12
    cover = load_latex_paper(PAPERS / "cover-your-basis-2023")
    assert cover.compiled[:3] == ["ms.tex", "macros.tex", "intro.tex"] and len(cover.compiled) == 7


@needs_papers
def test_rescience_metadata_and_bibliography():
    paper = load_latex_paper(PAPERS / "rescience-label-smoothing")
    assert "header.tex" in paper.missing
    assert "metadata.tex" in paper.compiled  # loaded by the missing template header
    assert paper.bib_files == ["bibliography.bib"]
    assert paper.index.abstract[0].file == "metadata.tex"


def test_example_paper_index():
    paper = load_latex_paper(EXAMPLE)
    idx = paper.index
    assert paper.main_file == "main.tex"
    assert paper.compiled == ["main.tex", "sections/intro.tex", "sections/method.tex", "sections/results.tex"]
    assert paper.bib_files == ["refs.bib"]
    assert len(idx.display_math) == 3
    assert len(idx.tables) == 1
    assert idx.cite_keys == {"smith2019", "jones2021"}
    assert set(idx.labels) == {"sec:intro", "sec:method", "sec:results", "eq:motion", "eq:solution", "eq:loss", "tab:runs"}
    assert {r.key for r in idx.references} == {"sec:results", "sec:method", "eq:solution", "tab:runs", "eq:loss"}
    abstract_numbers = [n.text for n in idx.numbers if n.in_abstract]
    assert abstract_numbers == ["24", "0.35", "12"]
    texts = [n.text for n in idx.numbers]
    assert "99" not in texts  # in a comment
    assert all("smith2019" not in idx.masked[f] for f in paper.compiled)
    sections = [title for _, title in idx.sections]
    assert sections == ["Introduction", "Method", "Results"]
    cited = [c for c in idx.citations if c.keys == ("smith2019", "jones2021")][0]
    sentence = paper.files[cited.sentence.file][cited.sentence.start : cited.sentence.end]
    assert sentence.startswith("Damped oscillators appear") and sentence.endswith(".")


def test_main_file_found_without_meta(tmp_path: Path):
    (tmp_path / "notes.tex").write_text("just notes\n")
    (tmp_path / "paper.tex").write_text("\\documentclass{article}\\begin{document}\\input{body}\\end{document}\n")
    (tmp_path / "body.tex").write_text("Body with 3 apples.\r\n")
    paper = load_latex_paper(tmp_path)
    assert paper.main_file == "paper.tex" and paper.compiled == ["paper.tex", "body.tex"]
    assert paper.files["body.tex"].endswith("\r\n")


def test_numbers_that_name_things_are_not_quantities(tmp_path: Path):
    body = (
        "\\documentclass{article}\n\\newcommand{\\nruns}{42}\n\\begin{document}\n"
        "On July 19, 1978 we ran 17 trials (see Fig.~8 and Table 3), in steps (1) and (2).\n"
        "\\includegraphics[width=0.98\\columnwidth]{figure-08.pdf}\n"
        "\\begin{tikzpicture}\\node at (2.1,0.9) {x};\\end{tikzpicture}\n"
        "Data at https://doi.org/10.5281/zenodo.806847 for KIC~11615890 with $Re = 200$ and $x^2$.\n"
        "\\end{document}\n"
    )
    (tmp_path / "main.tex").write_text(body)
    paper = load_latex_paper(tmp_path)
    assert [n.text for n in paper.index.numbers] == ["1978", "17", "200"]  # years stay indexed; injectors skip them

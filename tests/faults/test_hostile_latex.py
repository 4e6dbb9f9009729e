"""Issue 26: untrusted LaTeX must not make paper indexing quadratic or drop files silently.

A 160 KB preamble of unbalanced `\\def\\x{` lines with an unterminated `\\begin{equation}` took
112-134 s to index (every unbalanced brace and every opener without a closer rescanned the file);
a 3,000-deep `\\input` chain hit the recursion limit and lost files; a missing `\\input` was skipped
without a word."""

from __future__ import annotations

import time
from pathlib import Path

from corpora.papers.audit_corpus import _load_papers
from corpora.papers.latex_paper import (
    MAX_INPUT_DEPTH,
    PaperIndex,
    _SentenceBounds,
    load_latex_paper,
    reading_order_text,
    sentence_around,
)


def hostile(size: int = 160_000) -> str:
    head = "\\documentclass{article}\n"
    body = "\\begin{document}\n\\begin{equation}\nx = 1\n" + "The mean was 3.5 in 12 runs. " * 5 + "\n\\end{document}\n"
    return head + "\\def\\x{\n" * ((size - len(head) - len(body)) // 8) + body


def test_a_160kb_file_of_unbalanced_defs_and_an_open_equation_indexes_in_linear_time(tmp_path):
    (tmp_path / "main.tex").write_text(hostile())
    assert (tmp_path / "main.tex").stat().st_size > 159_000
    start = time.process_time()
    paper = load_latex_paper(tmp_path)
    index = paper.index
    reading = reading_order_text(paper.files, paper.main_file)
    spent = time.process_time() - start
    assert spent < 10, f"{spent:.1f} s of CPU"  # was 112-134 s; linear scans take well under 1 s
    assert index.skipped == {} and index.display_math == []  # the unterminated equation is no block
    # the unbalanced macro bodies run to the end of the file: nothing after them is prose
    assert index.numbers == [] and "3.5" in reading.text


def test_many_openers_without_closers_stay_linear(tmp_path):
    openers = ["\\begin{equation} ", "\\[ ", "\\( ", "$$ a ", "\\cite[ ", "\\label{ ", "\\section{ ", "\\iffalse ",
               "\\begin{comment} ", "{", "1 "]  # fmt: skip
    body = "".join(o * (12_000 // len(o)) for o in openers)
    (tmp_path / "main.tex").write_text("\\documentclass{article}\n\\begin{document}\n" + body + "\n\\end{document}\n")
    start = time.process_time()
    paper = load_latex_paper(tmp_path)
    index = paper.index
    reading_order_text(paper.files, paper.main_file)
    assert time.process_time() - start < 10
    assert index.skipped == {} and len(index.numbers) == 5999  # the first "1" follows a brace: not prose


def test_a_file_over_the_cpu_budget_is_recorded_not_indexed(tmp_path):
    (tmp_path / "main.tex").write_text(hostile(40_000))
    paper = load_latex_paper(tmp_path)
    index = PaperIndex.build(paper, cpu_budget_s=0.0)
    assert index.skipped == {"main.tex": "indexing took over 0 s of CPU: not indexed (too large)"}
    assert index.masked == {} and index.numbers == []


def test_sentence_bounds_match_the_character_walk():
    text = "A first. Sentence with 3.5 and {braces} 7.\n\nNew para 12! x" + " y" * 150 + "{ 9 } end. 1.\n}\n2 z"
    bounds = _SentenceBounds(text)
    for pos in range(len(text)):
        for end in (pos, min(len(text), pos + 3)):
            assert bounds.around(pos, end) == sentence_around(text, pos, end), (pos, end)


def chain(folder: Path, depth: int) -> None:
    (folder / "main.tex").write_text("\\documentclass{article}\n\\begin{document}\n\\input{f0}\n\\end{document}\n")
    for i in range(depth):
        (folder / f"f{i}.tex").write_text(f"File {i}.\n\\input{{f{i + 1}}}\n" if i < depth - 1 else "Last.\n")


def test_a_3000_deep_input_chain_is_cut_at_the_cap_and_reported(tmp_path):
    chain(tmp_path, 3000)
    paper = load_latex_paper(tmp_path)
    assert paper.compiled == ["main.tex"] + [f"f{i}.tex" for i in range(MAX_INPUT_DEPTH)]
    assert paper.refused == [] and paper.missing == []
    (warning,) = paper.warnings
    assert str(warning) == (f"f{MAX_INPUT_DEPTH - 1}.tex:2: \\input{{f{MAX_INPUT_DEPTH}}} nested more than "
                            f"{MAX_INPUT_DEPTH} files deep: 'f{MAX_INPUT_DEPTH}.tex' not loaded")  # fmt: skip
    reading = reading_order_text(paper.files, paper.main_file)  # no RecursionError either
    assert f"File {MAX_INPUT_DEPTH - 1}." in reading.text and f"\\input{{f{MAX_INPUT_DEPTH}}}" in reading.text


def test_a_chain_within_the_cap_loads_whole(tmp_path):
    chain(tmp_path, MAX_INPUT_DEPTH)
    paper = load_latex_paper(tmp_path)
    assert len(paper.compiled) == MAX_INPUT_DEPTH + 1 and paper.warnings == []


def test_a_missing_input_is_reported_by_file_and_line(tmp_path):
    paper_dir = tmp_path / "p"
    paper_dir.mkdir()
    (paper_dir / "main.tex").write_text("\\documentclass{article}\n\\begin{document}\nText.\n\\input{gone}\n\\end{document}\n")
    paper = load_latex_paper(paper_dir)
    assert [str(w) for w in paper.warnings] == ["main.tex:4: 'gone' not found in the paper folder: not loaded"]
    _, errors, _ = _load_papers([paper_dir])
    assert [str(e) for e in errors] == [f"{paper_dir / 'main.tex'}:4: 'gone' not found in the paper folder: not loaded"]


def test_statement_extraction_on_the_hostile_file_stays_linear():
    from checkers.latex_macros import parse_macros
    from verifiers.reviewers.statements import extract_statements

    text = hostile()
    start = time.process_time()
    macros = parse_macros(text)
    statements = extract_statements({"main.tex": text}, "main.tex")
    assert time.process_time() - start < 10  # was over 400 s (a brace scan to the end per `\def`)
    assert macros == {} and statements == []  # no definition closes, no display block ends

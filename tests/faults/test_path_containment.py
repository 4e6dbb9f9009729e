"""Every path a LaTeX paper names stays inside its folder: `..`, absolute paths and symlinks whose
target is outside are refused with a recorded reason and never read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from corpora.papers.audit_corpus import build_paper_audit_corpus
from corpora.papers.latex_paper import find_main_file, load_latex_paper

SECRET = "SECRET-OUTSIDE-THE-PAPER"
DOC = (
    "\\documentclass{article}\n\\begin{document}\n%s\nSome text with 3 numbers and 4 more.\n\\end{document}\n"
)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """(paper folder, a secret .tex and .bib outside it)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.tex").write_text(f"{SECRET}\n")
    (outside / "secret.bib").write_text(f"@misc{{s, title={{{SECRET}}}}}\n")
    (outside / "root.tex").write_text(DOC % SECRET)
    paper = tmp_path / "papers" / "p1"
    paper.mkdir(parents=True)
    return paper, outside


def read_anything(paper) -> str:
    return "".join(paper.files.values())


def test_input_climbing_out_is_refused(tree):
    paper_dir, _ = tree
    (paper_dir / "main.tex").write_text(DOC % "\n\\input{../../outside/secret}")
    paper = load_latex_paper(paper_dir)
    assert SECRET not in read_anything(paper) and paper.compiled == ["main.tex"]
    (refused,) = paper.refused
    assert (refused.file, refused.line, refused.target) == ("main.tex", 4, "../../outside/secret")
    assert refused.reason == "climbs out of the paper folder"
    assert str(refused) == "main.tex:4: '../../outside/secret' refused: climbs out of the paper folder"


def test_absolute_input_is_refused(tree):
    paper_dir, outside = tree
    (paper_dir / "main.tex").write_text(DOC % f"\\input{{{outside / 'secret.tex'}}}")
    paper = load_latex_paper(paper_dir)
    assert SECRET not in read_anything(paper)
    assert [(r.line, r.reason) for r in paper.refused] == [(3, "absolute path")]


def test_symlink_input_to_outside_is_refused(tree):
    paper_dir, outside = tree
    os.symlink(outside / "secret.tex", paper_dir / "sec.tex")
    os.symlink(outside, paper_dir / "linkdir")
    (paper_dir / "main.tex").write_text(DOC % "\\input{sec}\n\\input{linkdir/secret}")
    paper = load_latex_paper(paper_dir)
    assert SECRET not in read_anything(paper) and paper.compiled == ["main.tex"]
    assert [(r.target, r.reason) for r in paper.refused] == [
        ("sec", "a symlink to a file outside the paper folder"),
        ("linkdir/secret", "a symlink to a file outside the paper folder"),
    ]


def test_symlink_bibliography_to_outside_is_refused(tree):
    paper_dir, outside = tree
    os.symlink(outside / "secret.bib", paper_dir / "refs.bib")
    (paper_dir / "main.tex").write_text(DOC % "\\bibliography{refs}")
    paper = load_latex_paper(paper_dir)
    assert paper.bib_files == [] and SECRET not in read_anything(paper)
    assert [(r.target, r.reason) for r in paper.refused] == [
        ("refs", "a symlink to a file outside the paper folder")
    ]


def test_symlink_inside_the_folder_is_followed(tree):
    paper_dir, _ = tree
    (paper_dir / "sections").mkdir()
    (paper_dir / "sections" / "intro.tex").write_text("Intro text.\n")
    os.symlink(paper_dir / "sections" / "intro.tex", paper_dir / "intro.tex")
    (paper_dir / "main.tex").write_text(DOC % "\\input{intro}")
    paper = load_latex_paper(paper_dir)
    assert paper.refused == [] and paper.compiled == ["main.tex", "sections/intro.tex"]


def test_missing_input_fallback_never_reads_an_escaping_symlink(tree):
    """The fallback that loads orphan .tex files when an \\input is missing must not follow links out."""
    paper_dir, outside = tree
    (paper_dir / "main.tex").write_text(DOC % "\\input{header-we-do-not-have}")
    (paper_dir / "metadata.tex").write_text("Orphan metadata with 7 items.\n")
    os.symlink(outside / "secret.tex", paper_dir / "notes.tex")
    paper = load_latex_paper(paper_dir)
    assert paper.compiled == ["main.tex", "metadata.tex"] and SECRET not in read_anything(paper)
    assert [(r.file, r.reason) for r in paper.refused] == [
        ("notes.tex", "a symlink to a file outside the paper folder")
    ]

    corpus = build_paper_audit_corpus([paper_dir], seed=1, check_compile=False)
    payloads = corpus.items.column("payload_json").to_pylist()
    assert len(payloads) == 4 and not any(SECRET in p for p in payloads)
    assert [str(e) for e in corpus.errors] == [
        f"{paper_dir / 'notes.tex'}:0: 'notes.tex' refused: a symlink to a file outside the paper folder",
        f"{paper_dir / 'main.tex'}:3: 'header-we-do-not-have' not found in the paper folder: not loaded",
    ]


def test_main_file_outside_the_folder_is_refused(tree):
    paper_dir, outside = tree
    (paper_dir / "main.tex").write_text(DOC % "")
    with pytest.raises(ValueError, match="main file '../../outside/root.tex' refused: climbs out"):
        load_latex_paper(paper_dir, main_file="../../outside/root.tex")
    with pytest.raises(ValueError, match="refused: absolute path"):
        load_latex_paper(paper_dir, main_file=str(outside / "root.tex"))


def test_main_file_search_skips_escaping_symlinks(tree):
    paper_dir, outside = tree
    os.symlink(outside / "root.tex", paper_dir / "main.tex")
    with pytest.raises(FileNotFoundError, match="no .tex file with"):
        find_main_file(paper_dir)
    (paper_dir / "meta.json").write_text(json.dumps({"path_in_repo": "x/main.tex"}))
    with pytest.raises(FileNotFoundError):
        find_main_file(paper_dir)
    (paper_dir / "meta.json").write_text("{not json")
    (paper_dir / "paper.tex").write_text(DOC % "")
    assert find_main_file(paper_dir) == "paper.tex"


def test_two_paper_folders_with_one_name_get_distinct_ids(tree, tmp_path):
    paper_dir, _ = tree
    (paper_dir / "main.tex").write_text(DOC % "")
    twin = tmp_path / "elsewhere" / "p1"
    twin.mkdir(parents=True)
    (twin / "main.tex").write_text(DOC % "Other.")
    corpus = build_paper_audit_corpus([paper_dir, twin, paper_dir], seed=1, check_compile=False)
    ids = corpus.items.column("item_id").to_pylist()
    assert sorted(ids) == [f"{p}/copy-{k}" for p in ("p1", "p1~2") for k in range(4)]
    assert [e.reason for e in corpus.errors] == [
        "paper folder listed twice (already loaded as 'p1'): loaded once"
    ]


def test_symlink_loop_is_refused_not_a_traceback(tree):
    paper_dir, _ = tree
    os.symlink(paper_dir / "loop2.tex", paper_dir / "loop1.tex")
    os.symlink(paper_dir / "loop1.tex", paper_dir / "loop2.tex")
    (paper_dir / "main.tex").write_text(DOC % "\\input{loop1}")
    paper = load_latex_paper(paper_dir)
    assert paper.compiled == ["main.tex"]
    assert [r.target for r in paper.refused][:1] == ["loop1"]
    assert all(r.reason.startswith("cannot be resolved") for r in paper.refused)

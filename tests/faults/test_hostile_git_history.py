"""Issue 26: a hostile git history mined for errata writes nothing outside the miner's temporary
folder. Tree entries with `..`, absolute paths, `.git`, symlink or submodule modes, or blobs over
the size cap are refused unread and reported by path; the paper's good files are still mined."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from corpora.loaded_corpus import LoadedCorpus
from corpora.papers.errata import ErrataSource, add_natural_track, find_errata, paper_at_commit
from storage.schemas import ITEM_SCHEMA, TRUTH_SCHEMA, table_from_rows

pytestmark = pytest.mark.integration  # builds real git repositories (git subprocesses)

EVIL = "\\documentclass{article}\\begin{document}ATTACKER CONTENT\\end{document}\n"
WRONG = "\\documentclass{article}\n\\begin{document}\nThe cycle lasts about 12 years in our data.\n\\end{document}\n"
RIGHT = WRONG.replace("12 years", "11 years")


def git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                          input=stdin, check=True, capture_output=True).stdout.strip()  # fmt: skip


def blob(repo: Path, data: bytes) -> bytes:
    return git(repo, "hash-object", "-w", "--stdin", stdin=data)


def tree(repo: Path, entries: list[tuple[bytes, bytes, bytes]]) -> bytes:
    """A tree object written as given: `git mktree` refuses names with '/', git itself stores them."""
    raw = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(sha.decode()) for mode, name, sha in entries)
    return git(repo, "hash-object", "-t", "tree", "-w", "--literally", "--stdin", stdin=raw)


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch) -> tuple[Path, dict[str, str], Path, Path]:
    """(repo, commit shas, an absolute path the history names, the folder the miner's temp folders go in)."""
    work = tmp_path / "work"  # the miner's temp folders land here, so `../../` climbs into tmp_path
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    absolute = tmp_path / "abs" / "pwned.tex"
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    evil, big = blob(repo, EVIL.encode()), blob(repo, b"%" + b"x" * 5000 + b"\n")
    bad = [
        (b"100644", b"../../climbed.tex", evil),
        (b"100644", str(absolute).encode(), evil),
        (b"100644", b".git/hooks/post.tex", evil),
        (b"120000", b"link.tex", blob(repo, b"/etc/passwd")),
        (b"160000", b"sub.tex", evil),
        (b"100644", b"big.tex", big),
    ]
    shas = {}
    parent: list[str] = []
    for name, text in (("wrong", WRONG), ("right", RIGHT)):
        root = tree(repo, sorted([(b"100644", b"main.tex", blob(repo, text.encode())), *bad], key=lambda e: e[1]))
        shas[name] = git(repo, "commit-tree", "-m", f"{name} period", *parent, root.decode()).decode()
        parent = ["-p", shas[name]]
    git(repo, "update-ref", "HEAD", shas["right"])
    return repo, shas, absolute, work


def written_outside(tmp_path: Path, repo: Path) -> list[Path]:
    return [p for p in tmp_path.rglob("*") if p.is_file() and repo not in p.parents]


def test_hostile_tree_entries_are_refused_and_nothing_is_written_outside(hostile, tmp_path):
    repo, shas, absolute, work = hostile
    source = ErrataSource(str(repo), paper_id="p")
    paper = paper_at_commit(source, shas["wrong"], max_blob_bytes=4096)
    assert written_outside(tmp_path, repo) == [] and not absolute.exists()
    assert list(work.iterdir()) == []  # the temporary folder is gone too
    assert "ATTACKER" not in "".join(paper.files.values())
    assert sorted(paper.files) == ["main.tex"] and "12 years" in paper.files["main.tex"]
    reasons = {r.target: r.reason for r in paper.refused}
    assert reasons == {
        "../../climbed.tex": "a '..', '.' or empty component climbs out of the paper folder",
        str(absolute): "absolute path",
        ".git/hooks/post.tex": "names a .git folder",
        "link.tex": "a symbolic link (never followed)",
        "sub.tex": "a submodule (gitlink) entry, not a file",
        "big.tex": "5002 bytes, over the 4096-byte cap: not read",
    }
    assert all(r.file == f"{shas['wrong'][:10]}:{r.target}" for r in paper.refused)


def test_the_good_files_of_a_hostile_history_are_still_mined_and_the_refusals_reported(hostile, tmp_path):
    repo, shas, absolute, _ = hostile
    source = ErrataSource(str(repo), paper_id="p")
    scan = find_errata(source, max_blob_bytes=4096)
    assert [(e.commit, e.kind, e.erroneous, e.corrected) for e in scan.errata] == [(shas["right"], "number", "12", "11")]
    empty = LoadedCorpus("c", "v0", "test", table_from_rows([], ITEM_SCHEMA), table_from_rows([], TRUTH_SCHEMA), [])
    corpus, _ = add_natural_track(empty, [source], max_blob_bytes=4096)
    assert corpus.items.num_rows == 1
    assert written_outside(tmp_path, repo) == [] and not absolute.exists()
    # each refused entry is reported once, by repository, commit and path
    errors = sorted(str(e) for e in corpus.errors)
    assert len(errors) == 6 and all(e.startswith(f"{repo}@{shas['wrong'][:10]}:") for e in errors)
    assert any("../../climbed.tex:0: git tree entry refused: a '..'" in e for e in errors)


def test_a_commit_changing_a_blob_over_the_cap_is_not_read(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    parent: list[str] = []
    for text in (WRONG + "%" + "y" * 6000 + "\n", RIGHT + "%" + "z" * 6000 + "\n"):
        root = tree(repo, [(b"100644", b"main.tex", blob(repo, text.encode()))])
        parent = ["-p", git(repo, "commit-tree", "-m", "edit", *parent, root.decode()).decode()]
    git(repo, "update-ref", "HEAD", parent[1])
    scan = find_errata(ErrataSource(str(repo), paper_id="p"), max_blob_bytes=4096)
    assert scan.errata == [] and scan.rejected["a changed file over 4096 bytes (not read)"] == 1
    assert find_errata(ErrataSource(str(repo), paper_id="p")).errata  # under the default cap it is mined

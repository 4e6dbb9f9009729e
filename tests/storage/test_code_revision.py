"""Provenance says dirty only when tracked source differs from the commit (issue 10, item 10)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from storage.code_revision import CodeRevision, code_revision, current_revision

pytestmark = pytest.mark.integration  # git subprocesses


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "clone"
    (repo / "scoring").mkdir(parents=True)
    (repo / "scoring" / "m.py").write_text("X = 1\n")
    (repo / ".gitignore").write_text("*.egg-info/\n__pycache__/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    return repo


def test_clean_clone_is_not_dirty(repo: Path) -> None:
    rev = current_revision(repo)
    assert rev == CodeRevision(_git(repo, "rev-parse", "HEAD"), dirty=False)
    assert code_revision(repo) == rev.commit and "+dirty" not in code_revision(repo)


def test_untracked_and_ignored_files_are_not_dirty(repo: Path) -> None:
    # what `pip install -e .` and running the tests leave behind
    (repo / "scrutineer.egg-info").mkdir()
    (repo / "scrutineer.egg-info" / "PKG-INFO").write_text("Metadata-Version: 2.1\n")
    (repo / "scoring" / "__pycache__").mkdir()
    (repo / "scoring" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0")
    (repo / "notes.txt").write_text("scratch\n")
    assert current_revision(repo).dirty is False


def test_modified_tracked_source_is_dirty(repo: Path) -> None:
    (repo / "scoring" / "m.py").write_text("X = 2\n")
    rev = current_revision(repo)
    assert rev.dirty is True and rev.label == rev.commit + "+dirty"
    assert rev.to_dict()["dirty"] is True


def test_tracked_build_metadata_rewritten_by_pip_is_not_dirty(repo: Path) -> None:
    # a clone made before egg-info was untracked: pip rewrites it; that is not a code change
    info = repo / "pkg.egg-info"
    info.mkdir()
    (info / "SOURCES.txt").write_text("a\n")
    _git(repo, "add", "-f", "pkg.egg-info")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "egg")
    (info / "SOURCES.txt").write_text("a\nb\n")
    assert current_revision(repo).dirty is False


def test_without_git_the_source_hash_names_the_code(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "x.py").write_text("print(1)\n")
    rev = current_revision(tmp_path)
    assert rev.commit is None and rev.label.startswith("src-") and len(rev.source_hash or "") == 12
    (tmp_path / "jobs" / "x.py").write_text("print(2)\n")
    assert current_revision(tmp_path).source_hash != rev.source_hash


def test_this_checkout_does_not_track_egg_info() -> None:
    root = Path(__file__).resolve().parents[2]
    tracked = subprocess.run(["git", "ls-files", "scrutineer.egg-info"], cwd=root, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    assert tracked.stdout.strip() == ""

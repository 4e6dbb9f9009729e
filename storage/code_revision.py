"""The code revision a run was made with: the git commit and whether tracked source was modified,
else a hash of the sources.

A job submitted with `--working-dir .` arrives without `.git`, so the content hash keeps runs
comparable there too. Only tracked files count towards "dirty": untracked and ignored files
(caches, build metadata such as `*.egg-info/` that `pip install -e .` rewrites) never make a
clean clone look modified.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
_ROOMS = ("storage", "corpora", "clients", "checkers", "verifiers", "adjudication", "scoring", "cluster", "jobs")
#: Tracked paths that tools regenerate; a change there is not a change to the code.
_GENERATED_SUFFIXES = (".egg-info",)


@dataclass(frozen=True)
class CodeRevision:
    """A git commit and whether tracked files differ from it; or, without git, a source hash."""

    commit: str | None
    dirty: bool = False
    source_hash: str | None = None

    @property
    def label(self) -> str:
        """The form stored in manifests and MLflow params: `<sha>`, `<sha>+dirty` or `src-<hash>`."""
        if self.commit is None:
            return f"src-{self.source_hash}"
        return self.commit + ("+dirty" if self.dirty else "")

    def __str__(self) -> str:
        return self.label

    def to_dict(self) -> dict[str, str | bool | None]:
        return {"commit": self.commit, "dirty": self.dirty, "source_hash": self.source_hash, "label": self.label}


def current_revision(root: Path = REPO_ROOT) -> CodeRevision:
    """The revision of the code under `root` (see module docstring)."""
    try:
        sha = _git(root, "rev-parse", "HEAD")
        changed = _git(root, "status", "--porcelain", "--untracked-files=no", "--ignored=no", "-z")
    except (OSError, subprocess.SubprocessError):
        return CodeRevision(None, source_hash=source_hash(root))
    return CodeRevision(sha.strip(), dirty=any(_counts(entry) for entry in changed.split("\0") if entry))


def code_revision(root: Path = REPO_ROOT) -> str:
    """`current_revision(root).label`: the string form callers store in manifests."""
    return current_revision(root).label


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True).stdout


def _counts(porcelain_entry: str) -> bool:
    """Whether one `git status --porcelain -z` entry ("XY path") is a change to the code."""
    path = porcelain_entry[3:]
    return not any(part.endswith(_GENERATED_SUFFIXES) for part in Path(path).parts)


def source_hash(root: Path = REPO_ROOT) -> str:
    digest = hashlib.sha256()
    for room in _ROOMS:
        for path in sorted((root / room).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]

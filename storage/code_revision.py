"""The code revision a run was made with: the git commit (+dirty), else a hash of the sources.

A job submitted with `--working-dir .` arrives without `.git`, so the content hash keeps runs
comparable there too.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
_ROOMS = ("storage", "corpora", "clients", "checkers", "verifiers", "adjudication", "scoring", "cluster", "jobs")


def code_revision(root: Path = REPO_ROOT) -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True, timeout=10)
        return sha.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "src-" + source_hash(root)


def source_hash(root: Path = REPO_ROOT) -> str:
    digest = hashlib.sha256()
    for room in _ROOMS:
        for path in sorted((root / room).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]

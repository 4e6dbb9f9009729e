"""Where the repository and the optional benchmark data live, for tests.

The benchmark data (HALLMARK splits and released predictions, the reference sources' recorded
answers, real LaTeX papers) is not part of the repository: see docs/optional-data.md. Tests look
for it at `../shared/data` next to the checkout, or wherever SCRUTINEER_SHARED_DATA points, and
tests that need it carry the `requires_shared_data` marker (skipped with a reason when it is
absent, a failure when CI=true).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = Path(os.environ.get("SCRUTINEER_SHARED_DATA") or (REPO_ROOT / ".." / "shared" / "data")).resolve()
SHARED = SHARED_DATA.parent
HALLMARK_DATA = SHARED_DATA / "hallmark"
SAMPLES = REPO_ROOT / "corpora" / "samples"

# What the marked tests read: a checkout without these is "data absent".
SHARED_DATA_PARTS = ("hallmark/dev_public.jsonl", "bibsources", "papers")


def missing_shared_data() -> list[str]:
    """The parts of the optional benchmark data that are not there (empty when all are)."""
    return [part for part in SHARED_DATA_PARTS if not (SHARED_DATA / part).exists()]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def require_shared_data() -> None:
    """Skip (or, when CI=true, fail) the calling test or fixture when the optional benchmark data
    is absent, with a reason that says what is missing and where it was looked for."""
    missing = missing_shared_data()
    if not missing:
        return
    reason = (f"optional benchmark data absent: {', '.join(missing)} not under {SHARED_DATA} "
              "(set SCRUTINEER_SHARED_DATA; see docs/optional-data.md)")
    if in_ci():
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)

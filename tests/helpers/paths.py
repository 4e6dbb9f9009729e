"""Where the repository and the shared read-only data live, for tests."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED = (REPO_ROOT / ".." / "shared").resolve()
SHARED_DATA = SHARED / "data"
HALLMARK_DATA = SHARED_DATA / "hallmark"

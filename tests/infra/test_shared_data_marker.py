"""Tests that need the optional benchmark data skip with a reason without it, and fail in CI."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers.paths import REPO_ROOT

pytestmark = pytest.mark.integration  # runs pytest as a subprocess

TARGET = "tests/scoring/test_score_predictions_job.py::test_bad_label_is_rejected"  # reads HALLMARK's dev_public


def _pytest(tmp_path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "CI"}
    return subprocess.run([sys.executable, "-m", "pytest", TARGET, "-q", "-rs", "-p", "no:cacheprovider"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                          env={**environ, "SCRUTINEER_SHARED_DATA": str(tmp_path / "absent"), **env})  # fmt: skip


def test_absent_data_is_a_skip_with_the_reason(tmp_path):
    result = _pytest(tmp_path)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "1 skipped" in result.stdout
    assert f"hallmark/dev_public.jsonl, bibsources, papers not under {tmp_path / 'absent'}" in result.stdout
    assert "docs/optional-data.md" in result.stdout


def test_absent_data_in_ci_is_a_failure(tmp_path):
    result = _pytest(tmp_path, CI="true")
    assert result.returncode == 1, result.stdout[-2000:]
    assert "CI=true but optional benchmark data absent" in result.stdout

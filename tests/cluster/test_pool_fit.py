"""The worker pool fits the cluster: workers that cannot be placed are known at once."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from cluster.runner import PoolConfig, WorkerStartError, fit_pool
from tests.helpers.paths import REPO_ROOT


def test_pool_is_fitted_to_free_cpus_and_says_so():
    size, note = fit_pool(4, PoolConfig(workers=4), {"CPU": 2.0})
    assert size == 2
    assert "asked 4 workers x 1 CPU, 2 CPU free" in note and "running 2 workers" in note
    assert fit_pool(4, PoolConfig(workers=4, cpus_per_worker=0.25), {"CPU": 1.0}) == (4, None)
    assert fit_pool(2, PoolConfig(workers=2), {"CPU": 8.0}) == (2, None)


def test_no_worker_fits_fails_naming_asked_and_free():
    with pytest.raises(WorkerStartError, match=r"asked 2 workers x 4 CPU, 1 CPU free"):
        fit_pool(2, PoolConfig(workers=2, cpus_per_worker=4.0), {"CPU": 1.0})
    with pytest.raises(WorkerStartError, match=r"asked 1 worker x 1 CPU \+ 1 GPU, 4 CPU and 0 GPU free"):
        fit_pool(1, PoolConfig(workers=1, gpus_per_worker=1.0), {"CPU": 4.0})


DRIVER = textwrap.dedent(
    """
    import runpy, sys
    import ray
    ray.init(num_cpus=1, include_dashboard=False, logging_level="ERROR")  # a head smaller than the pool
    sys.argv = ["run_corpus.py", *sys.argv[1:]]
    try:
        runpy.run_path({script!r}, run_name="__main__")
    finally:
        ray.shutdown()
    """
)


@pytest.mark.heavy
def test_more_workers_than_cpus_finishes_quickly_with_a_fitted_pool(tmp_path):
    """`--workers 4` on a 1-CPU Ray: the run fits the pool to 1 worker, says so and finishes
    (it used to wait 5 minutes for actors that could never be placed)."""
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(script=str(REPO_ROOT / "jobs" / "run_corpus.py")))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(driver), "--systems", "prescreen", "--workers", "4", "--snapshot", "2026-11-29",
         "--bootstrap", "0", "--tracking-uri", "none", "--storage", str(tmp_path / "runs")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "[pool] asked 4 workers x 1 CPU, 1 CPU free in the Ray cluster: running 1 worker" in done.stdout
    assert "Get timed out" not in done.stdout + done.stderr
    assert elapsed < 150, f"took {elapsed:.0f}s"

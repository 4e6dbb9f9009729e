"""Time and memory limits: a hostile check ends `inconclusive` and the runner keeps serving."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from checkers.sandbox import IsolatedRunner, Limits
from tests.helpers.paths import REPO_ROOT

pytestmark = pytest.mark.integration  # sandbox worker processes


@pytest.fixture(scope="module")
def runner():
    with IsolatedRunner(workers=1, limits=Limits(timeout_s=4.0, memory_mb=400)) as r:
        yield r


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_wall_clock_limit_kills_and_replaces_the_worker(runner):
    before, replaced = runner.pids, runner.replaced
    start = time.monotonic()
    result = runner.run("math.equality", {"lhs": r"10^{10^{10}}", "rhs": "1"})
    assert result.outcome == "inconclusive"
    assert "wall-clock limit of 4s" in result.reason
    assert time.monotonic() - start < 15
    assert runner.replaced == replaced + 1
    time.sleep(0.2)
    assert not any(_alive(pid) for pid in before)  # the hung worker is gone
    ok = runner.run("math.equality", {"lhs": "(x+1)^2", "rhs": "x^2+2x+1"})
    assert ok.outcome == "confirmed"


@pytest.fixture(scope="module")
def memory_runner():
    """A small memory cap and a wall limit far beyond it: on a loaded machine sympy fills 300 MiB at
    whatever pace it gets, and the memory limit, not the clock, must be what stops it."""
    with IsolatedRunner(workers=1, limits=Limits(timeout_s=300.0, memory_mb=300)) as r:
        yield r


def test_memory_limit_gives_inconclusive_and_the_runner_survives(memory_runner):
    runner = memory_runner
    result = runner.run("math.equality", {"lhs": "(x+y+z)^{3000}", "rhs": "1"})
    assert result.outcome == "inconclusive"
    assert "memory" in result.reason
    ok = runner.run("numerics.percentages_sum", {"percentages": ["40%", "60%"]})
    assert ok.outcome == "confirmed"


def test_non_json_payload_is_an_error_not_a_crash(runner):
    result = runner.run("math.equality", {"lhs": object()})
    assert result.outcome == "error"
    assert runner.run("math.equality", {"lhs": "x", "rhs": "x"}).outcome == "confirmed"


def test_cli_reports_limits_and_documents_every_kind():
    checks = [{"kind": "math.equality", "lhs": r"10^{10^{10}}", "rhs": "1"},
              {"kind": "math.equality", "payload": {"lhs": "(x+1)^2", "rhs": "x^2+2x+1"}}]  # fmt: skip
    done = subprocess.run([sys.executable, "jobs/check.py", "--timeout", "3"], input=json.dumps(checks),
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)  # fmt: skip
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["outcome"] for r in lines] == ["inconclusive", "confirmed"]
    assert lines[1]["evidence"]["engine_note"] == "wolframscript not installed; sympy used"
    help_text = subprocess.run([sys.executable, "jobs/check.py", "--help"], capture_output=True, text=True,
                               cwd=REPO_ROOT, timeout=60).stdout  # fmt: skip
    from checkers.registry import registered

    assert len(registered()) == 19
    for kind in registered():
        assert f"\n{kind}\n" in help_text
    bad = subprocess.run([sys.executable, "jobs/check.py"], input="{not json", capture_output=True, text=True,
                         cwd=REPO_ROOT, timeout=60)  # fmt: skip
    assert bad.returncode == 2


def test_a_cancelled_check_kills_its_worker_at_once(runner):
    import threading

    runner.run("math.equality", {"lhs": "x", "rhs": "x"})  # the worker is up
    before, replaced, cancelled = runner.pids, runner.replaced, runner.cancelled
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    start = time.monotonic()
    result = runner.run("math.equality", {"lhs": r"10^{10^{10}}", "rhs": "1"}, cancel=cancel)
    elapsed = time.monotonic() - start
    assert (result.outcome, result.reason) == ("skipped", "cancelled; worker killed and replaced")
    assert elapsed < 1.5  # not the 4 s wall-clock limit
    assert (runner.replaced, runner.cancelled) == (replaced + 1, cancelled + 1)
    assert not any(_alive(pid) for pid in before) and len(runner.pids) == 1
    assert runner.run("math.equality", {"lhs": "(x+1)^2", "rhs": "x^2+2x+1"}).outcome == "confirmed"
    already = threading.Event()
    already.set()
    assert runner.run("math.equality", {"lhs": "x", "rhs": "x"}, cancel=already).outcome == "skipped"

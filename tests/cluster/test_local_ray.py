"""A local Ray (no address) is pinned to loopback before it starts, and everything it started is
ended and its temp dir removed when the driver exits."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from cluster import ray_address


def test_a_local_ray_is_pinned_to_loopback_even_after_ray_was_imported(monkeypatch):
    """Ray reads RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER when it is imported; the driver imports ray long
    before it knows the run is local, so setting only the variable left the node on the outward
    address and the GCS and raylet listening on every interface."""
    from ray._private import ray_constants

    monkeypatch.delenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", raising=False)
    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", True)  # as imported from a user's shell
    assert ray_address.pin_local_ray_to_loopback() == "127.0.0.1"
    import os

    assert os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"  # for the processes Ray starts


def test_the_temp_root_leaves_room_for_rays_socket_paths(monkeypatch, tmp_path):
    monkeypatch.setattr("tempfile.tempdir", "/tmp")
    assert ray_address._local_temp_root() == "/tmp"
    long_root = tmp_path / ("x" * 40)
    long_root.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(long_root))
    assert ray_address._local_temp_root() == "/tmp"  # a socket path under it would pass 107 bytes


def test_a_local_ray_that_misses_rays_start_up_deadline_is_started_again(monkeypatch, tmp_path, capsys):
    """Ray gives its raylet a fixed 30 s to register; on a loaded 2-core machine a first start can miss
    it. The start is tried again on a clean temp dir; other errors are raised at once."""
    import ray

    calls, removed = [], []
    outcomes = [Exception("The current node timed out during startup."), None]

    def fake_init(**kwargs):
        calls.append(kwargs["_temp_dir"])
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    monkeypatch.setattr(ray, "init", fake_init)
    monkeypatch.setattr(ray_address, "_remove_local_ray", removed.append)
    monkeypatch.setattr(ray_address, "_local_temp_root", lambda: str(tmp_path))
    temp_dir = ray_address.start_local_ray()
    assert len(calls) == 2 and calls[1] == temp_dir and removed == [calls[0]]
    assert "did not start within Ray's 30 s" in capsys.readouterr().err

    outcomes[:] = [ValueError("bad resources")]
    with pytest.raises(ValueError, match="bad resources"):
        ray_address.start_local_ray()


@pytest.mark.integration
def test_exit_ends_what_the_local_ray_started_and_removes_its_temp_dir(tmp_path: Path):
    """A stand-in for a local Ray: a child of the driver naming the temp dir (as the GCS and raylet
    do) with a grandchild that does not (as the renamed agents) and that writes into the temp dir
    when told to stop (as a late agent did, re-creating the session folder after it was removed)."""
    temp_dir = tmp_path / "scrutineer-run-ray-x"
    (temp_dir / "session_1" / "logs").mkdir(parents=True)
    grandchild_pid = tmp_path / "grandchild.pid"
    grandchild = (
        "import os, signal, sys, time\n"
        f"def late(*a):\n    os.makedirs({str(temp_dir / 'session_1' / 'late')!r}, exist_ok=True); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, late)\n"
        f"open({str(grandchild_pid)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(600)"
    )
    child = f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {grandchild!r}])\ntime.sleep(600)"
    driver = (
        "import sys\n"
        f"sys.path.insert(0, {str(Path(ray_address.__file__).parents[1])!r})\n"
        "import subprocess, time\n"
        "from pathlib import Path\n"
        "from cluster.ray_address import _remove_local_ray\n"
        f"subprocess.Popen([sys.executable, '-c', {child!r}, '--temp-dir={temp_dir}'])\n"
        f"while not Path({str(grandchild_pid)!r}).exists():\n    time.sleep(0.05)\n"
        f"_remove_local_ray({str(temp_dir)!r})\n"
    )
    done = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    pid = int(grandchild_pid.read_text())
    deadline = time.monotonic() + 10
    while ray_address._running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not ray_address._running(pid), "the process below the local Ray's was left running"
    assert not temp_dir.exists(), "the temp dir is removed after the last process wrote into it"

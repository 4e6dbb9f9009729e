"""infra/dev_services.sh: per-checkout services on free loopback ports, stopped exactly.

The cheap tests stand in for Ray with processes that carry a temp-dir path in their command
line (that is how `stop` recognises a head's processes); the heavy ones start the real services.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.helpers.paths import REPO_ROOT
from tests.helpers.ray_cluster import is_loopback_only, processes_carrying, session_members, sockets_of

SCRIPT = "infra/dev_services.sh"


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A fresh checkout: its own .dev-services/, like a second working copy on the machine."""
    dest = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(dest)], check=True, timeout=120)
    return dest


def services(checkout: Path, *args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(["bash", SCRIPT, *args], cwd=checkout, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PATH": path, "PYTHONPATH": str(checkout), **env})  # fmt: skip


def fake_ray_process(marker: str, ignore_term: bool = False) -> subprocess.Popen:
    """A process whose command line carries `marker`, as every process of a Ray head carries its temp dir."""
    code = "import signal, time\n" + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore_term else "")
    code += "time.sleep(600)"
    return subprocess.Popen([sys.executable, "-c", code, f"--temp-dir={marker}"])


def test_stop_leaves_other_checkouts_ray_alone(clone: Path, tmp_path: Path):
    # The old script ran `pkill -f /tmp/scrutineer-dev-ray`, a path every checkout shared.
    other = fake_ray_process("/tmp/scrutineer-dev-ray")
    mine_dir = tmp_path / "mine-ray"
    (clone / ".dev-services").mkdir()
    (clone / ".dev-services" / "ray_tmp").write_text(f"{mine_dir}\n")
    mine = fake_ray_process(str(mine_dir))
    try:
        time.sleep(0.3)
        result = services(clone, "stop")
        assert result.returncode == 0, result.stderr
        assert mine.wait(timeout=10) is not None  # this checkout's head is gone ...
        assert other.poll() is None  # ... another checkout's is not
        assert "stopped 1 processes" in result.stdout and "none left" in result.stdout
    finally:
        for proc in (other, mine):
            proc.kill()
            proc.wait()


def test_stop_waits_and_escalates_until_the_processes_are_gone(clone: Path, tmp_path: Path):
    ray_dir = tmp_path / "stubborn-ray"
    (clone / ".dev-services").mkdir()
    (clone / ".dev-services" / "ray_tmp").write_text(f"{ray_dir}\n")
    stubborn = fake_ray_process(str(ray_dir), ignore_term=True)
    try:
        time.sleep(0.5)
        started = time.monotonic()
        result = services(clone, "stop", STOP_WAIT_S="2")
        assert result.returncode == 0, result.stderr
        assert stubborn.wait(timeout=5) == -9  # SIGTERM ignored: SIGKILL after the bounded wait
        assert 2 <= time.monotonic() - started < 30
    finally:
        stubborn.kill()
        stubborn.wait()


def fake_ray_session(pid_file: Path) -> subprocess.Popen:
    """A stand-in for a head started in its own session: a leader and a child that renamed itself
    (as ray::DashboardAgent does) and takes a while to exit on SIGTERM. Neither command line
    names the temp dir. The child writes its pid to `pid_file`."""
    child = ("import signal, sys, time\n"
             "signal.signal(signal.SIGTERM, lambda *a: (time.sleep(1.5), sys.exit(0)))\n"
             f"open({str(pid_file)!r}, 'w').write(str(__import__('os').getpid()))\n"
             "time.sleep(600)")  # fmt: skip
    leader = f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {child!r}])\ntime.sleep(600)"
    return subprocess.Popen([sys.executable, "-c", leader], start_new_session=True)


def test_stop_ends_every_process_of_the_heads_session_and_removes_its_temp_dir(clone: Path):
    """`stop` once said "none left" while the client server and two renamed agents listened 50 s
    later, and left the head's temp dir behind."""
    state = clone / ".dev-services"
    (state / "ray" / "session_x" / "logs").mkdir(parents=True)
    link = Path(tempfile.mkdtemp(prefix="sdr-test-", dir="/tmp"))
    link.rmdir()
    link.symlink_to(state / "ray")  # the short path Ray is given when .dev-services/ray is too long
    (state / "ray_tmp").write_text(f"{link}\n")
    head = fake_ray_session(state / "child.pid")
    (state / "ray.pid").write_text(f"{head.pid}\n")
    try:
        deadline = time.monotonic() + 30
        while not (state / "child.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        child = int((state / "child.pid").read_text())
        result = services(clone, "stop")
        assert result.returncode == 0, result.stdout + result.stderr
        assert head.wait(timeout=5) is not None
        assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
        assert "stopped 2 processes" in result.stdout and "none left" in result.stdout
        assert not (state / "ray").exists() and not link.is_symlink() and not (state / "ray_tmp").exists()
        assert services(clone, "status").stdout.splitlines()[-1] == "ray head: stopped"
    finally:
        head.kill()
        head.wait()
        if link.is_symlink():
            link.unlink()


def test_a_start_that_fails_part_way_stops_what_it_started(clone: Path, tmp_path: Path):
    """A start whose MLflow server was not healthy in time exited 1 and left moto and that server
    running, and `stop` then said "none left". Here the S3 stand-in answers but is no S3 server."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_moto = bin_dir / "moto_server"  # called as: moto_server -H 127.0.0.1 -p PORT
    pid_file = tmp_path / "fake_moto.pid"
    fake_moto.write_text(f'#!/bin/sh\necho $$ > {pid_file}\nexec {sys.executable} -m http.server --bind 127.0.0.1 "$4"\n')
    fake_moto.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    result = services(clone, "start", timeout=300, PATH=path)
    assert result.returncode != 0
    assert "start failed; stopping what it started" in result.stderr and "none left" in result.stderr, result.stderr
    pid = int(pid_file.read_text())
    alive = Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    if alive:
        os.kill(pid, 9)
    assert not alive, "the S3 stand-in outlived the failed start"
    assert not (clone / ".dev-services" / "moto.pid").exists()


def test_status_without_services_says_stopped(clone: Path):
    result = services(clone, "status")
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["moto: stopped", "mlflow: stopped", "ray head: stopped"]


def test_script_has_no_fixed_ports_or_shared_paths():
    text = (REPO_ROOT / SCRIPT).read_text()
    assert "pkill" not in text and "ray stop" not in text.replace("(`ray stop` would", "")
    assert "/tmp/scrutineer-dev-ray\n" not in text and "RAY_TMP=/tmp" not in text
    assert not re.search(r"PORT:-\d", text), "ports are picked free, not defaulted to fixed numbers"


def _env_file(checkout: Path) -> dict[str, str]:
    text = (checkout / ".dev-services" / "env.sh").read_text()
    return dict(re.findall(r"(\w+)=(\S+)", text))


@pytest.mark.heavy
def test_start_status_stop_in_a_fresh_clone(clone: Path):
    start = services(clone, "start", timeout=600)
    try:
        assert start.returncode == 0, start.stdout + start.stderr
        env = _env_file(clone)
        ports = {int(env[k].rsplit(":", 1)[1]) for k in ("AWS_ENDPOINT_URL", "MLFLOW_TRACKING_URI", "RAY_ADDRESS")}
        assert len(ports) == 3 and 5000 not in ports and 8265 not in ports
        assert env["RAY_ADDRESS"].startswith("http://127.0.0.1:")
        assert services(clone, "status").returncode == 0
        ray_tmp = (clone / ".dev-services" / "ray_tmp").read_text().strip()
        state = clone / ".dev-services"
        ray_session = int((state / "ray.pid").read_text())
        # the head's (its session: renamed agents and the client server too), and the other two's groups:
        processes = processes_carrying(ray_tmp) | session_members(ray_session)
        for svc in ("moto", "mlflow"):
            group = (state / f"{svc}.pid").read_text().strip()
            processes |= {int(p): svc for p in subprocess.run(["pgrep", "-g", group], capture_output=True,
                                                               text=True).stdout.split()}  # fmt: skip
        sockets = sockets_of(processes)
        assert {"gcs_server", "raylet", "moto", "mlflow"} <= {name for name, _, _ in sockets}, sockets
        assert ports <= {port for _, _, port in sockets}, sockets
        assert [s for s in sockets if not is_loopback_only(s[1])] == []
        assert "Local node IP: 127.0.0.1" in re.sub(r"\x1b\[[0-9;]*m", "", (state / "ray.log").read_text())
    finally:
        stop = services(clone, "stop", timeout=120)
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert "none left" in stop.stdout
    assert processes_carrying(ray_tmp) == {} and session_members(ray_session) == {}
    assert not (clone / ".dev-services" / "ray").exists() and not Path(ray_tmp).exists()
    assert services(clone, "status").returncode == 1


@pytest.mark.heavy
def test_start_submit_stop_in_a_fresh_clone(clone: Path, monkeypatch):
    """The README's three commands, as written: the submitted job's runs, with their metrics and
    report, are on the dev MLflow server (they once went to a throwaway sqlite in Ray's working_dir)."""
    assert "127.0.0.1:5000" not in (clone / "configs" / "cluster.toml").read_text()
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    script = ("set -e; bash infra/dev_services.sh start && source .dev-services/env.sh; "
              "ray job submit --working-dir . -- python jobs/run_corpus.py --config configs/cluster.toml")
    try:
        result = subprocess.run(["bash", "-c", script], cwd=clone, capture_output=True, text=True, timeout=900,
                                env={**os.environ, "PATH": path})  # fmt: skip
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert "succeeded" in result.stdout

        from mlflow.tracking import MlflowClient

        from storage.tracking import SYSTEM_RUNS

        env = _env_file(clone)
        for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"):
            monkeypatch.setenv(name, env[name])  # the report's artifacts are on the dev S3
        client = MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
        experiment = client.get_experiment_by_name("scrutineer/citations_sample")
        assert experiment is not None, "no experiment on the dev MLflow server"
        runs = client.search_runs([experiment.experiment_id], filter_string=SYSTEM_RUNS)
        assert sorted(r.data.params["system"] for r in runs) == ["always_valid", "prescreen"]
        for run in runs:
            assert "detection_rate" in run.data.metrics, run.data.metrics
            assert "report" in {a.path for a in client.list_artifacts(run.info.run_id)}
            assert client.list_artifacts(run.info.run_id, "report"), "the report folder is empty"
    finally:
        stop = services(clone, "stop", timeout=120)
    assert stop.returncode == 0 and "none left" in stop.stdout, stop.stdout + stop.stderr
    assert not (clone / ".dev-services" / "ray").exists()

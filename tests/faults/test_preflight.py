"""Storage, tracking and the cluster are checked before any work, through the real entry point:
each failure exits 2 within seconds with one line naming what failed and how to fix it, never a
traceback. A tracking server that fails only after the work keeps the leaderboard (exit 5), and
`jobs/publish_run.py` logs the stored runs later.

Checks that need no server run the job's `main(argv)` in this process (unit tier); those against
S3 keep the real process: boto3 and pyarrow read the AWS variables once per process."""

from __future__ import annotations

import http.server
import json
import os
import re
import shlex
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.ports import free_port, wait_for_port
from tests.helpers.run_job import run_job, run_job_in_process

FAST = ("--systems", "prescreen", "--bootstrap", "0")
NO_AWS = {"AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_CONFIG_FILE": "/nonexistent", "AWS_EC2_METADATA_DISABLED": "true"}


def local_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS",) and not k.startswith("AWS_")} | NO_AWS


def assert_one_line_exit_2(result: subprocess.CompletedProcess, elapsed: float, *expected: str) -> str:
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-3000:]
    assert "Traceback" not in result.stderr + result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    for text in expected:
        assert text in errors[0], errors[0]
    assert elapsed < 30, f"took {elapsed:.1f}s"
    return errors[0]


def timed(*args: str, cwd: Path, env: dict[str, str], timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    result = run_job("run_corpus.py", *args, cwd=cwd, env=env, timeout=timeout)
    return result, time.monotonic() - started


@pytest.fixture
def in_process(monkeypatch):
    """A job's main(argv) in this process, with `local_env()`'s environment: (result, seconds)."""

    def run(script: str, *args: str, cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
        unset = tuple(k for k in os.environ if k == "RAY_ADDRESS" or (k.startswith("AWS_") and k not in NO_AWS))
        started = time.monotonic()
        result = run_job_in_process(script, *args, cwd=cwd, monkeypatch=monkeypatch, env=NO_AWS, unset=unset)
        return result, time.monotonic() - started

    return run


def test_unwritable_local_storage_exits_2_with_one_line(tmp_path, in_process):
    (tmp_path / "taken").write_text("a file where the storage folder should be")
    result, elapsed = in_process("run_corpus.py", "--storage", str(tmp_path / "taken" / "runs"), "--tracking-uri",
                                 "none", *FAST, cwd=tmp_path)  # fmt: skip
    assert_one_line_exit_2(result, elapsed, f"storage {tmp_path / 'taken' / 'runs'}", "cannot write to",
                           "choose a writable --storage folder")  # fmt: skip


@pytest.mark.integration  # a real process: see the module's docstring
def test_missing_bucket_exits_2_naming_the_bucket_and_the_fix(tmp_path, moto_s3):
    result, elapsed = timed("--storage", "s3://no-such-bucket-here/runs", "--tracking-uri", "none", *FAST,
                            cwd=tmp_path, env=local_env() | moto_s3.env())  # fmt: skip
    assert_one_line_exit_2(result, elapsed, "NoSuchBucket", "aws s3 mb s3://no-such-bucket-here")


@pytest.mark.integration  # a real process: see the module's docstring
def test_missing_credentials_exit_2(tmp_path, moto_s3):
    moto_s3.client().create_bucket(Bucket="creds-runs")
    env = local_env() | {k: v for k, v in moto_s3.env().items() if not k.startswith("AWS_ACCESS") and "SECRET" not in k}
    result, elapsed = timed("--storage", "s3://creds-runs/runs", "--tracking-uri", "none", *FAST, cwd=tmp_path, env=env)
    assert_one_line_exit_2(result, elapsed, "no AWS credentials", "AWS_ACCESS_KEY_ID")


@pytest.mark.integration  # a real process: see the module's docstring
def test_rejected_credentials_exit_2(tmp_path):
    # moto checks access keys against its IAM once the first N requests are through (N=1: the create_bucket)
    port = free_port()
    moto = subprocess.Popen(["moto_server", "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "1"})  # fmt: skip
    try:
        wait_for_port(port, timeout=30)
        import boto3

        boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1", aws_access_key_id="testing",
                     aws_secret_access_key="testing").create_bucket(Bucket="auth-runs")  # fmt: skip
        env = local_env() | {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "AKIAWRONGKEY",
                             "AWS_SECRET_ACCESS_KEY": "s3cr3t-value", "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip
        result, elapsed = timed("--storage", "s3://auth-runs/runs", "--tracking-uri", "none", *FAST, cwd=tmp_path, env=env)
    finally:
        moto.terminate()
        moto.wait(timeout=10)
    assert_one_line_exit_2(result, elapsed, "InvalidAccessKeyId", "fix AWS_ACCESS_KEY_ID")
    assert "s3cr3t-value" not in result.stderr + result.stdout  # the secret is never echoed


@pytest.mark.integration  # a real process: see the module's docstring
def test_unreachable_s3_endpoint_exits_2(tmp_path):
    env = local_env() | {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}", "AWS_ACCESS_KEY_ID": "testing",
                         "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip
    result, elapsed = timed("--storage", "s3://any-bucket/runs", "--tracking-uri", "none", *FAST, cwd=tmp_path, env=env)
    assert_one_line_exit_2(result, elapsed, "cannot be written", "cannot reach http://127.0.0.1:")


def test_unreachable_tracking_server_exits_2_before_any_work(tmp_path, in_process):
    closed = f"http://127.0.0.1:{free_port()}"
    result, elapsed = in_process("run_corpus.py", "--storage", str(tmp_path / "runs"), "--tracking-uri", closed, *FAST,
                                 cwd=tmp_path)  # fmt: skip
    assert_one_line_exit_2(result, elapsed, f"tracking server {closed} is unreachable", "--tracking-uri none")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").glob("*/shards"))  # no work done


@pytest.mark.heavy
def test_storage_the_driver_can_write_but_a_worker_cannot_exits_2(tmp_path, ray_head, moto_s3):
    """The session's Ray head has the session moto's AWS variables; this driver points at another
    S3 whose bucket the head's endpoint does not have: every shard would fail there."""
    port = free_port()
    moto = subprocess.Popen(["moto_server", "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_for_port(port, timeout=30)
        import boto3

        boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1", aws_access_key_id="testing",
                     aws_secret_access_key="testing").create_bucket(Bucket="driver-only-runs")  # fmt: skip
        env = ray_head.env() | moto_s3.env() | {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
        result, elapsed = timed("--storage", "s3://driver-only-runs/runs", "--tracking-uri", "none", *FAST,
                                cwd=tmp_path, env=env, timeout=180)  # fmt: skip
    finally:
        moto.terminate()
        moto.wait(timeout=10)
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "seen from a Ray worker" in errors[0] and "NoSuchBucket" in errors[0], result.stderr
    assert "Traceback" not in result.stderr and "[progress]" not in result.stdout


class _HealthOnly(http.server.BaseHTTPRequestHandler):
    """A tracking server that passes the health check, then fails every MLflow request (as one
    going down between the preflight and the end of the run does)."""

    def do_GET(self):  # noqa: N802 - http.server's naming
        if self.path == "/health":
            self._answer(200, b"OK")
        else:
            self._answer(503, b"down")

    do_POST = do_GET  # noqa: N815

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.mark.heavy
@pytest.mark.integration
def test_tracking_failing_after_the_work_keeps_the_leaderboard_and_publish_run_logs_it_later(tmp_path, ray_head):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HealthOnly)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tracking = f"http://127.0.0.1:{server.server_address[1]}"
    storage = tmp_path / "runs"
    env = {k: v for k, v in ray_head.env().items() if not k.startswith("MLFLOW_")}
    try:
        started = time.monotonic()
        result = run_job("run_corpus.py", "--storage", str(storage), "--tracking-uri", tracking, "--snapshot",
                         "2026-01-02", *FAST, cwd=tmp_path, env=env, timeout=300)  # fmt: skip
        elapsed = time.monotonic() - started
    finally:
        server.shutdown()
    assert result.returncode == 5, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert "Leaderboard" in result.stdout and re.search(r"^prescreen\s+\d\.\d{3}", result.stdout, re.M), result.stdout
    assert "TRACKING FAILED" in result.stderr
    command = next(line.strip() for line in result.stderr.splitlines() if "jobs/publish_run.py" in line)
    (run_dir,) = [p for p in storage.iterdir() if (p / "manifest.json").exists()]
    assert json.loads((run_dir / "status.json").read_text())["status"] == "complete"  # outputs and report kept
    assert f"--run-ids {run_dir.name}" in command and f"--tracking-uri {tracking}" in command
    print(f"run with failing tracking: {elapsed:.1f}s")

    # later, the tracking store is back (here: a real MLflow sqlite store): log what the run stored
    db = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = shlex.split(command.replace(tracking, db))[2:]  # after "python jobs/publish_run.py"
    for _ in range(2):  # twice: the second reuses the MLflow run, never duplicates it
        published = run_job("publish_run.py", *args, cwd=tmp_path, env=env, timeout=180)
        assert published.returncode == 0, published.stdout + published.stderr
        assert f"logged prescreen ({run_dir.name})" in published.stdout

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=db)
    experiment = client.get_experiment_by_name("scrutineer/citations_sample")
    runs = client.search_runs([experiment.experiment_id], filter_string=f"tags.`scrutineer.run_id` = '{run_dir.name}'")
    assert len(runs) == 1
    scores = json.loads((run_dir / "scores.json").read_text())
    assert runs[0].data.metrics["detection_rate"] == pytest.approx(scores["detection_rate"])
    assert runs[0].data.params["system"] == "prescreen" and runs[0].info.status == "FINISHED"
    artifacts = {a.path for a in client.list_artifacts(runs[0].info.run_id)}
    assert {"outputs.parquet", "metrics.parquet", "manifest.json", "report"} <= artifacts
    # each publish is a submission nested under the one MLflow run, under one job run (storage/tracking.py)
    (job,) = client.search_runs([experiment.experiment_id], filter_string="tags.`scrutineer.job` LIKE '%'")
    assert runs[0].data.tags["mlflow.parentRunId"] == job.info.run_id
    subs = client.search_runs([experiment.experiment_id],
                              filter_string=f"tags.`scrutineer.submission_of` = '{run_dir.name}'")  # fmt: skip
    assert len(subs) == 2 and {r.data.tags["mlflow.parentRunId"] for r in subs} == {runs[0].info.run_id}


def test_publish_run_names_a_run_that_does_not_exist(tmp_path, in_process):
    (tmp_path / "runs").mkdir()
    result, _ = in_process("publish_run.py", "--storage", str(tmp_path / "runs"), "--run-ids", "nope",
                           "--tracking-uri", f"sqlite:///{tmp_path / 'm.db'}", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2 and "run 'nope': no manifest.json" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


# -- issue 26 item 5: a tracking URI with user:pass@ ---------------------------------------------------
class _BasicAuthTracking(http.server.BaseHTTPRequestHandler):
    """A tracking server behind Basic auth (as an nginx in front of `mlflow server` is)."""

    expected = ""

    def do_GET(self):  # noqa: N802 - http.server's naming
        ok = self.headers.get("Authorization") == self.expected
        body = b"OK" if ok else b"unauthorized"
        self.send_response(200 if ok else 401)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.mark.integration
def test_tracking_uri_with_userinfo_is_checked_with_it_and_never_printed_with_the_password():
    import base64

    from cluster.preflight import check_tracking

    password = "trk-Pa55w0rd-9c1e"
    _BasicAuthTracking.expected = "Basic " + base64.b64encode(f"alice:{password}".encode()).decode()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _BasicAuthTracking)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        assert check_tracking(f"http://alice:{password}@127.0.0.1:{port}") is None
        wrong = check_tracking(f"http://alice:not-{password}@127.0.0.1:{port}/")
    finally:
        server.shutdown()
        server.server_close()
    assert wrong is not None and "HTTP 401" in wrong and "***@127.0.0.1" in wrong and password not in wrong
    closed = check_tracking(f"http://alice:{password}@127.0.0.1:{free_port()}")
    assert closed is not None and "is unreachable" in closed and password not in closed


# -- issue 26 item 6: model keys are checked where the work runs ---------------------------------------
@pytest.mark.heavy
@pytest.mark.integration
def test_a_model_key_the_driver_has_but_the_workers_lack_exits_2_naming_model_and_variable(tmp_path, ray_head):
    """The session's Ray head was started without this variable; the driver has it."""
    variable = "ISSUE26_DRIVER_ONLY_KEY"
    assert variable not in os.environ
    env = ray_head.env() | {variable: "sk-driver-only-0a1b2c3d"}
    result, elapsed = timed("--storage", str(tmp_path / "runs"), "--tracking-uri", "none", "--bootstrap", "0",
                            "--systems", f"llm_zero_shot:model=openai/gpt-4o-mini,api_key_env={variable}",
                            cwd=tmp_path, env=env, timeout=180)  # fmt: skip
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert "model openai/gpt-4o-mini" in errors[0] and variable in errors[0] and "Ray workers" in errors[0]
    assert "Traceback" not in result.stderr and "[progress]" not in result.stdout  # no shard ran
    assert "sk-driver-only-0a1b2c3d" not in result.stdout + result.stderr

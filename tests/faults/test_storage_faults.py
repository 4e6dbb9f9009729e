"""Storage hiccups: an S3 endpoint that goes away mid-run pauses the run (one line, no retry storm)
and the run resumes and finishes when it is back; a failure record storage will not take never
kills the driver; temp files of killed writers are cleaned up; errors are classified."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import subprocess
import sys
import threading
import time

import botocore.exceptions as bx
import pytest

from cluster.run_config import DEFAULT_CORPUS
from storage.filesystem import (
    StorageAccessError,
    StorageUnavailableError,
    classify_storage_error,
    remove_stale_temp_files,
)
from storage.store import Store
from tests.helpers.paths import REPO_ROOT
from tests.helpers.ports import free_port, wait_for_port


# -- classification -----------------------------------------------------------------------------
def test_connection_errors_and_5xx_are_outages_refusals_are_access_errors():
    down = classify_storage_error(bx.EndpointConnectionError(endpoint_url="http://s3:9"), "b/k", local=False)
    assert isinstance(down, StorageUnavailableError)
    slow = bx.ClientError({"Error": {"Code": "SlowDown"}, "ResponseMetadata": {"HTTPStatusCode": 503}}, "PutObject")
    assert isinstance(classify_storage_error(slow, "b/k", local=False), StorageUnavailableError)
    missing = bx.ClientError({"Error": {"Code": "NoSuchBucket"}, "ResponseMetadata": {"HTTPStatusCode": 404}}, "PutObject")
    refused = classify_storage_error(missing, "runs-bucket/k", local=False)
    assert isinstance(refused, StorageAccessError) and "aws s3 mb s3://runs-bucket" in refused.hint
    assert isinstance(classify_storage_error(bx.NoCredentialsError(), "b/k", local=False), StorageAccessError)
    assert isinstance(classify_storage_error(OSError(28, "No space left on device"), "/runs/x", local=True),
                      StorageUnavailableError)  # fmt: skip
    assert isinstance(classify_storage_error(NotADirectoryError(20, "not a dir"), "/runs/x", local=True),
                      StorageAccessError)  # fmt: skip
    assert classify_storage_error(ValueError("a bug"), "/runs/x", local=True) is None  # not storage's: raised as is


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES, errno.ENOSPC, errno.EDQUOT])
def test_a_disk_remounted_read_only_or_full_is_an_outage_not_a_refusal(code):
    # before: EROFS and EACCES were access errors, so a remount mid-run burned every shard's attempts
    exc = PermissionError(code, os.strerror(code)) if code == errno.EACCES else OSError(code, os.strerror(code))
    classified = classify_storage_error(exc, "/runs/r/shards/shard-00001.parquet", local=True)
    assert isinstance(classified, StorageUnavailableError)
    assert "/runs/r/shards/shard-00001.parquet" in str(classified)


class FailingDisk:
    """A local pyarrow filesystem whose writes fail with `code` after some bytes reached the disk
    (as a disk filling up does), while `failing` is set."""

    def __init__(self, real, code: int) -> None:
        self.real, self.code, self.failing = real, code, True

    def open_output_stream(self, path, *args, **kwargs):
        stream = self.real.open_output_stream(path, *args, **kwargs)
        if not self.failing:
            return stream
        stream.write(b"partial")
        stream.close()
        raise OSError(self.code, f"Error writing bytes to file. Detail: [errno {self.code}] {os.strerror(self.code)}")

    def __getattr__(self, name):
        return getattr(self.real, name)


def temp_files(root) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if ".tmp-" in p.name or ".scrutineer-probe-" in p.name)


@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC])
def test_failed_store_writes_are_outages_and_leave_no_temp_file(tmp_path, code):
    from cluster.runner import _storage_unavailable
    from storage.run_lease import RunLease
    from tests.faults.test_run_lease import one_row_table

    store = Store(str(tmp_path / "runs"))
    store.fs = FailingDisk(store.fs, code)
    with pytest.raises(StorageUnavailableError, match="shard-00003.parquet") as down:
        store.write_shard("r1", 3, one_row_table("a"))
    # what the runner sees from a worker: an outage (pause, attempt uncounted), never the shard's fault
    assert _storage_unavailable(down.value) is down.value
    with pytest.raises(StorageUnavailableError, match="manifest.json"):
        store.open_run("r1", {"run_id": "r1"})
    with pytest.raises(StorageUnavailableError, match="shard-00004.json"):
        store.mark_shard_failed("r1", 4, "boom", 3)
    lease = RunLease(store, ["r1"], ttl_s=30, log=lambda line: None)
    with pytest.raises(StorageUnavailableError, match="lease.json"):
        lease.acquire()
    assert temp_files(tmp_path) == []  # before: shard-*.tmp-*, manifest.json.tmp-*, lease.json.tmp-* stayed
    store.fs.failing = False  # storage is back: the same calls work
    store.write_shard("r1", 3, one_row_table("a"))
    lease.acquire()
    lease.release()
    assert store.finished_shards("r1") == {3} and temp_files(tmp_path) == []


def test_a_probe_on_a_full_disk_is_an_outage_and_leaves_no_probe_file(tmp_path, monkeypatch):
    from pathlib import Path

    from storage.filesystem import probe_storage

    real_write = Path.write_bytes

    def disk_full(self, data):
        real_write(self, data[:2])  # some bytes made it, then the disk filled
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_bytes", disk_full)
    with pytest.raises(StorageUnavailableError, match="no space left"):
        probe_storage(str(tmp_path / "runs"))
    assert temp_files(tmp_path) == []  # before: a .scrutineer-probe-* file per failed probe


def test_local_write_failure_raises_a_classified_error(tmp_path):
    store = Store(str(tmp_path / "runs"))
    (tmp_path / "runs" / "r1").mkdir(parents=True)
    (tmp_path / "runs" / "r1" / "failed").write_text("a file where the folder should be")
    with pytest.raises(StorageAccessError, match="cannot write to"):
        store.mark_shard_failed("r1", 3, "boom", 2)


# -- stale temp files ---------------------------------------------------------------------------
def test_only_old_temp_files_of_killed_writers_are_removed(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    old = shards / "shard-00001.parquet.tmp-dead"
    live = shards / "shard-00002.parquet.tmp-live"
    done = shards / "shard-00000.parquet"
    for path in (old, live, done):
        path.write_bytes(b"x")
    hour_ago = time.time() - 3600
    os.utime(old, (hour_ago, hour_ago))
    os.utime(done, (hour_ago, hour_ago))
    assert remove_stale_temp_files(str(shards)) == 1
    assert not old.exists() and live.exists() and done.exists()
    assert remove_stale_temp_files(str(tmp_path / "nowhere")) == 0


# -- the driver survives a failure record it cannot write ----------------------------------------
def test_unwritable_failure_record_is_reported_not_fatal_and_retries_back_off(ray_session, tmp_path, capsys):
    from cluster.runner import PoolConfig, run_shard_tasks
    from tests.cluster.test_runner import BUILD, make_items, make_tasks
    from verifiers import SystemSpec

    store_uri = str(tmp_path / "runs")
    (tmp_path / "runs" / "r9").mkdir(parents=True)
    (tmp_path / "runs" / "r9" / "failed").write_text("not a folder: the failure record cannot be written")
    stale = tmp_path / "runs" / "r9" / "manifest.json.tmp-killed"
    stale.write_text("{")
    os.utime(stale, (time.time() - 3600,) * 2)
    spec = SystemSpec("scripted", {"raise_on": ["item-007"]})
    started = time.monotonic()
    outcome = run_shard_tasks(make_tasks("r9", spec, 10, 5), make_items(10), build=BUILD, store_uri=store_uri,
                              pool=PoolConfig(workers=2, max_attempts=3, retry_base_s=0.4))  # fmt: skip
    elapsed = time.monotonic() - started
    out = capsys.readouterr().out
    assert not stale.exists() and "removed 1 leftover temp files" in out
    assert list(outcome.failed) == [("r9", 1)] and list(outcome.unrecorded) == [("r9", 1)]
    assert "shard 1 failed but could not be recorded in storage" in out
    retries = [line for line in out.splitlines() if line.startswith("[retry]")]
    assert len(retries) == 2 and all(" in " in line for line in retries)  # each retry waits its backoff
    assert Store(store_uri).finished_shards("r9") == {0}
    assert elapsed < 120


# -- an S3 endpoint that goes away mid-run and comes back --------------------------------------
class SwitchableProxy:
    """A TCP front for a moto server on a fixed port: `stop()` closes the port and every open
    connection (clients get 'connection refused', as from a restarting S3 or MinIO), `start()`
    listens on the same port again. Objects live on in the moto behind it, as on a real S3's disks."""

    def __init__(self, target_port: int) -> None:
        self.port = free_port()
        self.target = target_port
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener:
            listener.close()
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


@pytest.mark.heavy
def test_s3_outage_mid_run_pauses_once_then_the_run_finishes_without_a_retry_storm(tmp_path, monkeypatch):
    # our own moto (the session's is shared), behind a proxy we can take down and bring back
    moto_port = free_port()
    moto = subprocess.Popen(["moto_server", "-H", "127.0.0.1", "-p", str(moto_port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    proxy = SwitchableProxy(moto_port)
    driver = None
    try:
        wait_for_port(moto_port, timeout=30)
        proxy.start()
        endpoint = f"http://127.0.0.1:{proxy.port}"
        aws = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}  # fmt: skip
        import boto3

        direct = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{moto_port}", region_name="us-east-1",
                              aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip
        direct.create_bucket(Bucket="outage-runs")
        corpus = tmp_path / "c.jsonl"
        corpus.write_text("".join(DEFAULT_CORPUS.read_text().splitlines(keepends=True)[:24]))
        log = tmp_path / "calls.log"
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS",)} | aws
        env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        # a new local Ray started by the driver: its workers share the driver's AWS variables
        driver = subprocess.Popen(
            [sys.executable, str(REPO_ROOT / "jobs" / "run_corpus.py"), "--corpus", str(corpus),
             "--plugins", "tests.helpers.scripted_system",
             "--systems", f"scripted:delay_s=0.4,call_log={log}", "--storage", "s3://outage-runs/r",
             "--tracking-uri", "none", "--shard-size", "2", "--workers", "2", "--bootstrap", "0"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        # wait until some shards are in storage, then take S3 away for a few seconds
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            keys = [o["Key"] for o in direct.list_objects_v2(Bucket="outage-runs").get("Contents", [])]
            if sum("/shards/shard-" in k for k in keys) >= 2:
                break
            assert driver.poll() is None, driver.stdout.read()
            time.sleep(0.2)
        else:
            pytest.fail("no shard reached storage in time")
        proxy.stop()
        time.sleep(6)
        proxy.start()  # the same port again
        out, _ = driver.communicate(timeout=300)
        assert driver.returncode == 0, out[-4000:]
        # exactly one output per item in storage, none lost to the outage and none twice
        for name, value in {**aws, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{moto_port}"}.items():
            monkeypatch.setenv(name, value)
        keys = [o["Key"] for o in direct.list_objects_v2(Bucket="outage-runs").get("Contents", [])]
        (run_id,) = {k.split("/")[1] for k in keys if k.endswith("/manifest.json")}
        item_ids = Store("s3://outage-runs/r").read_outputs(run_id).column("item_id").to_pylist()
    finally:
        proxy.stop()
        if driver and driver.poll() is None:
            driver.kill()
        moto.terminate()
        moto.wait(timeout=10)
    assert len(item_ids) == 24 and len(set(item_ids)) == 24
    pause_lines = [line for line in out.splitlines() if line.startswith("[storage] unavailable:")]
    assert len(pause_lines) == 1 and "; pausing, retrying in " in pause_lines[0], out[-4000:]
    assert "[storage] available again" in out and "Traceback" not in out
    assert not [line for line in out.splitlines() if line.startswith("[failed]")]
    shards = 12
    attempts = len(log.read_text().splitlines()) / 2  # two items per shard: each line is one item call
    assert attempts < 3 * shards, f"{attempts} shard attempts for {shards} shards: a retry storm"
    print(f"shard attempts {attempts:.0f} for {shards} shards; pause lines {len(pause_lines)}; "
          f"retry lines {sum(line.startswith('[retry]') for line in out.splitlines())}")


# -- a disk that fills up while the plan or the results are written --------------------------------
@pytest.mark.integration
@pytest.mark.parametrize(
    ("full_at", "status", "step"),
    [("/manifest.json", 2, "writing the run plan"), ("/tables/metrics.parquet", 1, "publishing the results")],
)
def test_a_full_disk_at_plan_or_publish_is_one_line_naming_the_path_not_a_traceback(ray_head, tmp_path, full_at,
                                                                                    status, step):  # fmt: skip
    from tests.helpers.run_job import run_job

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(DEFAULT_CORPUS.read_text().splitlines(keepends=True)[:6]))
    env = ray_head.env() | {"SCRUTINEER_TEST_FULL_DISK": full_at}
    result = run_job("run_corpus.py", "--corpus", str(corpus), "--plugins", "tests.helpers.scripted_system,"
                     "tests.helpers.full_disk", "--systems", "scripted", "--storage", str(tmp_path / "runs"),
                     "--tracking-uri", "none", "--bootstrap", "0", cwd=tmp_path, env=env, timeout=300)  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == status, output[-3000:]
    assert "Traceback" not in output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and step in errors[0] and full_at in errors[0], result.stderr[-2000:]
    assert "no space left" in errors[0].lower()
    assert temp_files(tmp_path / "runs") == []

"""One Store for every run, over local paths and `s3://` (pyarrow filesystems).

Layout under the store root, per run:

    <run_id>/manifest.json          what the run is (config, system spec, corpus version, code revision)
    <run_id>/shards/shard-00042.parquet   one per finished shard (Output records)
    <run_id>/failed/shard-00042.json      a shard whose retries are exhausted, with the error
    <run_id>/tables/<name>.parquet  items, truth, metrics, verdicts of the run
    <run_id>/status.json            running | complete | incomplete | failed, with counts
    <run_id>/lease.json             which driver owns the run now (storage/run_lease.py)
    <run_id>/answers/shard-00042.jsonl.gz  the response-cache entries shard 42 paid for or used
                                    (clients/answer_exchange.py): any node imports them

A shard file is the "done" marker: it becomes visible only when complete (temp file + rename on
local disk, a single PUT on S3, where an object appears atomically), so a killed worker or driver
leaves either a whole shard or none; a write that fails removes its temp file.

A store opened for a lease owner (`Store(uri, lease_owner=...)`, or a `LeasedStoreUri` handed to a
worker) writes shard files and failure records only while `<run_id>/lease.json` names that owner
(a fencing check): a driver that lost its run to another driver cannot land a shard after the
takeover. On local disk the check and the write run under the lease's flock, so no takeover falls
between them; on S3 they are two requests, and a takeover landing in the milliseconds between a
check and its PUT is not caught (a takeover needs the lease expired first).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import posixpath
import re
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from storage.filesystem import classify_storage_error, resolve
from storage.outages import latest_per_item
from storage.redaction import redact_text
from storage.result_json import result_json
from storage.schemas import OUTPUT_SCHEMA

_SHARD_FILE = re.compile(r"^shard-(\d+)\.parquet$")
LEASE_FILE = "lease.json"
"""`<run_id>/lease.json`: which driver owns the run (storage/run_lease.py writes it)."""


class LeaseLostError(Exception):
    """A fenced write was refused: the run's lease no longer names the owner this store writes for."""

    def __init__(self, run_id: str, holder: str) -> None:
        super().__init__(run_id, holder)  # both in args: the error survives pickling (Ray)
        self.run_id, self.holder = run_id, holder

    def __str__(self) -> str:
        return f"run {self.run_id} is no longer this driver's: its lease is held by {self.holder}"


class LeasedStoreUri(str):
    """A store URI that carries the lease owner its writers work for: a `Store` opened from it fences
    its shard and failure-record writes (a worker is handed this where it expects a plain URI)."""

    lease_owner: str

    def __new__(cls, uri: str, lease_owner: str) -> LeasedStoreUri:
        made = super().__new__(cls, uri)
        made.lease_owner = lease_owner
        return made

    def __reduce__(self):
        return (LeasedStoreUri, (str(self), self.lease_owner))


class Store:
    """Run records under one root URI."""

    def __init__(self, uri: str, *, lease_owner: str | None = None) -> None:
        self.lease_owner = lease_owner or getattr(uri, "lease_owner", None)
        """When set, shard files and failure records are written only while the run's lease names it."""
        uri = str(uri)
        self.fs, self.root = resolve(uri)
        self._local = isinstance(self.fs, pafs.LocalFileSystem)
        # Absolute for local paths: workers run in other directories (and on other nodes).
        self.uri = self.root if self._local else uri.rstrip("/")
        self._boto = None

    # -- paths ---------------------------------------------------------------------------------
    def path(self, run_id: str, *parts: str) -> str:
        return posixpath.join(self.root, run_id, *parts)

    def uri_of(self, run_id: str, *parts: str) -> str:
        """Where a run's file lives, as a user would type it (absolute path locally)."""
        return "/".join([self.uri, run_id, *parts])

    # -- low-level atomic writes --------------------------------------------------------------
    def _write_bytes(self, path: str, data: bytes) -> None:
        try:
            self._put(path, data)
        except Exception as exc:  # storage down or refusing: say which, so the runner pauses or stops
            classified = classify_storage_error(exc, path, local=self._local)
            if classified is None:
                raise
            raise classified from exc

    def _put(self, path: str, data: bytes) -> None:
        if self._local:
            self.fs.create_dir(posixpath.dirname(path), recursive=True)
            tmp = f"{path}.tmp-{uuid.uuid4().hex}"
            try:
                with self.fs.open_output_stream(tmp) as out:
                    out.write(data)
                self.fs.move(tmp, path)  # rename: atomic on one filesystem
            except BaseException:  # disk full, read-only, killed: no half-written temp file stays behind
                with contextlib.suppress(OSError):
                    os.remove(tmp)
                raise
        else:  # one PutObject: S3 makes an object visible only when complete
            bucket, _, key = path.partition("/")
            self._s3_client().put_object(Bucket=bucket, Key=key, Body=data)

    def _s3_client(self):
        if self._boto is None:
            import boto3  # the standard AWS variables (AWS_ENDPOINT_URL, credentials, region) apply

            self._boto = boto3.client("s3")
        return self._boto

    def write_json(self, run_id: str, name: str, obj: Any) -> str:
        path = self.path(run_id, name)
        self._write_bytes(path, result_json(obj, sort_keys=True).encode())  # NaN -> null, never a bare NaN
        return path

    def read_json(self, run_id: str, name: str) -> Any | None:
        path = self.path(run_id, name)
        if not self.exists(path):
            return None
        with self.fs.open_input_stream(path) as f:
            return json.loads(f.read())

    def write_table(self, run_id: str, name: str, table: pa.Table) -> str:
        path = self.path(run_id, "tables", f"{name}.parquet")
        self._write_bytes(path, _parquet_bytes(table))
        return path

    def read_table(self, run_id: str, name: str) -> pa.Table | None:
        path = self.path(run_id, "tables", f"{name}.parquet")
        return pq.read_table(path, filesystem=self.fs) if self.exists(path) else None

    def write_file(self, run_id: str, relative: str, data: bytes) -> str:
        path = self.path(run_id, relative)
        self._write_bytes(path, data)
        return path

    def read_bytes(self, path: str) -> bytes:
        """The file's bytes as stored (a `.gz` is not decompressed)."""
        with self.fs.open_input_stream(path, compression=None) as f:
            return f.read()

    def list_files(self, run_id: str, folder: str) -> list[tuple[str, int, int]]:
        """(path, size, mtime in ns; 0 when unknown) of every file in a run's folder, sorted."""
        selector = pafs.FileSelector(self.path(run_id, folder), allow_not_found=True)
        return sorted((info.path, info.size or 0, info.mtime_ns or 0)
                      for info in self.fs.get_file_info(selector) if info.type == pafs.FileType.File)  # fmt: skip

    def exists(self, path: str) -> bool:
        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    # -- conditional writes (compare-and-swap; used by the run lease) ----------------------------
    # A version is what a later conditional write must match: the ETag on S3 (conditional
    # PutObject/DeleteObject with If-None-Match / If-Match), a content digest on local disk,
    # where every conditional step runs under an exclusive flock on `<path>.lock`.
    def read_versioned(self, path: str) -> tuple[bytes, str] | None:
        """The object's bytes and version, or None when it does not exist."""
        if self._local:
            with self._local_lock(path):
                return self._local_read(path)
        bucket, _, key = path.partition("/")
        client = self._s3_client()
        try:
            response = client.get_object(Bucket=bucket, Key=key)
        except client.exceptions.NoSuchKey:
            return None
        return response["Body"].read(), response["ETag"]

    def create_if_absent(self, path: str, data: bytes) -> str | None:
        """Write `data` only if nothing is at `path`; the new version, or None when it exists."""
        if self._local:
            with self._local_lock(path):
                if os.path.exists(path):
                    return None
                self._write_bytes(path, data)
                return _digest(data)
        bucket, _, key = path.partition("/")
        return self._s3_conditional(lambda c: c.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*"))

    def replace_if_unchanged(self, path: str, data: bytes, version: str) -> str | None:
        """Overwrite `path` only if it is still at `version`; the new version, or None."""
        if self._local:
            with self._local_lock(path):
                current = self._local_read(path)
                if current is None or current[1] != version:
                    return None
                self._write_bytes(path, data)
                return _digest(data)
        bucket, _, key = path.partition("/")
        return self._s3_conditional(lambda c: c.put_object(Bucket=bucket, Key=key, Body=data, IfMatch=version))

    def delete_if_unchanged(self, path: str, version: str) -> bool:
        """Delete `path` only if it is still at `version`."""
        if self._local:
            with self._local_lock(path):
                current = self._local_read(path)
                if current is None or current[1] != version:
                    return False
                os.remove(path)
                return True
        bucket, _, key = path.partition("/")
        return self._s3_conditional(lambda c: c.delete_object(Bucket=bucket, Key=key, IfMatch=version)) is not None

    def _s3_conditional(self, call) -> str | None:
        from botocore.exceptions import ClientError

        try:
            response = call(self._s3_client())
        except ClientError as exc:
            error = exc.response.get("Error", {})
            # 412: the condition failed; 409: a concurrent conditional write won; 404: gone
            if error.get("Code") in {"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey", "404"}:
                return None
            if error.get("Code") == "NotImplemented":
                raise OSError(f"{self.uri}: this S3 service does not support conditional writes "
                              "(If-None-Match/If-Match), which the run lease needs") from exc  # fmt: skip
            raise
        return response.get("ETag", "deleted")

    def _local_lock(self, path: str):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return _FileLock(f"{path}.lock")

    @staticmethod
    def _local_read(path: str) -> tuple[bytes, str] | None:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        return data, _digest(data)

    # -- run lifecycle ---------------------------------------------------------------------------
    def open_run(self, run_id: str, manifest: dict[str, Any]) -> dict[str, Any]:
        """Create the run, or return the stored manifest when it exists (resume)."""
        existing = self.read_json(run_id, "manifest.json")
        if existing is not None:
            return existing
        self.write_json(run_id, "manifest.json", manifest)
        return manifest

    def write_shard(self, run_id: str, shard_id: int, table: pa.Table) -> str:
        path = self.path(run_id, "shards", f"shard-{shard_id:05d}.parquet")
        self._fenced_write(run_id, path, _parquet_bytes(table.cast(OUTPUT_SCHEMA)))
        failed = self.path(run_id, "failed", f"shard-{shard_id:05d}.json")
        try:
            if self.exists(failed):
                self.fs.delete_file(failed)  # a retried run finished it after all
        except Exception as exc:  # storage went down between the two calls: classified, like a write
            classified = classify_storage_error(exc, failed, local=self._local)
            if classified is None:
                raise
            raise classified from exc
        return path

    def mark_shard_failed(self, run_id: str, shard_id: int, error: str, attempts: int) -> str:
        path = self.path(run_id, "failed", f"shard-{shard_id:05d}.json")
        record = {"shard_id": shard_id, "error": redact_text(error), "attempts": attempts}
        self._fenced_write(run_id, path, result_json(record, sort_keys=True).encode())
        return path

    def _fenced_write(self, run_id: str, path: str, data: bytes) -> None:
        """Write `path`, and when this store writes for a lease owner, only while the run's lease names
        it (`LeaseLostError` otherwise, nothing written)."""
        if self.lease_owner is None:
            self._write_bytes(path, data)
            return
        lease_path = self.path(run_id, LEASE_FILE)
        try:
            if self._local:  # the lease's own lock: a takeover cannot fall between the check and the write
                with self._local_lock(lease_path):
                    self._check_lease(run_id, self._local_read(lease_path))
                    self._write_bytes(path, data)
                return
            self._check_lease(run_id, self.read_versioned(lease_path))
        except LeaseLostError:
            raise
        except Exception as exc:  # the lease could not be read: storage down, as for any write
            classified = classify_storage_error(exc, lease_path, local=self._local)
            if classified is None:
                raise
            raise classified from exc
        self._write_bytes(path, data)

    def _check_lease(self, run_id: str, current: tuple[bytes, str] | None) -> None:
        if current is None:
            raise LeaseLostError(run_id, "nobody (the lease was released or deleted)")
        try:
            record = json.loads(current[0])
            owner = record["owner"]
        except (ValueError, KeyError, TypeError):
            raise LeaseLostError(run_id, "an unreadable lease record") from None
        if owner != self.lease_owner:
            # a lease record is anyone's writing: keep what is quoted from it short
            raise LeaseLostError(run_id, f"host {str(record.get('host'))[:100]}, pid {str(record.get('pid'))[:20]} "
                                         f"(owner {str(owner)[:200]})")  # fmt: skip

    def finished_shards(self, run_id: str) -> set[int]:
        return set(self._shard_files(run_id))

    def failed_shards(self, run_id: str) -> dict[int, dict[str, Any]]:
        selector = pafs.FileSelector(self.path(run_id, "failed"), allow_not_found=True)
        failed = {}
        for info in self.fs.get_file_info(selector):
            if info.type == pafs.FileType.File and info.base_name.endswith(".json"):
                with self.fs.open_input_stream(info.path) as f:
                    record = json.loads(f.read())
                failed[int(record["shard_id"])] = record
        return failed

    def read_outputs(self, run_id: str) -> pa.Table:
        """Every finished shard of the run as one Output table, ordered by shard, one row per item: a
        retry shard's row supersedes the outage row it replaced (`storage/outages.py`)."""
        files = self._shard_files(run_id)
        tables = [pq.read_table(files[s], filesystem=self.fs) for s in sorted(files)]
        return latest_per_item(pa.concat_tables(tables).cast(OUTPUT_SCHEMA)) if tables else OUTPUT_SCHEMA.empty_table()

    def close_run(self, run_id: str, status: str, **counts: Any) -> str:
        return self.write_json(run_id, "status.json", {"status": status, **counts})

    def _shard_files(self, run_id: str) -> dict[int, str]:
        selector = pafs.FileSelector(self.path(run_id, "shards"), allow_not_found=True)
        files = {}
        for info in self.fs.get_file_info(selector):
            match = _SHARD_FILE.match(info.base_name)
            if info.type == pafs.FileType.File and match:
                files[int(match.group(1))] = info.path
        return files


class _FileLock:
    """An exclusive flock held for a `with` block (processes on one host or a POSIX-locking share)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> _FileLock:
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()

"""Resolve a storage URI (`./runs`, `file:///abs`, `s3://bucket/prefix`) to a pyarrow filesystem.

S3 settings come from the standard AWS environment variables, so moto, MinIO and AWS all work
unchanged: AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_S3), AWS_REGION / AWS_DEFAULT_REGION and the
usual credential chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, profiles).
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from urllib.parse import urlparse

import pyarrow.fs as pafs


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """Return (filesystem, root path inside it) for a storage URI."""
    parsed = urlparse(uri)
    if parsed.scheme == "s3":
        return s3_filesystem(), f"{parsed.netloc}{parsed.path}".rstrip("/")
    if parsed.scheme in ("", "file"):
        local = Path(parsed.path if parsed.scheme == "file" else uri).expanduser().resolve()
        return pafs.LocalFileSystem(), str(local)
    raise ValueError(f"unsupported storage URI scheme '{parsed.scheme}' in {uri!r}: use a path, file:// or s3://")


def s3_filesystem() -> pafs.S3FileSystem:
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    kwargs: dict = {"region": os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"}
    if endpoint:
        parsed = urlparse(endpoint)
        kwargs["endpoint_override"] = parsed.netloc or parsed.path
        kwargs["scheme"] = parsed.scheme or "https"
    if os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"):
        kwargs["access_key"] = os.environ["AWS_ACCESS_KEY_ID"]
        kwargs["secret_key"] = os.environ["AWS_SECRET_ACCESS_KEY"]
        if os.environ.get("AWS_SESSION_TOKEN"):
            kwargs["session_token"] = os.environ["AWS_SESSION_TOKEN"]
    return pafs.S3FileSystem(**kwargs)


def is_remote(uri: str) -> bool:
    return urlparse(uri).scheme not in ("", "file")


class StorageError(Exception):
    """Storage failed a run's read or write (see the two kinds below)."""


class StorageUnavailableError(StorageError):
    """Storage did not answer or cannot take writes for now (connection refused or reset, timeout,
    S3 5xx, a local disk error, a disk full or remounted read-only).

    Transient by nature: the runner pauses the run and retries, never counts it against a shard."""


class StorageAccessError(StorageError):
    """Storage answered but refused the run's writes (missing bucket, rejected or absent credentials,
    an unwritable folder): a configuration problem a user must fix; `hint` says how."""

    def __init__(self, reason: str, hint: str) -> None:
        super().__init__(reason, hint)
        self.reason, self.hint = reason, hint

    def __str__(self) -> str:
        return f"{self.reason}; {self.hint}"


_S3_REFUSALS = {
    "NoSuchBucket": "the bucket does not exist: create it (aws s3 mb s3://{bucket}) or fix --storage",
    "InvalidAccessKeyId": "the access key is not known to {endpoint}: fix AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY",
    "SignatureDoesNotMatch": "the secret key was rejected by {endpoint}: fix AWS_SECRET_ACCESS_KEY",
    "AccessDenied": "these credentials may not write under s3://{bucket}: grant s3:PutObject/DeleteObject or "
    "use other credentials",
    "ExpiredToken": "the session token expired: refresh AWS_SESSION_TOKEN",
    "InvalidToken": "the session token was rejected: refresh AWS_SESSION_TOKEN",
}
_LOCAL_OUTAGE_ERRNOS = {
    errno.EROFS: "read-only file system: remount it read-write",
    errno.EACCES: "permission denied: give this user write access again",
    errno.EPERM: "operation not permitted: give this user write access again",
    errno.ENOSPC: "no space left on the device: free some",
    errno.EDQUOT: "disk quota exceeded: raise the quota or free some space",
}
"""Local write errors that are outages: each fixed outside the run, which resumes once it is."""
_S3_TRANSIENT = {"SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout", "RequestTimeTooSkewed"}


def s3_endpoint() -> str:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or "AWS S3"


def classify_storage_error(exc: BaseException, path: str, *, local: bool) -> StorageError | None:
    """The storage error `exc` means, or None when it is not a storage failure (a bug, bad data).

    Returns a `StorageUnavailableError` (wait and retry) or a `StorageAccessError` (fix the setup)."""
    if isinstance(exc, (StorageUnavailableError, StorageAccessError)):
        return exc
    if local:
        # Before the layout errors: a disk that filled up or was remounted read-only (or whose
        # permissions were pulled) mid-run is fixed without touching the run, which waits for it.
        if isinstance(exc, OSError) and exc.errno in _LOCAL_OUTAGE_ERRNOS:
            return StorageUnavailableError(f"{path}: {_LOCAL_OUTAGE_ERRNOS[exc.errno]} ({exc.strerror or exc})")
        if isinstance(exc, (NotADirectoryError, FileExistsError, IsADirectoryError)):
            return StorageAccessError(f"cannot write to {path}: {exc.strerror or exc}",
                                      "choose a writable --storage folder or fix its permissions")  # fmt: skip
        if isinstance(exc, OSError):  # I/O error, a network mount gone: wait for it
            return StorageUnavailableError(f"{path}: {exc.strerror or exc}")
        return None
    try:
        import botocore.exceptions as bx
    except ImportError:  # pragma: no cover - boto3 is a dependency
        return None
    bucket = path.split("/", 1)[0]
    endpoint = s3_endpoint()
    if isinstance(exc, bx.NoCredentialsError):
        return StorageAccessError(f"no AWS credentials for s3://{bucket}",
                                  "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or a profile / instance role) on "
                                  "the driver and on every Ray node")  # fmt: skip
    if isinstance(exc, (bx.EndpointConnectionError, bx.ConnectionClosedError, bx.ConnectTimeoutError,
                        bx.ReadTimeoutError, bx.HTTPClientError)):  # fmt: skip
        return StorageUnavailableError(f"cannot reach {endpoint}: {_first_line(exc)}")
    if isinstance(exc, bx.ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        if status >= 500 or code in _S3_TRANSIENT:
            return StorageUnavailableError(f"{endpoint} answered {status or ''} {code}".replace("  ", " "))
        if code in _S3_REFUSALS:
            return StorageAccessError(code, _S3_REFUSALS[code].format(bucket=bucket, endpoint=endpoint))
        if status in (401, 403):
            return StorageAccessError(f"s3://{bucket}: {code or status}", "check the AWS credentials and bucket policy")
        return None
    if isinstance(exc, OSError):  # pyarrow's S3 reads: "AWS Error NETWORK_CONNECTION ..." and the like
        text = str(exc)
        if "NoSuchBucket" in text or "does not exist" in text and "bucket" in text.lower():
            return StorageAccessError("NoSuchBucket", _S3_REFUSALS["NoSuchBucket"].format(bucket=bucket))
        if any(m in text for m in ("NETWORK_CONNECTION", "curlCode", "Couldn't connect", "Connection refused",
                                   "Timeout", "SERVICE_UNAVAILABLE", "INTERNAL_FAILURE", "SLOW_DOWN")):  # fmt: skip
            return StorageUnavailableError(f"cannot reach {endpoint}: {_first_line(exc)}")
        if any(m in text for m in ("ACCESS_DENIED", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch")):
            return StorageAccessError(f"s3://{bucket}: access denied", "check the AWS credentials and bucket policy")
    return None


def probe_storage(uri: str) -> None:
    """Write and delete a small object under the storage root, as a run's workers will.

    Raises `StorageAccessError` or `StorageUnavailableError` naming what failed."""
    import uuid

    fs, root = resolve(uri)
    name = f".scrutineer-probe-{uuid.uuid4().hex}"
    local = isinstance(fs, pafs.LocalFileSystem)
    path = f"{root}/{name}"
    try:
        if local:
            Path(root).mkdir(parents=True, exist_ok=True)
            try:
                Path(path).write_bytes(b"probe")
            except BaseException:  # a write that failed half-way (disk full) leaves no probe file behind
                with contextlib.suppress(OSError):
                    Path(path).unlink(missing_ok=True)
                raise
            Path(path).unlink()
        else:
            import boto3
            from botocore.config import Config

            bucket, _, prefix = root.partition("/")
            key = f"{prefix}/{name}" if prefix else name
            # a few quick tries, never botocore's default minute of retries against a dead endpoint
            client = boto3.client("s3", config=Config(connect_timeout=5, read_timeout=10,
                                                      retries={"max_attempts": 2, "mode": "standard"}))  # fmt: skip
            client.put_object(Bucket=bucket, Key=key, Body=b"probe")
            client.delete_object(Bucket=bucket, Key=key)  # a failed PUT leaves no object: nothing to clean
    except Exception as exc:
        classified = classify_storage_error(exc, root, local=local)
        if classified is None:
            raise StorageUnavailableError(f"{uri}: {type(exc).__name__}: {_first_line(exc)}") from exc
        raise classified from exc


def remove_stale_temp_files(folder: str, older_than_s: float = 300.0) -> int:
    """Delete `*.tmp-*` files a killed writer left in a local folder (S3 writes leave none: one PUT).

    Only files untouched for `older_than_s`: a live writer's temp file is seconds old.
    Returns how many were removed."""
    import time

    removed = 0
    base = Path(folder)
    if not base.is_dir():
        return 0
    cutoff = time.time() - older_than_s
    for tmp in base.glob("*.tmp-*"):
        try:
            if tmp.is_file() and tmp.stat().st_mtime < cutoff:
                tmp.unlink()
                removed += 1
        except FileNotFoundError:  # its writer renamed it meanwhile
            continue
    return removed


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__

"""Resolve a storage URI (`./runs`, `file:///abs`, `s3://bucket/prefix`) to a pyarrow filesystem.

S3 settings come from the standard AWS environment variables, so moto, MinIO and AWS all work
unchanged: AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_S3), AWS_REGION / AWS_DEFAULT_REGION and the
usual credential chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, profiles).
"""

from __future__ import annotations

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

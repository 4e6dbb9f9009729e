"""A real S3 API for tests: `moto_server` over HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

import pytest

from tests.helpers.ports import free_port, wait_for_port

#: `params` for a `file_or_s3_store` fixture: the s3 case needs the session's moto server, so it is integration.
STORE_BACKENDS = ["file", pytest.param("s3", marks=pytest.mark.integration)]


@dataclass(frozen=True)
class S3Server:
    endpoint_url: str
    process: subprocess.Popen

    def env(self) -> dict[str, str]:
        """The standard AWS variables that point boto3 and pyarrow at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
        }

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint_url, region_name="us-east-1",
                            aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip


def start_moto() -> S3Server:
    port = free_port()
    proc = subprocess.Popen(
        ["moto_server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ},
    )  # fmt: skip
    wait_for_port(port, timeout=30)
    return S3Server(f"http://127.0.0.1:{port}", proc)


def file_or_s3_store(request, tmp_path, monkeypatch, prefix: str):
    """A `Store` on local disk or on the session's moto server (`request.param` "file" or "s3"): tests
    of storage primitives run on both backends with one parametrized fixture."""
    import uuid

    from storage.store import Store

    if request.param == "file":
        return Store(f"file://{tmp_path / 'runs'}")
    moto = request.getfixturevalue("moto_s3")
    for key, value in moto.env().items():
        monkeypatch.setenv(key, value)
    bucket = f"{prefix}-{uuid.uuid4().hex[:10]}"
    moto.client().create_bucket(Bucket=bucket)
    return Store(f"s3://{bucket}/prefix")

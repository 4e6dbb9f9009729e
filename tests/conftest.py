"""Session-wide services: one Ray head, one moto S3 server, started once and shared."""

from __future__ import annotations

import os

import pytest

from tests.helpers.paths import HALLMARK_DATA, SHARED_DATA

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="session")
def shared_data():
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def hallmark_data():
    return HALLMARK_DATA


@pytest.fixture(scope="session")
def ray_head(moto_s3):
    """A `ray start --head` node on 127.0.0.1 for the whole session. Like a cluster node with an
    instance role, it has S3 credentials (for the session's moto server) in its environment, so
    its workers can write run outputs to s3://."""
    from tests.helpers.ray_cluster import start_head, stop_head

    head = start_head(extra_env=moto_s3.env())
    yield head
    stop_head(head)


@pytest.fixture(scope="session")
def ray_session(ray_head):
    """This test process connected to the session's Ray head."""
    import ray

    os.environ["RAY_AUTH_MODE"] = "disabled"
    if not ray.is_initialized():
        ray.init(address=ray_head.gcs_address, logging_level="ERROR", log_to_driver=False)
    yield ray_head
    ray.shutdown()


@pytest.fixture(scope="session")
def moto_s3():
    from tests.helpers.s3_server import start_moto

    server = start_moto()
    yield server
    server.process.terminate()
    server.process.wait(timeout=10)

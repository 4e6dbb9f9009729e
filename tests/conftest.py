"""Session-wide services: one Ray head, one moto S3 server, started once and shared.

Also the `requires_shared_data` marker: tests that read the optional benchmark data (HALLMARK,
reference-source recordings, real papers; see docs/optional-data.md) are skipped with a reason
when it is absent, and fail when CI=true so that CI never passes by skipping them.
"""

from __future__ import annotations

import os

import pytest

from tests.helpers.paths import HALLMARK_DATA, SHARED_DATA, require_shared_data

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Drivers this process starts (ray.init) bind 127.0.0.1 like the session head: see tests/helpers/ray_cluster.py.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "requires_shared_data: reads the optional benchmark data (../shared/data or SCRUTINEER_SHARED_DATA); "
        "skipped when absent, an error when CI=true",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("requires_shared_data"):
        require_shared_data()


@pytest.fixture(scope="session")
def shared_data():
    require_shared_data()
    return SHARED_DATA


@pytest.fixture(scope="session")
def hallmark_data():
    require_shared_data()
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


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    """One real MLflow tracking server on 127.0.0.1 for the session, started as a cluster runs it
    (`mlflow/launch_server.py --detach`); tests keep apart by run ids and experiments."""
    import signal
    import subprocess
    import sys

    from tests.helpers.paths import REPO_ROOT
    from tests.helpers.ports import free_port

    folder = tmp_path_factory.mktemp("mlflow-server")
    port = free_port()
    started = subprocess.run(
        [sys.executable, str(REPO_ROOT / "mlflow" / "launch_server.py"), "--detach", "--port", str(port),
         "--backend", f"sqlite:///{folder}/mlflow.db", "--artifacts", str(folder / "artifacts")],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    pid = int(started.stdout.strip())
    yield f"http://127.0.0.1:{port}"
    os.kill(pid, signal.SIGTERM)

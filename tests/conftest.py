"""Session-wide services: one Ray head, one moto S3 server, started once and shared.

Also the `requires_shared_data` marker: tests that read the optional benchmark data (HALLMARK,
reference-source recordings, real papers; see docs/optional-data.md) are skipped with a reason
when it is absent, and fail when CI=true so that CI never passes by skipping them.

Test tiers: a test that starts Ray, a server or a subprocess is `integration`. Tests using a fixture
that starts one are marked here (`pytest_collection_modifyitems`); modules and tests that start one
themselves carry the marker. A test with neither marker that starts a subprocess, a Ray cluster, a
multiprocessing worker or a socketserver fails, saying to mark it, so the unit tier stays fast and
free of processes.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from unittest import mock

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
    config.pluginmanager.register(UnitGuard(), "scrutineer-unit-guard")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("requires_shared_data"):
        require_shared_data()


#: Fixtures that start Ray, a server or a subprocess (fixtures depending on them are in a test's closure too).
INTEGRATION_FIXTURES = frozenset({"ray_head", "ray_session", "moto_s3", "mlflow_server", "bib_server_session",
                                  "netns_ray"})  # fmt: skip
#: Names whose use in a fixture's own body means it starts one (module-local server fixtures, sandbox pools).
_STARTERS = frozenset({"start_bib_server", "start_head", "start_moto", "replay_server", "run_job", "submit_job",
                       "deploy_checkers", "IsolatedRunner", "netns_cluster", "subprocess"})  # fmt: skip


def _starts_something(fixturedef: pytest.FixtureDef) -> bool:
    if fixturedef.argname in INTEGRATION_FIXTURES:
        return True
    code = getattr(fixturedef.func, "__code__", None)
    return code is not None and not _STARTERS.isdisjoint(code.co_names)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects and before xdist's loadgroup reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    integration = pytest.mark.integration
    for item in items:
        if not item.get_closest_marker("integration"):
            info = getattr(item, "_fixtureinfo", None)
            if info is not None and any(_starts_something(defs[-1]) for name, defs in info.name2fixturedefs.items()
                                        if name in item.fixturenames and defs):  # fmt: skip
                item.add_marker(integration)
        if item.get_closest_marker("integration") or item.get_closest_marker("heavy"):
            # With `-n 2 --dist loadgroup` (the README's command) one worker runs every test that starts
            # Ray or a server, one after another against the one session head, while the other worker
            # runs the unit tests: the tiers overlap instead of adding up, and no test shares the
            # machine with a second Ray head.
            item.add_marker(pytest.mark.xdist_group("processes"))


class UnmarkedProcessError(RuntimeError):
    """A unit test (neither `integration` nor `heavy`) started a process, Ray or a server."""


_violations = pytest.StashKey[list[str]]()


def _refuse(item: pytest.Item, what: str) -> Callable[..., None]:
    def refuse(*args: object, **kwargs: object) -> None:
        message = f"this test starts {what}: mark it integration (@pytest.mark.integration or module pytestmark)"
        item.stash.setdefault(_violations, []).append(message)
        raise UnmarkedProcessError(message)

    return refuse


def _unit_guards(item: pytest.Item) -> ExitStack:
    """Patches that make starting a subprocess, Ray, a multiprocessing worker or a server fail loudly."""
    import multiprocessing.process
    import platform
    import socketserver

    platform.processor()  # runs `uname -p` once per process, then cached; libraries (MLflow) ask for it
    if importlib.util.find_spec("httpcore"):  # importing it imports trio, which runs `ldconfig -p` once
        import httpcore  # noqa: F401  (httpx imports it at its first client, inside whichever test comes first)
    stack = ExitStack()
    stack.enter_context(mock.patch.object(subprocess.Popen, "__init__", _refuse(item, "a subprocess")))
    stack.enter_context(mock.patch.object(multiprocessing.process.BaseProcess, "start",
                                          _refuse(item, "a multiprocessing worker")))  # fmt: skip
    stack.enter_context(mock.patch.object(socketserver.TCPServer, "server_bind", _refuse(item, "a server")))
    if "ray" in sys.modules:  # not imported here: importing Ray costs seconds; starting it locally needs Popen
        stack.enter_context(mock.patch.object(sys.modules["ray"], "init", _refuse(item, "Ray (ray.init)")))
    return stack


def _is_unit(item: pytest.Item) -> bool:
    return not (item.get_closest_marker("integration") or item.get_closest_marker("heavy"))


class UnitGuard:
    """Runs each unit test's setup and call under `_unit_guards` (a plugin, so the hooks can wrap)."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        if not _is_unit(item):
            return (yield)
        with _unit_guards(item):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        if not _is_unit(item):
            return (yield)
        with _unit_guards(item):
            try:
                result = yield
            except Exception:
                _fail_on_violation(item)  # the refused start is the cause, not what the test saw next
                raise
        _fail_on_violation(item)  # also when the code under test swallowed the error
        return result


def _fail_on_violation(item: pytest.Item) -> None:
    if violations := item.stash.get(_violations, None):
        pytest.fail(violations[0], pytrace=False)


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
def mlflow_template(tmp_path_factory) -> str:
    """An empty MLflow sqlite store, migrated once for the session (creating one costs seconds of CPU)."""
    from mlflow.tracking import MlflowClient

    path = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()  # runs the schema migrations
    return str(path)


@pytest.fixture
def mlflow_sqlite(tmp_path, mlflow_template) -> str:
    """A tracking URI of this test's own empty MLflow sqlite store: a copy of the session's template, so
    tests stay apart without paying for the migrations each time."""
    path = tmp_path / "mlflow-store" / "mlflow.db"
    path.parent.mkdir()
    shutil.copyfile(mlflow_template, path)
    return f"sqlite:///{path}"


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

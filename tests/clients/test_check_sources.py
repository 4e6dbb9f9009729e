"""`jobs/check_sources.py`: exit codes 0 / 1 / 2 against the local server and a dead port."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers.bib_server import SOURCES, Fault
from tests.helpers.paths import REPO_ROOT
from tests.helpers.ports import free_port

pytestmark = pytest.mark.integration  # runs jobs/check_sources.py as a subprocess

JOB = REPO_ROOT / "jobs" / "check_sources.py"


def overrides(server, dead: str | None = None) -> list[str]:
    args = []
    for name in SOURCES:
        url = f"http://127.0.0.1:{free_port()}" if name == dead else server.base_url(name)
        args += ["--base-url", f"{name}={url}"]
    return args


def check(args: list[str]) -> tuple[int, list[dict], str]:
    proc = subprocess.run([sys.executable, str(JOB), *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO_ROOT)  # fmt: skip
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def test_all_up(bib_server):
    code, rows, _ = check(["--timeout", "2", *overrides(bib_server)])
    assert code == 0
    assert {r["source"]: r["status"] for r in rows} == dict.fromkeys(SOURCES, "up")
    assert all(r["reason"] == "" for r in rows)  # every probe record was found


def test_required_source_down(bib_server):
    code, rows, err = check(
        ["--require", "dblp,openalex", "--timeout", "2", *overrides(bib_server, dead="dblp")]
    )
    assert code == 1 and "dblp" in err
    by = {r["source"]: r for r in rows}
    assert by["dblp"]["status"] == "down" and "TransientError" in by["dblp"]["reason"]
    assert by["openalex"]["status"] == "up"


def test_optional_source_down_and_injected_500s(bib_server):
    bib_server.inject("crossref", Fault("500"), Fault("500"))  # both probe attempts fail
    code, rows, _ = check(["--sources", "crossref", "--require", "dblp,openalex", "--timeout", "2",
                           *overrides(bib_server)])  # fmt: skip
    assert code == 0
    assert {r["source"]: r["status"] for r in rows} == {"crossref": "down", "dblp": "up", "openalex": "up"}


def test_nothing_probed():
    code, rows, err = check(["--sources", ""])
    assert code == 2 and rows == [] and "nothing probed" in err
    code, _, err = check(["--sources", "nosuchsource"])
    assert code == 2 and "unknown sources" in err

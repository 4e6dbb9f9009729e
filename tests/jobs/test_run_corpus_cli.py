"""run_corpus.py catches configuration mistakes before any Ray starts, in seconds, with exit 2.

Those checks run the job's `main(argv)` in this process (unit tier: the guard fails a test whose job
starts a process, a server or Ray); what needs a fresh interpreter or a server is `integration`."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from cluster.systems_flag import SystemsFlagError, parse_systems_flag
from tests.helpers.paths import REPO_ROOT
from tests.helpers.ports import free_port
from tests.helpers.run_job import run_job_in_process

SNAPSHOT = "2026-11-29"


def offline_env() -> dict[str, str]:
    """No cluster to reach: a check that happens before Ray cannot depend on one."""
    return {"RAY_ADDRESS": f"127.0.0.1:{free_port()}"}  # nothing listens: reaching Ray would fail


@pytest.fixture
def timed(monkeypatch):
    """run_corpus.py's main(argv) in-process in `cwd`, offline: (exit status + output, seconds)."""

    def run(*args: str, cwd, env=None, unset=()) -> tuple[subprocess.CompletedProcess, float]:
        started = time.monotonic()
        done = run_job_in_process("run_corpus.py", *args, cwd=cwd, monkeypatch=monkeypatch,
                                  env={**offline_env(), **(env or {})}, unset=unset)  # fmt: skip
        return done, time.monotonic() - started

    return run


@pytest.mark.integration  # a fresh interpreter: what --help imports
def test_help_imports_no_heavy_module(tmp_path):
    probe = (
        "import runpy, sys\n"
        f"sys.argv = ['run_corpus.py', '--help']\n"
        "try:\n"
        f"    runpy.run_path({str(REPO_ROOT / 'jobs' / 'run_corpus.py')!r}, run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ['ray', 'mlflow', 'litellm', 'pyarrow', 'matplotlib', 'pydantic']\n"
        "print('HEAVY=' + ','.join(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--systems syntax" in done.stdout and "field_match:closed_world=true" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "HEAVY="


def test_missing_system_argument_is_named_before_ray(tmp_path, timed):
    done, elapsed = timed("--systems", "llm_zero_shot", "--snapshot", SNAPSHOT, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "system 'llm_zero_shot': missing argument 'model'" in done.stderr
    assert "Traceback" not in done.stderr and "[corpus]" not in done.stdout  # nothing ran
    assert elapsed < 30
    assert not (tmp_path / "runs").exists()


def test_unknown_system_argument_is_named(tmp_path, timed):
    done, _ = timed("--systems", "prescreen:reference_yaer=2020", cwd=tmp_path)
    assert done.returncode == 2
    assert "system 'prescreen': unknown argument 'reference_yaer' (accepted: reference_year)" in done.stderr


def test_wrong_argument_value_is_named_before_ray(tmp_path, timed):
    """Issue 23 item 7: `closed_world="no"` once passed and ran as true."""
    done, elapsed = timed("--systems", 'field_match:closed_world="no"', "--snapshot", SNAPSHOT, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "system 'field_match': argument 'closed_world': Input should be a valid boolean (got 'no')" in done.stderr
    assert "Traceback" not in done.stderr and elapsed < 30


def test_systems_flag_takes_arguments_as_toml_or_json_values():
    assert parse_systems_flag("field_match:closed_world=true,index_path=idx.parquet,prescreen") == [
        {"name": "field_match", "args": {"closed_world": True, "index_path": "idx.parquet"}},
        {"name": "prescreen", "args": {}},
    ]
    assert parse_systems_flag('llm_zero_shot:model=openai/gpt-4o-mini,api_base=http://127.0.0.1:8000/v1,seed=7') == [
        {"name": "llm_zero_shot", "args": {"model": "openai/gpt-4o-mini", "api_base": "http://127.0.0.1:8000/v1",
                                           "seed": 7}}  # fmt: skip
    ]
    assert parse_systems_flag('field_match:sources=["crossref", "dblp"],absence_quorum=2')[0]["args"] == {
        "sources": ["crossref", "dblp"], "absence_quorum": 2}  # fmt: skip
    with pytest.raises(SystemsFlagError, match="comes before any system"):
        parse_systems_flag("closed_world=true")


def test_valid_system_arguments_pass_validation(tmp_path, timed):
    """Accepted arguments get past every check up to reaching Ray (here: nothing listens)."""
    done, _ = timed("--systems", "always_valid:confidence=0.7", cwd=tmp_path)
    assert done.returncode == 2
    assert "argument" not in done.stderr and "nothing answers at 127.0.0.1" in done.stderr


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--snapshot", "../../etc", "snapshot must be a date YYYY-MM-DD, got '../../etc'"),
        ("--snapshot", "2026-02-30", "snapshot '2026-02-30' is not a real date"),
    ],
)
def test_snapshot_must_be_a_real_date(tmp_path, flag, value, message, timed):
    done, elapsed = timed(flag, value, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr and elapsed < 30


def test_eval_mode_in_a_config_is_checked(tmp_path, timed):
    config = tmp_path / "run.toml"
    config.write_text('eval_mode = "lenient"\n')
    done, _ = timed("--config", str(config), cwd=tmp_path)
    assert done.returncode == 2
    assert str(config) in done.stderr and "eval_mode" in done.stderr and "conservative" in done.stderr


def test_resuming_with_another_shard_size_fails_before_ray(tmp_path, timed):
    """A run stored with shard size 25, asked again with 50: said before any cluster is reached
    (RAY_ADDRESS points at nothing, so reaching Ray would fail differently)."""
    from cluster.run_config import RunConfig
    from cluster.run_plan import run_id_of
    from corpora import load_corpus
    from storage.store import Store
    from verifiers import SystemSpec

    config = RunConfig(snapshot=SNAPSHOT, storage=str(tmp_path / "runs"))
    corpus = load_corpus(config.corpus.path, config.corpus.format, config.corpus.name, config.corpus.split)
    run_id = run_id_of(config, corpus, SystemSpec("prescreen"))
    Store(config.storage).open_run(run_id, {"run_id": run_id, "shard_size": 25})

    done, elapsed = timed("--systems", "prescreen", "--snapshot", SNAPSHOT, "--shard-size", "50", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"run {run_id}" in done.stderr and "was started with shard_size 25, not 50" in done.stderr
    assert "--shard-size 25" in done.stderr and "--snapshot" in done.stderr and "--storage" in done.stderr
    assert elapsed < 30


def test_unreachable_ray_address_fails_in_seconds(tmp_path, timed):
    port = free_port()
    done, elapsed = timed("--systems", "prescreen", "--ray-address", f"127.0.0.1:{port}", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"--ray-address=127.0.0.1:{port}: nothing answers at 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr and elapsed < 20

    dashboard = f"http://127.0.0.1:{port}"
    done, elapsed = timed("--systems", "prescreen", cwd=tmp_path, env={**offline_env(), "RAY_ADDRESS": dashboard})
    assert done.returncode == 2
    assert f"RAY_ADDRESS={dashboard}: no Ray dashboard answers there" in done.stderr and elapsed < 20


def test_list_systems_says_what_is_missing_in_aligned_columns(tmp_path, timed):
    done, _ = timed("--list-systems", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    column = lines[0].index("available")
    rows = {}
    for line in lines[1:]:
        assert line[column - 1] == " " and line[column:].split()[0] in ("yes", "no"), line
        rows[line.split()[0]] = line[column:]
    assert rows["prescreen"].startswith("yes") and rows["always_valid"].startswith("yes")
    assert rows["llm_zero_shot"].startswith("no") and "missing argument 'model'" in rows["llm_zero_shot"]
    assert rows["field_match"].startswith("no") and "needs argument 'index_path'" in rows["field_match"]
    notes_column = lines[0].index("notes")
    assert all(len(line) >= notes_column for line in lines[1:])


@pytest.mark.integration  # starts an HTTP server
def test_source_probe_decides_availability(monkeypatch):
    """doi_only's default source is probed: a server that answers (any status) is reachable,
    a closed port is not; the answer is cached for the listing."""
    import http.server
    import threading

    from verifiers import registry

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):  # noqa: N802
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        up = f"http://127.0.0.1:{server.server_address[1]}"
        down = f"http://127.0.0.1:{free_port()}"
        entry = registry.get_entry("doi_only")
        monkeypatch.setattr(registry, "source_urls", lambda names: {n: up for n in names if n == "doi_org"})
        assert entry.unavailable_reasons() == []
        monkeypatch.setattr(registry, "source_urls", lambda names: {n: down for n in names if n == "doi_org"})
        started = time.monotonic()
        (reason,) = entry.unavailable_reasons()
        assert reason == f"source 'doi_org': {down} unreachable (ConnectionRefusedError)"
        assert time.monotonic() - started < registry.PROBE_TIMEOUT_S + 1
        assert registry.probe_url.cache_info().hits >= 0
        assert entry.unavailable_reasons(probe=False) == []  # a run never probes: outages are UNCERTAIN answers
    finally:
        server.shutdown()


def test_api_key_env_must_be_set(monkeypatch):
    from verifiers import registry

    monkeypatch.delenv("SCRUTINEER_TEST_KEY", raising=False)
    entry = registry.get_entry("llm_zero_shot")
    reasons = entry.unavailable_reasons({"model": "openai/gpt-4o-mini", "api_key_env": "SCRUTINEER_TEST_KEY"}, probe=False)
    assert "environment variable SCRUTINEER_TEST_KEY (api_key_env) is not set" in reasons
    assert json.dumps(reasons).count("missing argument") == 0


def test_hosted_model_without_its_key_is_refused_before_ray(tmp_path, timed):
    done, _ = timed("--systems", "llm_zero_shot:model=openai/gpt-4o-mini", cwd=tmp_path, unset=("OPENAI_API_KEY",))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "model openai/gpt-4o-mini needs environment variable OPENAI_API_KEY" in done.stderr


def test_list_systems_verbose_splits_identity_from_runtime_arguments(tmp_path, timed):
    """Which arguments make a run's identity (issue 12): runtime ones are listed apart and leave the
    config hash alone, identity ones change it."""
    from verifiers.registry import SystemSpec

    done, _ = timed("--list-systems", "--verbose", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("field_match "))
    identity, runtime = lines[at + 1].split(":", 1)[1], lines[at + 2].split(":", 1)[1]
    assert "closed_world" in identity and "index_path" in identity and "max_concurrency" not in identity
    assert "max_concurrency" in runtime and "client_options" in runtime
    base = SystemSpec("field_match", {"index_path": "x.parquet", "max_concurrency": 4})
    assert SystemSpec("field_match", {"index_path": "x.parquet", "max_concurrency": 16}, label="other").config_hash() \
        == base.config_hash()
    assert SystemSpec("field_match", {"index_path": "x.parquet", "closed_world": True}).config_hash() != base.config_hash()

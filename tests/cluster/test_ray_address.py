"""One place resolves Ray addresses for every job: GCS host:port, dashboard URL, unreachable."""

from __future__ import annotations

import time

import pytest

from cluster.ray_address import RayAddressError, resolve_ray_address
from tests.helpers.paths import REPO_ROOT
from tests.helpers.ports import free_port
from tests.helpers.run_job import run_job, run_job_in_process


def test_dashboard_url_resolves_to_the_gcs_address(ray_head):
    target = resolve_ray_address(ray_head.dashboard_url)
    # the host is the one the head advertises (its node IP), the port the head's GCS port
    assert target.address.rpartition(":")[2] == ray_head.gcs_address.rpartition(":")[2]
    assert target.source == "--ray-address" and target.given == ray_head.dashboard_url
    assert resolve_ray_address(ray_head.gcs_address).address == ray_head.gcs_address


def test_unset_address_means_a_local_ray(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert resolve_ray_address(None).is_local


@pytest.mark.parametrize("form", ["{port}", "http://127.0.0.1:{port}", "127.0.0.1:{port}", "ray://127.0.0.1:{port}"])
def test_bad_or_unreachable_address_fails_in_seconds(monkeypatch, form):
    monkeypatch.setenv("RAY_ADDRESS", form.format(port=free_port()))
    started = time.monotonic()
    with pytest.raises(RayAddressError, match=r"^RAY_ADDRESS=") as raised:
        resolve_ray_address(None)
    assert time.monotonic() - started < 5
    assert "Traceback" not in str(raised.value)


@pytest.mark.heavy
def test_run_corpus_accepts_the_dashboard_url_in_ray_address(ray_head, tmp_path):
    """`source .dev-services/env.sh` exports RAY_ADDRESS=http://127.0.0.1:<dashboard>."""
    env = {**ray_head.env(), "RAY_ADDRESS": ray_head.dashboard_url}
    done = run_job("run_corpus.py", "--systems", "prescreen", "--snapshot", "2026-11-29", "--bootstrap", "0",
                   "--tracking-uri", "none", cwd=tmp_path, env=env)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "ValueError" not in done.stderr and "Leaderboard" in done.stdout


def test_serve_checkers_refuses_detach_without_a_cluster(tmp_path, monkeypatch):
    started = time.monotonic()
    done = run_job_in_process("serve_checkers.py", "--config", str(REPO_ROOT / "configs" / "checkers.toml"), "--detach",
                              cwd=tmp_path, monkeypatch=monkeypatch, unset=("RAY_ADDRESS", "RAY_JOB_CONFIG_JSON_ENV_VAR"))  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--detach needs a running Ray cluster" in done.stderr and done.stdout == ""
    assert time.monotonic() - started < 30


def test_serve_checkers_unreachable_address_and_missing_config(tmp_path, monkeypatch):
    env = {"RAY_ADDRESS": f"http://127.0.0.1:{free_port()}"}
    done = run_job_in_process("serve_checkers.py", "--detach", cwd=tmp_path, monkeypatch=monkeypatch, env=env)
    assert done.returncode == 2 and "no Ray dashboard answers there" in done.stderr
    assert "Traceback" not in done.stderr
    missing = run_job_in_process("serve_checkers.py", "--config", "checkers.toml", cwd=tmp_path, monkeypatch=monkeypatch,
                                 env=env)  # fmt: skip
    assert missing.returncode == 2 and "configs/checkers.toml" in missing.stderr


def test_bundled_checkers_config_documents_every_option():
    import dataclasses
    import tomllib

    from checkers.service import Autoscaling, ServiceConfig

    path = REPO_ROOT / "configs" / "checkers.toml"
    text = path.read_text()
    config = ServiceConfig.from_toml(path)
    assert config.extra == {}
    assert dataclasses.replace(config) == ServiceConfig()  # the file states the defaults
    documented = set(tomllib.loads(text)["checkers"]) | {"autoscaling"}
    assert documented == {f.name for f in dataclasses.fields(ServiceConfig)} - {"extra"}
    for f in dataclasses.fields(Autoscaling):
        assert f"# {f.name} = " in text

"""Secrets never reach manifests, MLflow, artifacts or stdout: by key name, inside URL values
(userinfo, query parameters, URLs inside longer text), in nested dicts and lists.

This module is also a plugin (`--plugins tests.faults.test_secrets`): it registers `secret_probe`,
a system that takes credentials as arguments and answers without any network call.
"""

from __future__ import annotations

import json

import pytest

from storage.records import Item, Output
from storage.redaction import REDACTED, is_secret_key, redact, redact_text
from verifiers.registry import system
from verifiers.system import RunContext

USERINFO_PASS = "FAKEPASS-userinfo-5b1e"
QUERY_SECRET = "sk-FAKEQUERY-7d2c"
QUERY_TOKEN = "FAKETOKEN-query-91aa"
ARG_KEY = "sk-FAKEARG-3f0e"
BEARER = "FAKEBEARER-c4d8"
ENV_KEY = "sk-FAKEENV-a6b2"
SECRETS = (USERINFO_PASS, QUERY_SECRET, QUERY_TOKEN, ARG_KEY, BEARER, ENV_KEY)


class SecretProbe:
    """Holds credentials like an API-backed verifier, answers VALID for every item offline."""

    def __init__(self, api_base: str, api_key: str, headers: dict[str, str], note: str = "") -> None:
        self.name = "secret_probe"
        self.api_base, self.api_key, self.headers, self.note = api_base, api_key, headers, note

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        return [Output(item_id=i.item_id, label="VALID", confidence=0.6, reason="probe") for i in items]


@system("secret_probe", description="test system: takes credentials as arguments, makes no network call")
def build_secret_probe(**kwargs) -> SecretProbe:
    return SecretProbe(**kwargs)


# -- unit: what redact() removes -------------------------------------------------------------------


def test_userinfo_and_query_secrets_in_url_values_under_any_key():
    config = {
        "tracking_uri": "https://alice:hunter2@mlflow.example.com:5000/",
        "llm": {"api_base": "https://api.example.com/v1?api_key=sk-abc&model=gpt&token=t0k"},
        "note": "see postgresql://bob:s3cr3t@db.internal:5432/x?sslmode=require for details",
        "plain": "https://example.com/path?q=1&page=2",
    }
    out = redact(config)
    assert out["tracking_uri"] == f"https://{REDACTED}@mlflow.example.com:5000/"
    assert (
        out["llm"]["api_base"] == f"https://api.example.com/v1?api_key={REDACTED}&model=gpt&token={REDACTED}"
    )
    assert out["note"] == f"see postgresql://{REDACTED}@db.internal:5432/x?sslmode=require for details"
    assert out["plain"] == config["plain"]  # nothing secret: unchanged, byte for byte
    assert (
        "hunter2" not in json.dumps(out) and "sk-abc" not in json.dumps(out) and "t0k" not in json.dumps(out)
    )


def test_broader_key_names_case_insensitive_nested():
    config = {
        "systems": [
            {
                "name": "x",
                "args": {
                    "ACCESS_KEY": "AKIAFAKE",
                    "private_key": "-----BEGIN",
                    "auth": "u:p",
                    "Bearer": "abc",
                    "headers": {"X-Api": "zzz"},
                    "dsn": "sentry://k@h/1",
                    "Cookie": "sid=1",
                    "session_token": "st",
                    "client_secret": "cs",
                },
            }
        ],
        "llm": {
            "max_tokens": 512,
            "budget_tokens": None,
            "use_auth": False,
            "authors": "Smith",
            "tokenizer": "gpt2",
        },
    }
    args = redact(config)["systems"][0]["args"]
    assert set(args.values()) == {REDACTED}
    llm = redact(config)["llm"]
    assert llm == config["llm"]  # counts, flags and bibliographic fields are not secrets
    assert is_secret_key("OPENAI_API_KEY") and is_secret_key("x-auth-header") and not is_secret_key("model")


def test_redact_text_keeps_text_without_urls():
    assert redact_text("a@b c?d=e") == "a@b c?d=e"
    assert redact_text("ssh://git@github.com/x") == f"ssh://{REDACTED}@github.com/x"


# -- end to end: a real run through jobs/run_corpus.py -------------------------------------------


@pytest.mark.heavy
def test_run_corpus_leaks_no_secret_anywhere(ray_head, tmp_path):
    from tests.helpers.run_job import run_job

    api_base = f"https://probe-user:{USERINFO_PASS}@api.example.invalid/v1?api_key={QUERY_SECRET}&model=m&token={QUERY_TOKEN}"
    args = {"api_base": api_base, "api_key": ARG_KEY, "headers": {"Authorization": f"Bearer {BEARER}"},
            "note": f"mirror at {api_base}"}  # fmt: skip
    config = tmp_path / "secrets.toml"
    config.write_text(_toml(args))
    db = tmp_path / "mlflow" / "x.db"
    db.parent.mkdir()
    env = {**ray_head.env(), "OPENAI_API_KEY": ENV_KEY}
    done = run_job("run_corpus.py", "--config", str(config), "--storage", str(tmp_path / "store"),
                   "--tracking-uri", f"sqlite:///{db}", cwd=tmp_path, env=env, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    manifests = list((tmp_path / "store").rglob("manifest.json"))
    assert manifests, "the run wrote no manifest"
    manifest = json.loads(manifests[0].read_text())
    assert manifest["system"]["args"]["api_key"] == REDACTED
    assert manifest["system"]["args"]["api_base"].startswith(f"https://{REDACTED}@api.example.invalid/v1?")
    produced = [p for p in tmp_path.rglob("*") if p.is_file() and p != config]
    assert any(p.suffix == ".parquet" for p in produced) and any(p.name == "x.db" for p in produced)
    assert any("artifacts" in p.parts for p in produced), "MLflow artifacts were not written"
    leaks = [
        (str(p.relative_to(tmp_path)), secret)
        for p in produced
        for secret in SECRETS
        if secret.encode() in p.read_bytes()
    ]
    leaks += [("stdout/stderr", s) for s in SECRETS if s in done.stdout or s in done.stderr]
    assert leaks == []


def _toml(args: dict) -> str:
    inline = ", ".join(
        f"{k} = {json.dumps(v)}" if isinstance(v, str)
        else f"{k} = {{ {', '.join(f'{json.dumps(hk)} = {json.dumps(hv)}' for hk, hv in v.items())} }}"
        for k, v in args.items()
    )  # fmt: skip
    return (
        'snapshot = "2026-11-29"\nbootstrap = 0\nshard_size = 10\nworkers = 2\nplugins = ["tests.faults.test_secrets"]\n'
        f'[[systems]]\nname = "secret_probe"\nargs = {{ {inline} }}\n'
    )


def test_output_errors_and_failed_shard_records_lose_url_credentials(tmp_path):
    from storage.records import Output
    from storage.store import Store

    secret_url = "https://user:FAKEPASS-err@llm.example/v1?api_key=sk-FAKE-err"
    row = Output.failed("i1", f"APIConnectionError: could not reach {secret_url}").to_row("run", "sys", 0)
    assert "FAKEPASS-err" not in row["error"] and "sk-FAKE-err" not in row["error"]
    assert "llm.example" in row["error"]
    store = Store(str(tmp_path))
    store.mark_shard_failed("run", 3, f"worker died calling {secret_url}", 3)
    text = (tmp_path / "run" / "failed" / "shard-00003.json").read_text()
    assert "FAKEPASS-err" not in text and "sk-FAKE-err" not in text

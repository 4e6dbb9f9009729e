"""Secrets never reach manifests, MLflow, artifacts or stdout: by key name, inside URL values
(userinfo, query parameters, URLs inside longer text), in nested dicts and lists.

This module is also a plugin (`--plugins tests.faults.test_secrets`): it registers `secret_probe`,
a system that takes credentials as arguments and answers without any network call.
"""

from __future__ import annotations

import json
import os

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


# -- issue 26 item 5: keys a provider echoes, signed URLs, bearer tokens, password pairs ----------


def test_a_registered_key_is_masked_wherever_it_occurs_and_quoted():
    from storage.redaction import register_secret

    key = "sk-ECHOED-issue26-0f3a+/="
    register_secret(key)
    from urllib.parse import quote

    text = f'401 {{"error": "Incorrect API key provided: {key}", "url": "https://x/?k={quote(key, safe="")}"}}'
    assert key not in redact_text(text) and quote(key, safe="") not in redact_text(text)
    assert "Incorrect API key provided: ***" in redact_text(text)
    assert redact({"note": f"sent {key}"}) == {"note": "sent ***"}


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("GET https://b.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4&X-Amz-Signature=4f2a9c0d&X-Amz-Expires=60", "4f2a9c0d"),
        ("https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sr=b&sig=AbC%2Bdef%3D&se=2030", "AbC"),
        ("upstream said: Authorization: Bearer eyJhbGciOi.payload-sig_x", "eyJhbGciOi"),
        ("connect https://db.example/x?user=bob&pwd=hunter2x", "hunter2x"),
        ("https://svc.example/login?pass=opensesame9&next=/", "opensesame9"),
        ('{"user": "bob", "password": "hunter2json"}', "hunter2json"),
        ("config: db_password=hunter2kv, retries=3", "hunter2kv"),
        ("login failed for pwd: hunter2colon", "hunter2colon"),
        ("{'client_secret': 'cs-python-repr'}", "cs-python-repr"),
    ],
)
def test_signed_urls_bearer_and_password_pairs_are_redacted_in_text(text, secret):
    assert secret not in redact_text(text), redact_text(text)
    assert REDACTED in redact_text(text)


def test_words_that_only_look_like_secret_names_are_kept():
    text = "design: a randomized trial; bypass=yes; passage: p. 3; the bearer of news; max_tokens=512; sig=3"
    assert redact_text(text) == text
    assert is_secret_key("sig") and is_secret_key("X-Amz-Signature") and is_secret_key("db_pass")
    assert not is_secret_key("design") and not is_secret_key("passages") and not is_secret_key("compass")


def test_client_errors_are_born_redacted():
    from clients.errors import AuthError
    from storage.redaction import register_secret

    key = "sk-BORN-REDACTED-77c1"
    register_secret(key)
    error = AuthError(f"invalid key {key}; Bearer {key}", source="openai/x", status=401)
    assert key not in error.message and key not in str(error) and key not in error.reason


def test_environment_keys_are_registered_by_name_not_every_variable(monkeypatch):
    from storage.redaction import register_environment_secrets

    monkeypatch.setenv("SOMEPROVIDER_API_KEY", "sk-ENVSCAN-1234567890")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabledmode")  # "auth" in the name, no key in the value
    register_environment_secrets()
    assert redact_text("sk-ENVSCAN-1234567890 disabledmode") == "*** disabledmode"


class _EchoKey401:
    """A provider that answers 401 and echoes the Authorization header it got (the key) in its body."""

    def __init__(self) -> None:
        import http.server
        import threading

        outer = self
        self.seen: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                auth = self.headers.get("Authorization", "")
                outer.seen.append(auth)
                key = auth.removeprefix("Bearer ")
                body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}. Header was {auth}; "
                                             f"retry with ?api_key={key}", "type": "invalid_request_error",
                                             "code": "invalid_api_key"}}).encode()  # fmt: skip
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.integration
def test_gateway_401_echoing_the_key_gives_an_auth_error_without_the_key(monkeypatch, tmp_path):
    import asyncio

    from clients.errors import AuthError, is_outage
    from clients.llm_gateway import LLMGateway, LLMServices

    key = "sk-UNIT-ECHO-5e9d2b"
    monkeypatch.setenv("UNIT_ECHO_KEY", key)
    server = _EchoKey401()
    try:
        gateway = LLMGateway("openai/echo", LLMServices(), api_base=f"{server.url}/v1", api_key_env="UNIT_ECHO_KEY")
        with pytest.raises(AuthError) as caught:
            asyncio.run(gateway.complete([{"role": "user", "content": "hi"}]))
    finally:
        server.close()
    assert server.seen and server.seen[0] == f"Bearer {key}"  # the key was sent, and echoed back
    assert "Incorrect API key provided" in caught.value.message and not is_outage(caught.value)
    assert key not in caught.value.reason and caught.value.__cause__ is None  # no chained provider text
    row = Output.failed("i", caught.value.reason, "provider").to_row("run", "sys", 0)
    assert key not in json.dumps(row)


# -- end to end: the real entry point against a 401 server that echoes the key ---------------------


@pytest.mark.heavy
@pytest.mark.integration
def test_a_401_echoing_the_key_leaks_it_nowhere(tmp_path):
    """Local Ray (the workers get the driver's environment, key included), llm_zero_shot through the
    gateway to a 127.0.0.1 server that answers 401 with the key in its body; MLflow in sqlite."""
    from tests.helpers.run_job import run_job

    key = "sk-E2E-ECHOED-4b1f90c2"
    server = _EchoKey401()
    config = tmp_path / "echo.toml"
    config.write_text(
        'snapshot = "2026-11-29"\nbootstrap = 0\nshard_size = 10\nworkers = 1\n'
        '[corpus]\nname = "citations_sample"\n'
        f'[[systems]]\nname = "llm_zero_shot"\nargs = {{ model = "openai/echo", api_base = "{server.url}/v1", '
        'api_key_env = "ECHO_PROVIDER_KEY" }\n'
    )
    db = tmp_path / "mlflow" / "echo.db"
    db.parent.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS" and not k.startswith("MLFLOW_")}
    env |= {"ECHO_PROVIDER_KEY": key, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    try:
        done = run_job("run_corpus.py", "--config", str(config), "--storage", str(tmp_path / "store"),
                       "--tracking-uri", f"sqlite:///{db}", cwd=tmp_path, env=env, timeout=600)  # fmt: skip
    finally:
        server.close()
    assert server.seen, done.stdout[-3000:] + done.stderr[-3000:]
    assert all(s == f"Bearer {key}" for s in server.seen)  # the key went out and came back
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]  # errored items (auth), not an outage
    produced = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in produced) and any("artifacts" in p.parts for p in produced)
    assert any(p.name == "status.json" for p in produced) and any(p.name == "scores.json" for p in produced)
    leaks = [str(p.relative_to(tmp_path)) for p in produced if key.encode() in p.read_bytes()]
    leaks += [name for name, text in (("stdout", done.stdout), ("stderr", done.stderr)) if key in text]
    assert leaks == []
    from storage.store import Store

    (run,) = [p.name for p in (tmp_path / "store").iterdir() if (p / "manifest.json").exists()]
    outputs = Store(str(tmp_path / "store")).read_outputs(run)
    errors = outputs.column("error").to_pylist()
    assert all(e and "AuthError" in e and "Incorrect API key provided: ***" in e for e in errors), errors[:2]

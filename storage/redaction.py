"""Keep secrets out of manifests, MLflow params, artifacts and printed config.

Two kinds of secret are removed from a (nested) structure:

- the value of every secret-looking key (case-insensitive substring: key, secret, token, password,
  passwd, auth, bearer, credential, cookie, session, dsn, headers, private), when the value is text
  or a container; numbers and booleans stay (`max_tokens = 512` is not a secret);
- in every string, wherever it sits and whatever its key, the userinfo of a URL
  (`https://user:pass@host/` -> `https://***@host/`) and the value of secret-looking query
  parameters (`?api_key=...&token=...`, `X-Amz-Signature=`, Azure SAS `sig=`), also for URLs
  embedded in longer text; free-text `Bearer <token>`; `password`/`pwd`/`pass`/`secret`/... values
  written as `key=value`, `key: value` or JSON (`"password": "..."`) inside text (an echoed
  request body, a provider's error message);
- every *registered* secret value (`register_secret`), wherever it occurs: the API keys the LLM
  gateway and the bibliographic sources send are registered when they are read, so a provider
  that echoes a key in an error body (a hostile or careless 401) loses it before any output row,
  status file, report, MLflow tag or printed line is written.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlencode

_SECRET_WORDS = (
    r"key|secret|token|password|passwd|auth|bearer|credential|cookie|session|dsn|headers|private|signature"
    # short names only as a whole word of the key (`sig`, `X-Pwd`, `db_pass`), never inside one (`design`, `passage`)
    r"|(?:^|[_\-.])(?:sig|pwd|pass)(?:$|[_\-.])"
)
_SECRET_KEY = re.compile(_SECRET_WORDS, re.IGNORECASE)
# Names that contain a secret word but never hold a secret (a bibliography's authors, a tokenizer name).
_NOT_SECRET = re.compile(r"^(authors?|author_\w+|tokenizer\w*)$", re.IGNORECASE)
REDACTED = "***"

# scheme://userinfo@ : userinfo up to the first '@' with no '/', whitespace or quote before it.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/\s@'\"<>?#]+)@")
# A query string: after '?', up to whitespace, a quote or a fragment.
_QUERY = re.compile(r"\?(?P<query>[^\s'\"<>#]+)")
# `Bearer <token>` in free text (an echoed Authorization header).
_BEARER = re.compile(r"\b(?P<scheme>Bearer\s+)(?P<token>[A-Za-z0-9\-._~+/]+=*)")  # the header's spelling, not prose "bearer"
# `password=...`, `pwd: ...`, `"client_secret": "..."` inside text (not a URL's query: `_QUERY` does those).
_TEXT_PAIR = re.compile(
    # the name is one of these words, alone or after a `_`/`-` prefix (`client_secret`, `X-Amz-Signature`),
    # never inside a longer word (`design`, `bypass`, `passage`)
    r"(?P<key>[\"']?\b(?:[\w\-]*[_\-])?(?:password|passwd|pwd|pass|secret|api[_\-]?key|access[_\-]?key|signature|sig)"
    r"\b[\"']?\s*[:=]\s*)(?P<quote>[\"']?)(?P<value>[^\s\"'&,;}<>]+)",
    re.IGNORECASE,
)
MIN_REGISTERED_LENGTH = 6
"""Shorter values are not registered: masking "true" or "1" everywhere would garble every text."""
MIN_ENVIRONMENT_SECRET_LENGTH = 12
"""A variable found by its name alone must look like a real key (a test's "testing" is not one)."""
# Variables that hold a key by their name's ending (`OPENAI_API_KEY`, `AWS_SESSION_TOKEN`), not ones
# that merely mention one (`RAY_AUTH_MODE=disabled`, `SSH_AUTH_SOCK`, `PWD` the working directory).
_SECRET_VARIABLE = re.compile(r"(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)$", re.IGNORECASE)

_registered: set[str] = set()
_registered_lock = threading.Lock()


def register_secret(*values: str | None) -> None:
    """Mask these exact values (and their URL-quoted forms) in every text `redact_text` sees from
    now on, in this process. Call where a key is read (the gateway, a source, preflight)."""
    new = {v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_REGISTERED_LENGTH}
    if not new:
        return
    with _registered_lock:
        _registered.update(new)
        _registered.update(quote(v, safe="") for v in new)
        _registered.update(quote_plus(v, safe="") for v in new)


def register_secret_env(*names: str | None) -> None:
    """Register the values of these environment variables (unset ones are skipped)."""
    register_secret(*(os.environ.get(n) for n in names if n))


def register_environment_secrets() -> None:
    """Register the value of every environment variable whose name says it holds a secret
    (`OPENAI_API_KEY`, `AWS_SECRET_ACCESS_KEY`, `MLFLOW_TRACKING_PASSWORD`, ...): the keys litellm
    reads for a provider on its own, without our `api_key_env`."""
    register_secret(*(v for k, v in os.environ.items()
                      if _SECRET_VARIABLE.search(k) and len(v.strip()) >= MIN_ENVIRONMENT_SECRET_LENGTH))  # fmt: skip


def is_secret_key(name: Any) -> bool:
    """Whether a mapping key names a secret (case-insensitive, substring based)."""
    return isinstance(name, str) and bool(_SECRET_KEY.search(name)) and not _NOT_SECRET.match(name)


def _redact_query(match: re.Match[str]) -> str:
    query = match.group("query")
    pairs = parse_qsl(query, keep_blank_values=True)
    if not pairs or not any(is_secret_key(k) and v for k, v in pairs):
        return match.group(0)
    return "?" + urlencode([(k, REDACTED if is_secret_key(k) and v else v) for k, v in pairs], safe="*")


def redact_text(text: str | None) -> str | None:
    """`text` with registered secrets, URL userinfo, secret query values, bearer tokens and
    password-like `key=value` pairs replaced (see the module docstring)."""
    if not text:
        return text
    if _registered:
        with _registered_lock:
            secrets = sorted(_registered, key=len, reverse=True)  # longest first: a quoted form contains the plain one
        for secret in secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
    if "@" in text:
        text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    if "?" in text:
        text = _QUERY.sub(_redact_query, text)
    text = _BEARER.sub(lambda m: m.group("scheme") + REDACTED if m.group("token") != REDACTED else m.group(0), text)
    return _TEXT_PAIR.sub(_redact_pair, text)


def _redact_pair(match: re.Match[str]) -> str:
    value = match.group("value")
    if value == REDACTED or value.isdigit():  # already masked, or a count (`max_pass=3`)
        return match.group(0)
    return f"{match.group('key')}{match.group('quote')}{REDACTED}"


def redact(obj: Any) -> Any:
    """A copy of `obj` with secret-looking keys' values and secrets inside URL values replaced."""
    if isinstance(obj, dict):
        return {k: (REDACTED if is_secret_key(k) and _holds_secret(v) else redact(v)) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(redact(v) for v in obj)
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


def _holds_secret(value: Any) -> bool:
    """Values under a secret key that are replaced: non-empty text or containers (not numbers/flags)."""
    if value is None or isinstance(value, bool | int | float):
        return False
    return bool(value)

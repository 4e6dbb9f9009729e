"""Keep secrets out of manifests, MLflow params, artifacts and printed config.

Two kinds of secret are removed from a (nested) structure:

- the value of every secret-looking key (case-insensitive substring: key, secret, token, password,
  passwd, auth, bearer, credential, cookie, session, dsn, headers, private), when the value is text
  or a container; numbers and booleans stay (`max_tokens = 512` is not a secret);
- in every string, wherever it sits and whatever its key, the userinfo of a URL
  (`https://user:pass@host/` -> `https://***@host/`) and the value of secret-looking query
  parameters (`?api_key=...&token=...`), also for URLs embedded in longer text.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode

_SECRET_WORDS = r"key|secret|token|password|passwd|auth|bearer|credential|cookie|session|dsn|headers|private"
_SECRET_KEY = re.compile(_SECRET_WORDS, re.IGNORECASE)
# Names that contain a secret word but never hold a secret (a bibliography's authors, a tokenizer name).
_NOT_SECRET = re.compile(r"^(authors?|author_\w+|tokenizer\w*)$", re.IGNORECASE)
REDACTED = "***"

# scheme://userinfo@ : userinfo up to the first '@' with no '/', whitespace or quote before it.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/\s@'\"<>?#]+)@")
# A query string: after '?', up to whitespace, a quote or a fragment.
_QUERY = re.compile(r"\?(?P<query>[^\s'\"<>#]+)")


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
    """`text` with URL userinfo and secret query values replaced, wherever URLs occur in it."""
    if not text:
        return text
    if "@" in text:
        text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    if "?" in text:
        text = _QUERY.sub(_redact_query, text)
    return text


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

"""Keep secrets out of manifests, MLflow params and artifacts."""

from __future__ import annotations

import re
from typing import Any

_SECRET_KEY = re.compile(r"(api[_-]?key|secret|token|password|passwd|credential|authorization)", re.IGNORECASE)
REDACTED = "***"


def redact(obj: Any) -> Any:
    """A copy of `obj` with the value of every secret-looking key replaced."""
    if isinstance(obj, dict):
        return {k: (REDACTED if isinstance(k, str) and _SECRET_KEY.search(k) and v else redact(v)) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(redact(v) for v in obj)
    return obj

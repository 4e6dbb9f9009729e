"""The one JSON writer for result files (scores, leaderboards, summaries, manifests).

`json.dumps` writes NaN and Infinity as bare tokens that are not JSON, and a float NaN is how
scoring says "undefined". Every result file goes through `result_json`, which writes an
undefined number as null (the number's reason, where there is one, is the caller's to write
beside it, e.g. `null_reasons` in scores.json) and refuses anything else it cannot write.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def finite_or_none(obj: Any) -> Any:
    """`obj` with every non-finite float (NaN, +-inf), also inside dicts/lists/tuples, set to None;
    numpy scalars and arrays become Python numbers and lists."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [finite_or_none(v) for v in obj]
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy scalar or array
        return finite_or_none(obj.tolist())
    return obj


def result_json(obj: Any, *, indent: int | None = 2, sort_keys: bool = False) -> str:
    """Strict JSON text of `obj` (no NaN/Infinity tokens; dates and paths as strings)."""
    return json.dumps(finite_or_none(obj), indent=indent, sort_keys=sort_keys, allow_nan=False, default=str)


def write_result_json(path: str | Path, obj: Any, *, sort_keys: bool = False) -> Path:
    """Write `obj` to `path` as strict JSON through a temporary file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(result_json(obj, sort_keys=sort_keys) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path

"""One JSON writer for result files: undefined numbers are null, never a bare NaN (issue 10)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from storage.result_json import result_json, write_result_json
from storage.store import Store


def strict_loads(text: str):
    """json.loads that refuses NaN/Infinity, as every other JSON parser does."""
    def bad(token: str):
        raise ValueError(f"not JSON: {token}")
    return json.loads(text, parse_constant=bad)


def test_non_finite_numbers_become_null_everywhere():
    obj = {"dr": math.nan, "ci": [0.1, math.inf], "nested": {"x": -math.inf, "np": np.float64("nan")},
           "n": np.int64(3), "arr": np.array([1.0, np.nan]), "ok": 0.5, "t": (1, 2)}
    got = strict_loads(result_json(obj))
    assert got == {"dr": None, "ci": [0.1, None], "nested": {"x": None, "np": None}, "n": 3, "arr": [1.0, None],
                   "ok": 0.5, "t": [1, 2]}


def test_plain_json_dumps_would_not_be_json():  # why the writer exists
    with pytest.raises(ValueError):
        strict_loads(json.dumps({"dr": math.nan}))


def test_write_result_json_is_strict(tmp_path):
    path = write_result_json(tmp_path / "a" / "scores.json", {"mcc": math.nan})
    assert strict_loads(path.read_text()) == {"mcc": None}
    assert not list(tmp_path.glob("a/*.tmp"))


def test_store_write_json_never_writes_nan(tmp_path):
    store = Store(str(tmp_path))
    store.write_json("run", "scores.json", {"coverage": math.nan, "decided_fraction": float("inf")})
    assert strict_loads((tmp_path / "run" / "scores.json").read_text()) == {"coverage": None, "decided_fraction": None}

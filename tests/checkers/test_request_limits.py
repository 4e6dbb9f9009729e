"""Request bodies: nesting is measured without recursion and refused with one clear line."""

from __future__ import annotations

import pytest

from checkers.request_limits import RequestRejected, json_depth, parse_body


def test_depth_counts_lists_and_objects():
    assert [json_depth(v) for v in (1, "s", [], {}, [[1]], {"a": [{"b": 2}]})] == [0, 0, 1, 1, 2, 3]
    deep: list = []
    for _ in range(4999):
        deep = [deep]
    assert json_depth(deep) == 5000  # no RecursionError


@pytest.mark.parametrize(
    "raw", [b"[" * 33 + b"]" * 33, b"[" * 100_000 + b"]" * 100_000, '{"a":' * 40 + "1" + "}" * 40]
)
def test_too_deep_is_400_not_a_recursion_error(raw):
    with pytest.raises(
        RequestRejected, match=r"^JSON nested deeper than 32 levels \(max_json_depth\)$"
    ) as caught:
        parse_body(raw, 32)
    assert caught.value.status == 400


def test_at_the_limit_and_not_json():
    assert json_depth(parse_body(b"[" * 32 + b"]" * 32, 32)) == 32
    with pytest.raises(RequestRejected, match="body is not JSON"):
        parse_body(b"{nope", 32)

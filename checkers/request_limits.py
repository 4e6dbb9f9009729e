"""Limits on what one request body may be: shared by the HTTP service and `jobs/check.py`.

A request body is untrusted JSON. Python's `json` recurses per nesting level, so a body of
`[[[[...]]]]` raises RecursionError (a 500 or a traceback) unless caught; a merely deep body
passes `json.loads` and then burdens everything after it. Both are refused with one clear line.
"""

from __future__ import annotations

import json
from typing import Any


class RequestRejected(ValueError):
    """A request over a limit: `status` is the HTTP status it is answered with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def json_depth(data: Any) -> int:
    """Nesting depth of lists/objects (a scalar is 0), computed without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def parse_body(raw: bytes | str, max_depth: int) -> Any:
    """JSON from a request body; RequestRejected(400) for non-JSON or nesting over `max_depth`."""
    too_deep = f"JSON nested deeper than {max_depth} levels (max_json_depth)"
    try:
        data = json.loads(raw)
    except RecursionError:
        raise RequestRejected(400, too_deep) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestRejected(400, f"body is not JSON: {exc}") from None
    if json_depth(data) > max_depth:
        raise RequestRejected(400, too_deep)
    return data

"""JSON Lines: the one reader of files with one JSON object per line.

`read_jsonl(path)` yields (line number, object) for every non-blank line and raises `JsonlError`,
naming the file and the line, on the first line that is not one JSON object (bad UTF-8, bad JSON, a
number or nesting the parser refuses, an array where an object belongs, a line over the size cap).
Readers that keep going past a bad line (the corpus loaders that report every broken line) use
`parse_json_object` per line and catch the error themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


class JsonlError(ValueError):
    """A line that is not one JSON object; `str()` is `file:line: reason`."""

    def __init__(self, path: str | Path, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path, self.line, self.reason = str(path), line, reason


def parse_json_object(text: str | bytes, path: str | Path, line: int) -> dict[str, Any]:
    """The JSON object on one line; `JsonlError` naming `path:line` when it is not one."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonlError(path, line, f"not UTF-8 text (byte {exc.start + 1} of the line)") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonlError(path, line, f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:  # a 5000-digit number, nesting deeper than the parser goes
        raise JsonlError(path, line, f"invalid JSON: {str(exc)[:200] or type(exc).__name__}") from None
    if not isinstance(value, dict):
        raise JsonlError(path, line, f"expected a JSON object, got {type(value).__name__}")
    return value


def iter_jsonl(lines: Iterable[str | bytes], path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of `lines` (text already read, e.g. from a
    download); `path` names the source in errors."""
    for number, text in enumerate(lines, start=1):
        if text.strip():
            yield number, parse_json_object(text, path, number)


def read_jsonl(path: str | Path, max_line_bytes: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of the UTF-8 file `path`.

    With `max_line_bytes`, a longer line is an error before it is held in memory whole."""
    with open(path, "rb") as f:
        number = 0
        while True:
            raw = f.readline(-1 if max_line_bytes is None else max_line_bytes + 1)
            if not raw:
                return
            number += 1
            if max_line_bytes is not None and len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                raise JsonlError(path, number, f"line longer than {max_line_bytes} bytes")
            if raw.strip():
                yield number, parse_json_object(raw, path, number)

"""LaTeX `%` comments: the one place they are found (corpora, checkers, verifiers and adjudication read it).

A `%` starts a comment unless it is escaped, i.e. preceded by an odd number of backslashes: `\\%` is a
percent sign, but `\\\\%` is a line break followed by a comment. A lookbehind such as `(?<!\\\\)%` cannot
count backslashes, so the text is scanned in escape pairs (`\\` and the character after it) instead.
The comment runs to the end of the line; the newline itself is kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

# An escape pair is consumed whole, so a `%` is only matched when it is not escaped.
_ESCAPE_OR_COMMENT = re.compile(r"\\[\s\S]|%[^\n]*")


def comment_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every comment in `text`, in order; `end` is the newline (or the end of text)."""
    for m in _ESCAPE_OR_COMMENT.finditer(text):
        if text[m.start()] == "%":
            yield m.start(), m.end()


def blank_comments(text: str) -> str:
    """`text` with every comment character replaced by a space: offsets into the result are offsets into `text`."""
    return _replace(text, lambda start, end: " " * (end - start))


def remove_comments(text: str, replacement: str = "") -> str:
    """`text` with every comment replaced by `replacement` (offsets do not hold)."""
    return _replace(text, lambda start, end: replacement)


def _replace(text: str, fill: Callable[[int, int], str]) -> str:
    out: list[str] = []
    last = 0
    for start, end in comment_spans(text):
        out += (text[last:start], fill(start, end))
        last = end
    out.append(text[last:])
    return "".join(out)

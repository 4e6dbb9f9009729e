"""What rule injectors and the LLM proposer produce: a `Proposal`, one atomic text replacement.

A proposal names a file, the exact `original` text and its `injected` replacement. Rule injectors
find a precise edit position, then `edit_in_window` widens the replaced text with neighbouring
context until it occurs exactly once in the file, as the validator requires. Also the small
helpers the rule modules share (top-level operator scan of maths, number re-formatting).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from corpora.papers.latex_paper import LatexPaper

#: Longest context either side of an edit before giving up on making it unique.
MAX_CONTEXT = 240


@dataclass(frozen=True)
class Proposal:
    """One atomic edit: replace `original` (occurring once in `file`) by `injected`."""

    file: str
    original: str
    injected: str
    rationale: str
    priority: int = 1
    """Rule injectors: lower is tried first (abstract before body where a sub-type prefers it)."""


RuleInjector = Callable[[LatexPaper], list[Proposal]]


def edit_in_window(text: str, start: int, end: int, replacement: str) -> tuple[str, str] | None:
    """(original, injected) around text[start:end] -> replacement, widened until original is unique."""
    left, right = start, end
    while True:
        original = text[left:right]
        if original and text.count(original) == 1:
            return original, original[: start - left] + replacement + original[end - left :]
        if start - left >= MAX_CONTEXT and right - end >= MAX_CONTEXT:
            return None
        left = max(0, left - 8)
        right = min(len(text), right + 8)
        if left == 0 and right == len(text):
            original = text
            return (original, original[:start] + replacement + original[end:]) if original else None


def proposal(paper: LatexPaper, file: str, start: int, end: int, replacement: str, rationale: str,
             priority: int = 1) -> Proposal | None:  # fmt: skip
    """A proposal replacing file[start:end], or None when no unique window exists."""
    found = edit_in_window(paper.files[file], start, end, replacement)
    if found is None or found[0] == found[1]:
        return None
    return Proposal(file, found[0], found[1], rationale, priority)


_FORBIDDEN_RE = re.compile(r"\\(?:label|tag|text|mathrm|textrm|operatorname|mbox|textit|textbf|ref|eqref)\*?\s*\{[^{}]*\}")


def forbidden_regions(content: str) -> list[tuple[int, int]]:
    """Ranges of a maths string that are names, not maths (labels, tags, text)."""
    return [(m.start(), m.end()) for m in _FORBIDDEN_RE.finditer(content)]


def inside(pos: int, regions: list[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in regions)


def depth_map(content: str) -> list[int]:
    """Brace/bracket depth at each char of a maths string ({}, (), [], \\left/\\right counted alike)."""
    depth, out = 0, []
    for i, c in enumerate(content):
        escaped = i > 0 and content[i - 1] == "\\"
        if c in "{([" and not escaped:
            depth += 1
            out.append(depth)
            continue
        if c in "})]" and not escaped:
            out.append(depth)
            depth = max(0, depth - 1)
            continue
        out.append(depth)
    return out


def binary_operators(content: str, ops: str = "+-") -> list[int]:
    """Positions of top-level binary `ops` in a maths string (an operand ends right before them)."""
    depth = depth_map(content)
    regions = forbidden_regions(content)
    found = []
    for i, c in enumerate(content):
        if c not in ops or depth[i] != 0 or inside(i, regions):
            continue
        j = i - 1
        while j >= 0 and content[j].isspace():
            j -= 1
        if j >= 0 and (content[j].isalnum() or content[j] in "})]|'"):
            found.append(i)
    return found


# Command names end at a non-letter: `\le` must not match the start of `\left` (issue 21: a term was
# inserted between `\exp` and its `\left(` argument).
SEPARATORS_RE = re.compile(r"=|&|\\\\|(?:\\label|\\tag|\\nonumber|\\notag|\\quad|\\qquad|\\leq?|\\geq?|\\approx|\\simeq"
                           r"|\\sim|\\propto)(?![a-zA-Z])|,\s*$|\.\s*$|<|>")


def segment_end(content: str, start: int) -> int:
    """End of the top-level expression starting at `start` (next relation, alignment or line break)."""
    depth = depth_map(content)
    for m in SEPARATORS_RE.finditer(content, start):
        if depth[m.start()] == 0:
            return m.start()
    return len(content.rstrip())


def is_year(s: str) -> bool:
    return s.isdigit() and len(s) == 4 and 1800 <= int(s) <= 2100


def as_float(s: str) -> float:
    return float(s.replace(",", ""))


def format_like(value: float, like: str) -> str:
    """`value` printed with the decimals and thousands separators of `like`."""
    decimals = len(like.split(".")[1]) if "." in like else 0
    text = f"{value:,.{decimals}f}" if "," in like else f"{value:.{decimals}f}"
    return text


def times_ten(s: str) -> str:
    """The printed number times ten, keeping its style (0.34 -> 3.4, 14 -> 140, 1,234 -> 12,340)."""
    if "." in s:
        whole, frac = s.replace(",", "").split(".")
        digits = (whole + frac[0]).lstrip("0") or "0"
        rest = frac[1:]
        return digits + ("." + rest if rest else "")
    return format_like(as_float(s) * 10, s)


def nudge_last_digit(s: str, step: int = 1) -> str:
    """Change the last digit of a printed number by `step` (wrapping away from 0-9 overflow)."""
    last = int(s[-1])
    new = last + step if last + step <= 9 else last - step
    if s[:-1] in ("", "0", "0.") and new == 0:
        new = last + step + 1 if last + step + 1 <= 9 else 1
    return s[:-1] + str(new)

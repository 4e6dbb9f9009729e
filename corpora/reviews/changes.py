"""The exact changed span of an edited sentence, on token boundaries.

The span is the region between the longest common prefix and suffix of the two sentences, widened
to whole tokens (letters and digits, with `.`, `,`, `-`, `_`, `/` inside a token: "1,000", "85.4",
"GPT-4"), so that "85.4" -> "85.7" is the token "85.7", not the digit "7". A pure deletion widens
to the next token (or the previous one at the end) so the injected span is never empty.
"""

from __future__ import annotations

_INNER = ".,-_/"


def _token_char(s: str, i: int) -> bool:
    if i < 0 or i >= len(s):
        return False
    c = s[i]
    if c.isalnum():
        return True
    return c in _INNER and 0 < i < len(s) - 1 and s[i - 1].isalnum() and s[i + 1].isalnum()


def change_span(original: str, injected: str) -> tuple[int, int, int, int]:
    """(orig_start, orig_end, new_start, new_end) of the changed tokens; all zero when equal."""
    if original == injected:
        return 0, 0, 0, 0
    p = 0
    limit = min(len(original), len(injected))
    while p < limit and original[p] == injected[p]:
        p += 1
    q = 0
    while q < limit - p and original[-1 - q] == injected[-1 - q]:
        q += 1
    while p > 0 and (_token_char(original, p - 1) or _token_char(injected, p - 1)):
        p -= 1
    while q > 0 and (_token_char(original, len(original) - q) or _token_char(injected, len(injected) - q)):
        q -= 1
    if len(injected) - q == p:  # a deletion: take the neighbouring token into the span
        tail = len(injected) - q
        if tail < len(injected):
            i = tail
            while i < len(injected) and injected[i].isspace():
                i += 1
            while i < len(injected) and _token_char(injected, i):
                i += 1
            q = len(injected) - max(i, tail + 1)
        else:
            i = p
            while i > 0 and injected[i - 1].isspace():
                i -= 1
            while i > 0 and _token_char(injected, i - 1):
                i -= 1
            p = min(i, p - 1) if p > 0 else p
    return p, len(original) - q, p, len(injected) - q


__all__ = ["change_span"]

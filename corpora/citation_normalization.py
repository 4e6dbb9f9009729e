"""Text normalization for comparing citation fields, as CiteIntegrity (reference 003) defines it.

Decode HTML entities, strip markup (tags, TeX braces and commands), Unicode compatibility
decomposition (NFKD), case folding, a second NFKD, drop combining marks, every non-alphanumeric
character to a space, collapse whitespace. Both sides of a comparison go through the same
function. Accent folding is a matching choice and can conflate different names.
"""

from __future__ import annotations

import html
import re
import unicodedata
from difflib import SequenceMatcher

_TAG = re.compile(r"<[^>]+>")
_TEX_COMMAND = re.compile(r"\\[a-zA-Z]+\s*")
_NON_WORD = re.compile(r"[\W_]+")
#: Letters NFKD leaves whole; folded so "Łukasz" and "Lukasz" compare equal.
_STROKE_LETTERS = str.maketrans({"ł": "l", "ø": "o", "đ": "d", "ß": "ss", "æ": "ae", "œ": "oe", "ı": "i"})


def normalize_text(text: str | None) -> str:
    """The normalized form of a field value ('' for None)."""
    if not text:
        return ""
    text = html.unescape(text)
    text = _TAG.sub(" ", text)
    text = _TEX_COMMAND.sub("", text).replace("{", "").replace("}", "")
    text = unicodedata.normalize("NFKD", text).casefold()
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).translate(_STROKE_LETTERS)
    return " ".join(_NON_WORD.sub(" ", text).split())


def title_similarity(a: str | None, b: str | None) -> float:
    """SequenceMatcher ratio (autojunk off) of the two normalized titles: 2M / (|a| + |b|)."""
    na, nb = normalize_text(a), normalize_text(b)
    if not na and not nb:
        return 1.0
    return SequenceMatcher(None, na, nb, autojunk=False).ratio()


__all__ = ["normalize_text", "title_similarity"]

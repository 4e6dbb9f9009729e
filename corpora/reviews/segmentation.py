"""Sentence segmentation of a review, with character offsets into the original text.

pysbd (rule-based sentence boundary disambiguation, `clean=False` so the text is not altered)
proposes the sentences; it knows "e.g.", "et al.", "Fig. 3", decimals, list markers and headings.
Its own `char_span` mode can misplace repeated sentences, so offsets are found here instead: each
sentence, stripped of surrounding whitespace, is searched for from the end of the previous one,
and `text[start:end] == sentence` is checked for every sentence before returning.

pysbd's cost grows about quadratically with the length of the text it is given (25,000 characters
of one paragraph took 1.5 s of CPU, 100,000 took 20 s), so it never sees the whole review: the text
is cut into paragraphs at blank lines (pysbd never lets a sentence cross a line break anyway), and
a paragraph longer than `MAX_PIECE_CHARS` is cut before that length at the last line break, else
the last sentence end (`.`, `!` or `?` after a word that is no abbreviation, then a space and a
capital), else the last space, else hard. Every piece is segmented on its own and its offsets shifted, so the whole is linear in length.
A sentence wrapped by a hard line break (reviews written in fixed-width lines, as ACL 2017's are) is
joined again: one line break, the line before ending without `.!?:;`, the next opening no bullet.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from functools import cache

from corpora.reviews.records import ReviewSentence


class SegmentationError(ValueError):
    """The segmenter returned a sentence that cannot be placed in the text (never silently shifted)."""


@cache
def _segmenter():
    import pysbd  # imported here: a loader that gets ready-made segments does not need it

    return pysbd.Segmenter(language="en", clean=False)


MAX_PIECE_CHARS = 3_000
"""The longest text handed to pysbd at once (a longer paragraph is cut first, see the module doc)."""

_BLANK_LINES = re.compile(r"\n[^\S\n]*\n\s*")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+(?=[\"']?[A-Z])")
# words a period follows without ending the sentence ("et al. Smith", "Fig. A1"): no cut after them
_ABBREVIATIONS = frozenset({
    "al", "etc", "vs", "cf", "e.g", "i.e", "fig", "figs", "eq", "eqs", "sec", "secs", "tab", "ref", "refs", "no",
    "nos", "dr", "mr", "mrs", "ms", "prof", "approx", "resp", "st",
})  # fmt: skip


def _paragraphs(text: str) -> Iterator[tuple[int, int]]:
    start = 0
    for gap in _BLANK_LINES.finditer(text):
        if gap.start() > start:
            yield start, gap.start()
        start = gap.end()
    if start < len(text):
        yield start, len(text)


def _after_abbreviation(text: str, stop: int) -> bool:
    before = text[max(0, stop - 12) : stop].split()
    return not before or before[-1].lstrip("([\"'").casefold() in _ABBREVIATIONS


def _cut(text: str, start: int, end: int) -> int:
    """Where to end the piece that starts at `start`: the last safe boundary in its second half."""
    limit, floor = start + MAX_PIECE_CHARS, start + MAX_PIECE_CHARS // 2
    newline = text.rfind("\n", floor, limit)
    if newline != -1:
        return newline + 1
    ends = [m.end() for m in _SENTENCE_END.finditer(text, floor, limit) if not _after_abbreviation(text, m.start())]
    if ends:
        return ends[-1]
    space = max(text.rfind(" ", floor, limit), text.rfind("\t", floor, limit))
    return space + 1 if space != -1 else limit


def pieces(text: str) -> Iterator[tuple[int, int]]:
    """`[start, end)` ranges of `text`, none longer than MAX_PIECE_CHARS, cut where sentences end."""
    for start, end in _paragraphs(text):
        while end - start > MAX_PIECE_CHARS:
            cut = _cut(text, start, end)
            yield start, cut
            start = cut
        yield start, end


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Half-open `[start, end)` spans of the sentences of `text`, in order, without surrounding
    whitespace; a text of whitespace only has none."""
    spans: list[tuple[int, int]] = []
    for start, end in pieces(text):
        piece = text[start:end]
        cursor = 0
        for proposed in _segmenter().segment(piece) if piece.strip() else ():
            sentence = proposed.strip()
            if not sentence:
                continue
            at = piece.find(sentence, cursor)
            if at == -1:
                raise SegmentationError(f"sentence {sentence[:60]!r} not found in the text after offset {start + cursor}")
            if spans and (_continues(text, spans[-1], start + at) or _soft_wrapped(text, spans[-1], start + at)):
                spans[-1] = (spans[-1][0], start + at + len(sentence))  # "in eq. | 2 refers to": one sentence
            else:
                spans.append((start + at, start + at + len(sentence)))
            cursor = at + len(sentence)
    return spans


_BULLET = re.compile(r"(?:[-*•+>]|\(?\w{1,3}[.)])\s")


def _soft_wrapped(text: str, previous: tuple[int, int], start: int) -> bool:
    """The line break between `previous` and `start` wraps a sentence (a review written with hard line
    breaks, as ACL's are: "I had to read the paper 4 times\nand I still do not understand"): one line
    break only, the line before ends without a sentence's or a heading's end, and the next opens no
    bullet or numbered point."""
    a, b = previous
    gap = text[b:start]
    if gap.count("\n") != 1 or gap.strip() or b - a < 30:
        return False
    if text[b - 1 : b] in ".!?:;" or text[start : start + 1] in "-*•+>#":
        return False
    return not _BULLET.match(text, start)


def _continues(text: str, previous: tuple[int, int], start: int) -> bool:
    """pysbd ended `previous` at an abbreviation whose number or lower-case word follows on the same
    line ("around eq. 2 refers to ..."): the next piece is the same sentence."""
    a, b = previous
    if text[b - 1 : b] != "." or "\n" in text[b:start] or not _after_abbreviation(text, b - 1):
        return False
    return text[start : start + 1].isdigit() or text[start : start + 1].islower()


def segment_review(text: str, aspects: Sequence[str | None] | None = None) -> tuple[ReviewSentence, ...]:
    """The review's sentences located in `text` (optionally with their aspect tags)."""
    spans = sentence_spans(text)
    if aspects is not None and len(aspects) != len(spans):
        raise ValueError(f"{len(aspects)} aspect tags for {len(spans)} sentences")
    out = tuple(
        ReviewSentence(i, s, e, text[s:e], None if aspects is None else aspects[i]) for i, (s, e) in enumerate(spans)
    )
    check_offsets(text, out)
    return out


def join_segments(segments: Sequence[str], separator: str = "\n") -> tuple[str, tuple[ReviewSentence, ...]]:
    """A review text made by joining given segments (ReviewCritique), and the segments located in it."""
    parts, sentences, pos = [], [], 0
    for i, seg in enumerate(segments):
        if i:
            parts.append(separator)
            pos += len(separator)
        sentences.append(ReviewSentence(i, pos, pos + len(seg), seg))
        parts.append(seg)
        pos += len(seg)
    text = "".join(parts)
    out = tuple(sentences)
    check_offsets(text, out)
    return text, out


def check_offsets(text: str, sentences: Sequence[ReviewSentence]) -> None:
    """Every sentence is exactly `text[start:end]`, indices run 0..n-1, spans do not overlap."""
    previous_end = 0
    for k, s in enumerate(sentences):
        if s.index != k:
            raise SegmentationError(f"sentence {k} has index {s.index}")
        if text[s.start : s.end] != s.text:
            raise SegmentationError(f"sentence {k}: text[{s.start}:{s.end}] != its text {s.text[:40]!r}")
        if s.start < previous_end:
            raise SegmentationError(f"sentence {k} starts at {s.start}, inside the previous one (ends {previous_end})")
        previous_end = s.end


__all__ = ["MAX_PIECE_CHARS", "SegmentationError", "check_offsets", "join_segments", "pieces", "segment_review", "sentence_spans"]

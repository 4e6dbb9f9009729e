"""Sentence segmentation of a review, with character offsets into the original text.

pysbd (rule-based sentence boundary disambiguation, `clean=False` so the text is not altered)
proposes the sentences; it knows "e.g.", "et al.", "Fig. 3", decimals, list markers and headings.
Its own `char_span` mode can misplace repeated sentences, so offsets are found here instead: each
sentence, stripped of surrounding whitespace, is searched for from the end of the previous one,
and `text[start:end] == sentence` is checked for every sentence before returning.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from corpora.reviews.records import ReviewSentence


class SegmentationError(ValueError):
    """The segmenter returned a sentence that cannot be placed in the text (never silently shifted)."""


@cache
def _segmenter():
    import pysbd  # imported here: a loader that gets ready-made segments does not need it

    return pysbd.Segmenter(language="en", clean=False)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Half-open `[start, end)` spans of the sentences of `text`, in order, without surrounding
    whitespace; a text of whitespace only has none."""
    if not text.strip():
        return []
    spans: list[tuple[int, int]] = []
    cursor = 0
    for piece in _segmenter().segment(text):
        sentence = piece.strip()
        if not sentence:
            continue
        start = text.find(sentence, cursor)
        if start == -1:
            raise SegmentationError(f"sentence {sentence[:60]!r} not found in the text after offset {cursor}")
        spans.append((start, start + len(sentence)))
        cursor = start + len(sentence)
    return spans


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


__all__ = ["SegmentationError", "check_offsets", "join_segments", "segment_review", "sentence_spans"]

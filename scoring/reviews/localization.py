"""Task 3 (HalluPeer appendix D.3): localization, Token-F1 and Exact / Overlap Span-F1.

Declared tokenization (the paper says "the original tokenization of the review text" and does not
publish one): tokens are the matches of `TOKEN_PATTERN`, a run of word characters or one single
non-space, non-word character (`"F1-score of 0.93."` -> `F1`, `-`, `score`, `of`, `0`, `.`, `93`,
`.`), each with its character offsets in the review text. A character span covers a token when the
two ranges intersect (`token.start < span.end and span.start < token.end`).

Token-F1: gold and predicted spans become BIO tags over the review's tokens; B and I are positive,
O negative, so a token is positive exactly when some span covers it. TP/FP/FN are pooled over every
token of every scored review (micro), F1 = 2TP/(2TP+FP+FN).

Span level: a span is aligned to its token interval [first covered token, last covered token]; a
span covering no token (whitespace only) matches nothing but still counts as a prediction or a gold
span. Exact match: same token interval. Overlap match: at least one token in common. Matching is
one-to-one and greedy, so no gold span is counted twice: predicted spans are taken in order of
(first token, last token); each takes, among the gold spans still unmatched that satisfy the
criterion, the one sharing the most tokens with it, ties to the earliest gold span (by first token,
then last token). Spans of different reviews never match. Span-F1 = 2·matched/(#pred + #gold).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from corpora.reviews.records import Span

TOKEN_PATTERN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[Span]:
    """Character spans of the tokens of `text` under `TOKEN_PATTERN`."""
    return [Span(m.start(), m.end()) for m in TOKEN_PATTERN.finditer(text)]


def token_spans(tokens: Sequence[Span], span: Span) -> tuple[int, int] | None:
    """Inclusive token interval a character span covers, or None when it covers no token."""
    covered = [i for i, t in enumerate(tokens) if t.start < span.end and span.start < t.end]
    return (covered[0], covered[-1]) if covered else None


def token_counts(tokens: Sequence[Span], gold: Sequence[Span], pred: Sequence[Span]) -> tuple[int, int, int]:
    """(TP, FP, FN) over the binary B/I-vs-O tags of one review's tokens."""
    def tags(spans: Sequence[Span]) -> list[bool]:
        inside = [False] * len(tokens)
        for span in spans:
            interval = token_spans(tokens, span)
            if interval is not None:
                for i in range(interval[0], interval[1] + 1):
                    inside[i] = True
        return inside

    g, p = tags(gold), tags(pred)
    tp = sum(a and b for a, b in zip(g, p, strict=True))
    return tp, sum(b and not a for a, b in zip(g, p, strict=True)), sum(a and not b for a, b in zip(g, p, strict=True))


def match_spans(tokens: Sequence[Span], gold: Sequence[Span], pred: Sequence[Span],
                mode: str) -> list[tuple[int, int]]:  # fmt: skip
    """Greedy one-to-one matches (pred index, gold index) under `mode` "exact" or "overlap"."""
    if mode not in ("exact", "overlap"):
        raise ValueError(f"mode must be 'exact' or 'overlap', got {mode!r}")
    g_iv = [token_spans(tokens, s) for s in gold]
    p_iv = [token_spans(tokens, s) for s in pred]
    gold_order = sorted((i for i in range(len(gold)) if g_iv[i] is not None), key=lambda i: (g_iv[i], i))
    pred_order = sorted((i for i in range(len(pred)) if p_iv[i] is not None), key=lambda i: (p_iv[i], i))
    taken: set[int] = set()
    matches = []
    for pi in pred_order:
        ps, pe = p_iv[pi]  # type: ignore[misc]
        best, best_shared = None, 0
        for gi in gold_order:
            if gi in taken:
                continue
            gs, ge = g_iv[gi]  # type: ignore[misc]
            shared = min(pe, ge) - max(ps, gs) + 1
            ok = (gs, ge) == (ps, pe) if mode == "exact" else shared >= 1
            if ok and shared > best_shared:
                best, best_shared = gi, shared
        if best is not None:
            taken.add(best)
            matches.append((pi, best))
    return matches

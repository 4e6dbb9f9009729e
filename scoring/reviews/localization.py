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
one-to-one (no gold span is counted twice) and maximum: among the (prediction, gold) pairs that
satisfy the criterion, the assignment with the most matches is taken (scipy's
`linear_sum_assignment`), ties broken by the most shared tokens, then by the earliest gold spans
(by first token, then last token). The paper says "matching is performed greedily to avoid
double-counting"; a greedy rule under-counts when a prediction overlapping two gold spans takes the
one a second prediction needed, so `matching="greedy"` (each prediction in order of (first token,
last token) takes the unmatched gold span sharing the most tokens with it) is kept only to compare.
Spans of different reviews never match. Span-F1 = 2·matched/(#pred + #gold).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from scipy.optimize import linear_sum_assignment

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


def match_spans(tokens: Sequence[Span], gold: Sequence[Span], pred: Sequence[Span], mode: str,
                matching: Literal["optimal", "greedy"] = "optimal") -> list[tuple[int, int]]:  # fmt: skip
    """One-to-one matches (pred index, gold index) under `mode` "exact" or "overlap", in order of
    the predictions' token intervals."""
    if mode not in ("exact", "overlap"):
        raise ValueError(f"mode must be 'exact' or 'overlap', got {mode!r}")
    if matching not in ("optimal", "greedy"):
        raise ValueError(f"matching must be 'optimal' or 'greedy', got {matching!r}")
    g_iv = [token_spans(tokens, s) for s in gold]
    p_iv = [token_spans(tokens, s) for s in pred]
    gold_order = sorted((i for i in range(len(gold)) if g_iv[i] is not None), key=lambda i: (g_iv[i], i))
    pred_order = sorted((i for i in range(len(pred)) if p_iv[i] is not None), key=lambda i: (p_iv[i], i))

    def shared(pi: int, gi: int) -> int:
        """Tokens in common when the pair satisfies `mode`, else 0."""
        (ps, pe), (gs, ge) = p_iv[pi], g_iv[gi]  # type: ignore[misc]
        common = min(pe, ge) - max(ps, gs) + 1
        ok = (gs, ge) == (ps, pe) if mode == "exact" else common >= 1
        return common if ok else 0

    if matching == "greedy":
        return _greedy(pred_order, gold_order, shared)
    if not pred_order or not gold_order:
        return []
    common = np.array([[shared(pi, gi) for gi in gold_order] for pi in pred_order], dtype=np.int64)
    valid = common > 0
    # Integer weights ordered lexicographically: number of matches, then shared tokens, then earlier
    # gold spans. The rank bonus of a whole matching is < per_token, its shared tokens < per_match.
    n_gold = len(gold_order)
    rank_bonus = np.arange(n_gold, 0, -1, dtype=np.int64)[None, :]
    per_token = n_gold * min(len(pred_order), n_gold) + 1
    per_match = (int(common.sum()) + 1) * per_token
    weight = np.where(valid, per_match + common * per_token + rank_bonus, 0)
    rows, cols = linear_sum_assignment(weight, maximize=True)
    return [(pred_order[r], gold_order[c]) for r, c in zip(rows, cols, strict=True) if valid[r, c]]


def _greedy(pred_order: list[int], gold_order: list[int],
            shared: Callable[[int, int], int]) -> list[tuple[int, int]]:  # fmt: skip
    taken: set[int] = set()
    matches = []
    for pi in pred_order:
        best, best_shared = None, 0
        for gi in gold_order:
            if gi not in taken and shared(pi, gi) > best_shared:
                best, best_shared = gi, shared(pi, gi)
        if best is not None:
            taken.add(best)
            matches.append((pi, best))
    return matches

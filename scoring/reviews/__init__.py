"""Review-hallucination metrics (HalluPeer, reference 004, §5.3 and appendix D): pure computation.

`score_reviews(truths, copies, outputs)` scores one detector's outputs on Task 1 (review- and
sentence-level detection), Task 2 (type classification on gold-hallucinated sentences) and Task 3
(token- and span-level localization), each value with a paper-level bootstrap interval.
`score_segments(...)` is the ReviewCritique track: deficient-segment detection with the Task 1
metrics, overall, per LLM reviewer and per error type. An undefined value is `None` with its reason.
"""

from scoring.reviews.detection import BINARY_METRICS, binary_metrics
from scoring.reviews.localization import TOKEN_PATTERN, match_spans, token_spans, tokenize
from scoring.reviews.metric_value import MetricValue
from scoring.reviews.review_score import ReviewScores, score_reviews, score_segments
from scoring.reviews.type_classification import type_counts, type_metrics

__all__ = [
    "BINARY_METRICS",
    "TOKEN_PATTERN",
    "MetricValue",
    "ReviewScores",
    "binary_metrics",
    "match_spans",
    "score_reviews",
    "score_segments",
    "token_spans",
    "tokenize",
    "type_counts",
    "type_metrics",
]

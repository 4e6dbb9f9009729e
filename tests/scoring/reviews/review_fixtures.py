"""Hand-made review copies and truths (the ingest lives elsewhere): offsets computed from the text."""

from __future__ import annotations

from corpora.reviews.records import ReviewCopy, ReviewInjection, ReviewSentence, ReviewTruth


def copy_of(review_id: str, paper_id: str, sentences: list[str], paper_text: str = "") -> ReviewCopy:
    """A review whose sentences are joined by one space, each located in the review text."""
    text = " ".join(sentences)
    located, at = [], 0
    for i, s in enumerate(sentences):
        start = text.index(s, at)
        located.append(ReviewSentence(i, start, start + len(s), s))
        at = start + len(s)
    return ReviewCopy(review_id, paper_id, text, tuple(located), paper_text)


def injection(copy: ReviewCopy, sentence: int, phrase: str, anchor: str) -> ReviewInjection:
    s = copy.sentences[sentence]
    start = copy.review_text.index(phrase, s.start)
    return ReviewInjection(sentence, start, start + len(phrase), anchor, None, "?", phrase, "hand")


def truth_of(copy: ReviewCopy, *injections: ReviewInjection) -> ReviewTruth:
    return ReviewTruth(copy.review_id, copy.paper_id, bool(injections), tuple(injections))

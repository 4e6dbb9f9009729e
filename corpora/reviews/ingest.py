"""Review ingest: ReviewCritique JSONL, a generic JSONL, and OpenReview-style note exports.

Each loader returns an `IngestResult`: one `ReviewSource` (blind copy + truth) per review, the
broken entries as `LoadError`s (file, line, field and reason; never fatal for the other lines),
and warnings about odd but usable data. Offsets of every sentence are checked against the text.

- ReviewCritique (`data/ReviewCritique_LLM.jsonl`, Du et al. 2024): one paper per line with one
  object per LLM reviewer; its bare `NaN` tokens (a pandas export) are read as None. One review per
  (paper, reviewer); the review text is the reviewer's segments joined by newlines, each segment one
  sentence. Truth: `sentence_labels[i] = reliability == "No"` (an expert judged the segment
  deficient) and `sentence_types[i]` = its error type, normalised ("out-of-scope" -> "Out-of-scope";
  "Unspecified" when a deficient segment has none). Paper id: `rc<line>-<sha1(title)[:8]>`.
- Generic JSONL: `paper_id`, `paper_text`, `review_text`, optional `review_id` (default
  `<paper_id>:r<k>`); segmented with pysbd. Truth carries no labels (a source for injection).
- OpenReview export: a JSON list of notes, `{"notes": [...]}`, or one note per line. Submission
  notes (id == forum) give the paper text (title + abstract unless `paper_texts` has the forum);
  review notes (invitation containing "Review") give the review: `content.review`, else the
  free-text sections (summary, strengths, weaknesses, questions, ...) under their headings.
  API v1 (`"field": "text"`) and v2 (`"field": {"value": "text"}`) contents are both read.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from corpora.loaded_corpus import LoadError, corpus_file
from corpora.reviews.aspects import rule_aspects
from corpora.reviews.records import ReviewCopy, ReviewSentence, ReviewTruth
from corpora.reviews.segmentation import join_segments, segment_review

# ReviewCritique's error types as its paper names them; other spellings map onto these.
REVIEWCRITIQUE_ERROR_TYPES = (
    "Out-of-scope", "Misunderstanding", "Superficial Review", "Contradiction", "Unstated statement",
    "Vague Critique", "Inexpert Statement", "Neglect", "Duplication", "Writing", "Misinterpret Novelty",
    "Experiment", "Inaccurate Summary",
)  # fmt: skip
UNSPECIFIED = "Unspecified"
_PAPER_KEYS = ("title", "decision", "body_text")

# OpenReview free-text review fields, in reading order (ICLR 2019-2024, NeurIPS 2021-2024 forms).
OPENREVIEW_TEXT_FIELDS = (
    "summary", "summary_of_the_paper", "main_review", "strengths", "weaknesses", "strength_and_weaknesses",
    "strengths_and_weaknesses", "clarity,_quality,_novelty_and_reproducibility", "questions", "limitations",
    "summary_of_the_review",
)  # fmt: skip


@dataclass(frozen=True)
class ReviewSource:
    """One ingested review: the blind copy, what is known about it, and where it came from."""

    copy: ReviewCopy
    truth: ReviewTruth
    source: str
    line: int
    reviewer: str | None = None


@dataclass
class IngestResult:
    reviews: list[ReviewSource] = field(default_factory=list)
    errors: list[LoadError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def num_sentences(self) -> int:
        return sum(len(r.copy.sentences) for r in self.reviews)


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    return value


def _loads(line: str) -> Any:
    # NaN/Infinity are not JSON; pandas writes them bare for empty cells. Read them as missing.
    return _nan_to_none(json.loads(line, parse_constant=lambda _c: None))


def normalise_error_type(raw: str | None) -> str:
    """ReviewCritique's error type in its canonical spelling ("out-of-scope" -> "Out-of-scope")."""
    if raw is None or not str(raw).strip():
        return UNSPECIFIED
    key = " ".join(str(raw).split()).casefold()
    for canonical in REVIEWCRITIQUE_ERROR_TYPES:
        if canonical.casefold() == key:
            return canonical
    text = " ".join(str(raw).split())
    return text[0].upper() + text[1:]


def _with_aspects(sentences: Sequence[ReviewSentence]) -> tuple[ReviewSentence, ...]:
    tags = rule_aspects([s.text for s in sentences])
    return tuple(replace(s, aspect=a) for s, a in zip(sentences, tags, strict=True))


def _lines(path: Path) -> list[tuple[int, str]]:
    text = path.read_bytes().decode("utf-8", errors="replace")
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _json_objects(path: Path, out: IngestResult) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every JSON-object line; other lines are recorded on `out` as errors."""
    for n, line in _lines(path):
        try:
            row = _loads(line)
        except json.JSONDecodeError as exc:
            out.errors.append(LoadError(str(path), n, f"invalid JSON: {exc.msg} at column {exc.colno}"))
            continue
        if not isinstance(row, dict):
            out.errors.append(LoadError(str(path), n, f"expected a JSON object, got {type(row).__name__}"))
            continue
        yield n, row


def paper_id_for(line: int, title: str) -> str:
    return f"rc{line:02d}-{hashlib.sha1(title.encode()).hexdigest()[:8]}"


def load_reviewcritique(path: str | Path) -> IngestResult:
    """Every (paper, LLM reviewer) review of a ReviewCritique JSONL file, with its segment labels."""
    path = corpus_file(path)
    out = IngestResult()
    for n, row in _json_objects(path, out):
        bad = [k for k in ("title", "body_text") if not isinstance(row.get(k), str)]
        if bad:
            out.errors.append(LoadError(str(path), n, f"field {bad[0]!r} missing or not a string"))
            continue
        paper_id = paper_id_for(n, row["title"])
        reviewers = [k for k, v in row.items() if k not in _PAPER_KEYS and isinstance(v, dict)]
        if not reviewers:
            out.errors.append(LoadError(str(path), n, "no reviewer object (an object with a 'review' list)"))
        for reviewer in reviewers:
            review_id = f"{paper_id}:{reviewer}"
            try:
                out.reviews.append(_reviewcritique_review(row, reviewer, paper_id, review_id, path, n, out.warnings))
            except ValueError as exc:
                out.errors.append(LoadError(str(path), n, str(exc), review_id))
    return out


def _reviewcritique_review(row: dict, reviewer: str, paper_id: str, review_id: str, path: Path, n: int,
                           warnings: list[str]) -> ReviewSource:  # fmt: skip
    segments = row[reviewer].get("review")
    if not isinstance(segments, list) or not segments:
        raise ValueError(f"field '{reviewer}.review' missing, empty or not a list")
    texts, labels, types = [], {}, {}
    for i, seg in enumerate(segments):
        where = f"{reviewer}.review[{i}]"
        if not isinstance(seg, dict):
            raise ValueError(f"field '{where}' is not an object")
        text = seg.get("segment_text")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"field '{where}.segment_text' missing or empty")
        reliability = seg.get("reliability")
        if reliability not in ("Yes", "No"):
            raise ValueError(f"field '{where}.reliability' is {reliability!r}, expected 'Yes' or 'No'")
        texts.append(text)
        labels[i] = reliability == "No"
        if labels[i]:
            types[i] = normalise_error_type(seg.get("error_type"))
        elif seg.get("error_type") is not None:
            warnings.append(f"{path}:{n}: '{where}.error_type' = {seg['error_type']!r} on a segment judged "
                            "reliable: ignored")  # fmt: skip
    review_text, sentences = join_segments(texts)
    copy = ReviewCopy(review_id, paper_id, review_text, _with_aspects(sentences), row["body_text"])
    truth = ReviewTruth(review_id, paper_id, any(labels.values()), (), labels, types)
    return ReviewSource(copy, truth, str(path), n, reviewer)


def review_source(review_id: str, paper_id: str, review_text: str, paper_text: str, source: str, line: int,
                  reviewer: str | None = None) -> ReviewSource:  # fmt: skip
    """A review given as free text: segmented and tagged; truth without labels."""
    sentences = segment_review(review_text)
    copy = ReviewCopy(review_id, paper_id, review_text, _with_aspects(sentences), paper_text)
    return ReviewSource(copy, ReviewTruth(review_id, paper_id, False), source, line, reviewer)


def load_review_jsonl(path: str | Path) -> IngestResult:
    """A generic JSONL of reviews: paper_id, paper_text, review_text[, review_id] per line."""
    path = corpus_file(path)
    out = IngestResult()
    per_paper: Counter[str] = Counter()
    seen: set[str] = set()
    for n, row in _json_objects(path, out):
        bad = next((k for k in ("paper_id", "paper_text", "review_text") if not isinstance(row.get(k), str)), None)
        if bad is None and not row["review_text"].strip():
            bad = "review_text"
        if bad:
            out.errors.append(LoadError(str(path), n, f"field {bad!r} missing, empty or not a string"))
            continue
        per_paper[row["paper_id"]] += 1
        review_id = row.get("review_id") or f"{row['paper_id']}:r{per_paper[row['paper_id']]}"
        if not isinstance(review_id, str):
            out.errors.append(LoadError(str(path), n, "field 'review_id' is not a string"))
            continue
        if review_id in seen:
            out.errors.append(LoadError(str(path), n, f"field 'review_id': {review_id!r} repeats an earlier line", review_id))
            continue
        seen.add(review_id)
        out.reviews.append(review_source(review_id, row["paper_id"], row["review_text"], row["paper_text"], str(path), n))
    return out


def _content_value(value: Any) -> Any:
    return value.get("value") if isinstance(value, dict) else value


def _invitations(note: dict) -> list[str]:
    inv = note.get("invitations") or ([note["invitation"]] if note.get("invitation") else [])
    return [str(i) for i in inv]


def _heading(name: str) -> str:
    return " ".join(w.capitalize() for w in re.split(r"[_\s]+", name.strip("_")) if w)


def openreview_review_text(content: dict[str, Any]) -> str:
    """The review text of an OpenReview review note's content (v1 or v2)."""
    single = _content_value(content.get("review"))
    if isinstance(single, str) and single.strip():
        return single.strip()
    blocks = []
    for key in OPENREVIEW_TEXT_FIELDS:
        value = _content_value(content.get(key))
        if isinstance(value, str) and value.strip():
            blocks.append(f"{_heading(key)}:\n{value.strip()}")
    return "\n\n".join(blocks)


def _read_notes(path: Path) -> tuple[list[tuple[int, Any]], list[LoadError]]:
    text = path.read_bytes().decode("utf-8", errors="replace")
    errors: list[LoadError] = []
    try:
        data = _nan_to_none(json.loads(text, parse_constant=lambda _c: None))
    except json.JSONDecodeError:
        notes = []  # not one JSON document: one note per line
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                notes.append((n, _loads(line)))
            except json.JSONDecodeError as exc:
                errors.append(LoadError(str(path), n, f"invalid JSON: {exc.msg} at column {exc.colno}"))
        return notes, errors
    if isinstance(data, dict) and isinstance(data.get("notes"), list):
        data = data["notes"]
    if not isinstance(data, list):
        return [], [LoadError(str(path), 1, "expected a list of notes or an object with a 'notes' list")]
    return list(enumerate(data, 1)), errors


def load_openreview(path: str | Path, paper_texts: dict[str, str] | Callable[[str], str | None] | None = None) -> IngestResult:
    """Reviews of an OpenReview-style export. `line` is the file line (JSONL) or note number (JSON)."""
    path = corpus_file(path)
    notes, errors = _read_notes(path)
    out = IngestResult(errors=errors)
    lookup = paper_texts.get if isinstance(paper_texts, dict) else paper_texts
    papers: dict[str, str] = {}
    reviews: list[tuple[int, dict]] = []
    for n, note in notes:
        if not isinstance(note, dict) or not isinstance(note.get("content"), dict):
            out.errors.append(LoadError(str(path), n, f"note #{n}: not an object with a 'content' object"))
            continue
        forum, note_id = note.get("forum"), note.get("id")
        if not isinstance(forum, str) or not isinstance(note_id, str):
            out.errors.append(LoadError(str(path), n, f"note #{n}: field 'forum' or 'id' missing"))
            continue
        invitations = _invitations(note)
        if note_id == forum or any(i.endswith("Submission") for i in invitations):
            content = note["content"]
            title, abstract = _content_value(content.get("title")), _content_value(content.get("abstract"))
            papers[forum] = "\n\n".join(str(x).strip() for x in (title, abstract) if isinstance(x, str) and x.strip())
        elif any("Review" in i and "Meta" not in i for i in invitations):
            reviews.append((n, note))
    for n, note in reviews:
        forum, note_id = note["forum"], note["id"]
        text = openreview_review_text(note["content"])
        if not text:
            out.errors.append(LoadError(str(path), n, f"note #{n} ({note_id}): no review text in 'content.review' "
                                        f"or any of {list(OPENREVIEW_TEXT_FIELDS)}", note_id))  # fmt: skip
            continue
        paper_text = (lookup(forum) if lookup else None) or papers.get(forum, "")
        if not paper_text:
            out.warnings.append(f"{path}:{n}: review {note_id}: no paper text for forum {forum}")
        reviewer = (note.get("signatures") or [None])[0]
        out.reviews.append(review_source(note_id, forum, text, paper_text, str(path), n, reviewer))
    return out


def sniff_format(path: str | Path) -> str:
    """The format of a review file from its first entry: `openreview` (a JSON document or notes
    with `forum`/`content`), `reviewcritique` (`body_text` and reviewer objects), else `jsonl`."""
    with open(corpus_file(path), encoding="utf-8", errors="replace") as f:
        first = next((line for line in f if line.strip()), "")
    if first.lstrip().startswith("["):
        return "openreview"
    try:
        row = _loads(first)
    except json.JSONDecodeError:
        return "openreview"  # a pretty-printed JSON document
    if isinstance(row, dict) and ("notes" in row or "forum" in row or "content" in row):
        return "openreview"
    if isinstance(row, dict) and "body_text" in row:
        return "reviewcritique"
    return "jsonl"


def load_reviews(path: str | Path, fmt: str = "auto", **options: Any) -> IngestResult:
    """Load reviews by format: `reviewcritique`, `jsonl`, `openreview`, or `auto` (by peeking)."""
    if fmt == "auto":
        fmt = sniff_format(path)
    loaders = {"reviewcritique": load_reviewcritique, "jsonl": load_review_jsonl, "openreview": load_openreview}
    if fmt not in loaders:
        raise ValueError(f"unknown review format '{fmt}': use one of {sorted(loaders)} or auto")
    return loaders[fmt](path, **options)


__all__ = [
    "OPENREVIEW_TEXT_FIELDS",
    "REVIEWCRITIQUE_ERROR_TYPES",
    "UNSPECIFIED",
    "IngestResult",
    "ReviewSource",
    "load_openreview",
    "load_review_jsonl",
    "load_reviewcritique",
    "load_reviews",
    "normalise_error_type",
    "openreview_review_text",
    "retag_aspects",
    "review_source",
    "sniff_format",
]


async def retag_aspects(sources: Sequence[ReviewSource], tagger: Any) -> list[ReviewSource]:
    """The sources with aspect tags from `tagger` (e.g. `aspects.LLMAspectTagger`: async tag(texts))."""
    out = []
    for src in sources:
        tags = await tagger.tag([s.text for s in src.copy.sentences])
        sentences = tuple(replace(s, aspect=a) for s, a in zip(src.copy.sentences, tags, strict=True))
        out.append(replace(src, copy=replace(src.copy, sentences=sentences)))
    return out

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
  A note whose `id`, `forum`, `invitation(s)` or `signatures` has the wrong type is an error naming
  its index and field; a review note whose id repeats an earlier one is kept under `<file>:<index>`
  (with a warning), as a repeated corpus key is, so one repeated id never refuses the run.

Hostile input costs its own line (or note) only: bytes that are not UTF-8 are replaced with U+FFFD,
warned with file and line and counted (`IngestResult.non_utf8_lines`); lines are split at `\n` only
(a review may hold U+2028); JSON nested too deep, an over-long number or an unpaired surrogate
escape, an empty `paper_text` (or ReviewCritique `body_text`) and a review text over
`max_review_chars` (default `MAX_REVIEW_CHARS`, 200,000 characters: segmentation and injection
costs grow with it) are errors of their line, naming the field.
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

from corpora.loaded_corpus import LoadError, corpus_file, unicode_error, unique_item_ids
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
MAX_REVIEW_CHARS = 200_000
"""The longest review text ingested; a longer review is refused by line (option `max_review_chars`)."""
_BOM = b"\xef\xbb\xbf"
_PAPER_KEYS = ("title", "decision", "body_text")

# OpenReview meta-review notes (invitation's last part) and their free-text fields, in reading order.
META_REVIEW_INVITATIONS = frozenset({"meta_review", "metareview"})
META_REVIEW_TEXT_FIELDS = ("metareview", "meta_review", "summary", "justification_for_why_not_higher_score",
                           "justification_for_why_not_lower_score", "recommendation")  # fmt: skip

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
    non_utf8_lines: int = 0
    """Lines whose bytes were not UTF-8 (read with U+FFFD in place of the bad bytes, each warned)."""
    meta_reviews: dict[str, str] = field(default_factory=dict)
    """Paper (forum) id -> its meta-review text, where the file carries one (OpenReview exports)."""

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


def _parse(text: str) -> tuple[Any, str | None]:
    """(value, None), or (None, why `text` is not usable JSON)."""
    try:
        return _loads(text), None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        return None, f"invalid JSON: {exc.msg} at {where}"
    except (ValueError, RecursionError) as exc:  # a 5000-digit number, nesting deeper than the parser goes
        return None, f"invalid JSON: {str(exc)[:200] or type(exc).__name__}"


def _may_escape_surrogates(raw: str) -> bool:
    return "\\ud" in raw.lower()


def _surrogate_problem(value: Any, suspect: bool) -> str | None:
    """JSON may escape a lone surrogate (\\ud800): not text, and no file or table can hold it.
    `suspect`: the raw text holds such an escape (checked once per line or document, not per value)."""
    if not suspect:
        return None
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate escape: not valid Unicode text"
    return None


def _over_limit(name: str, length: int, limit: int) -> str | None:
    if length <= limit:
        return None
    return f"field {name!r} has {length:,} characters, over the limit of {limit:,} (max_review_chars)"


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


def _decoded_lines(path: Path, out: IngestResult) -> list[tuple[int, str]]:
    """(line number, text) of every line, split at `\n` only: JSON strings may hold U+2028 or U+0085,
    which `str.splitlines` would break a line at. A line that is not UTF-8 is read with U+FFFD for
    its bad bytes, warned (file:line, first bad byte) and counted on `out`."""
    data = path.read_bytes()
    data = data[len(_BOM) :] if data.startswith(_BOM) else data
    lines = []
    for n, raw in enumerate(data.split(b"\n"), 1):
        raw = raw.removesuffix(b"\r")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = raw.decode("utf-8", errors="replace")
            out.warnings.append(f"{path}:{n}: {unicode_error(raw, exc)}; replaced with U+FFFD")
            out.non_utf8_lines += 1
        lines.append((n, text))
    return lines


def _json_objects(path: Path, out: IngestResult) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every JSON-object line; other lines are recorded on `out` as errors."""
    for n, line in _decoded_lines(path, out):
        if not line.strip():
            continue
        row, reason = _parse(line)
        if reason is None and not isinstance(row, dict):
            reason = f"expected a JSON object, got {type(row).__name__}"
        reason = reason or _surrogate_problem(row, _may_escape_surrogates(line))
        if reason:
            out.errors.append(LoadError(str(path), n, reason))
            continue
        yield n, row


def paper_id_for(line: int, title: str) -> str:
    return f"rc{line:02d}-{hashlib.sha1(title.encode()).hexdigest()[:8]}"


def load_reviewcritique(path: str | Path, max_review_chars: int = MAX_REVIEW_CHARS) -> IngestResult:
    """Every (paper, LLM reviewer) review of a ReviewCritique JSONL file, with its segment labels."""
    path = corpus_file(path)
    out = IngestResult()
    for n, row in _json_objects(path, out):
        if not isinstance(row.get("title"), str):
            out.errors.append(LoadError(str(path), n, "field 'title' missing or not a string"))
            continue
        if not isinstance(row.get("body_text"), str) or not row["body_text"].strip():
            out.errors.append(LoadError(str(path), n, "field 'body_text' missing, empty or not a string"))
            continue
        paper_id = paper_id_for(n, row["title"])
        reviewers = [k for k, v in row.items() if k not in _PAPER_KEYS and isinstance(v, dict)]
        if not reviewers:
            out.errors.append(LoadError(str(path), n, "no reviewer object (an object with a 'review' list)"))
        for reviewer in reviewers:
            review_id = f"{paper_id}:{reviewer}"
            try:
                out.reviews.append(_reviewcritique_review(row, reviewer, paper_id, review_id, path, n, out.warnings,
                                                          max_review_chars))  # fmt: skip
            except ValueError as exc:
                out.errors.append(LoadError(str(path), n, str(exc), review_id))
    return out


def _reviewcritique_review(row: dict, reviewer: str, paper_id: str, review_id: str, path: Path, n: int,
                           warnings: list[str], max_review_chars: int = MAX_REVIEW_CHARS) -> ReviewSource:  # fmt: skip
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
    too_long = _over_limit(f"{reviewer}.review", sum(map(len, texts)) + len(texts) - 1, max_review_chars)
    if too_long:
        raise ValueError(too_long)
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


def load_review_jsonl(path: str | Path, max_review_chars: int = MAX_REVIEW_CHARS) -> IngestResult:
    """A generic JSONL of reviews: paper_id, paper_text, review_text[, review_id] per line."""
    path = corpus_file(path)
    out = IngestResult()
    per_paper: Counter[str] = Counter()
    seen: set[str] = set()
    for n, row in _json_objects(path, out):
        # a review with no paper cannot be checked against it: refused here, not failed by every detector
        bad = next((k for k in ("paper_id", "paper_text", "review_text")
                    if not isinstance(row.get(k), str) or not row[k].strip()), None)  # fmt: skip
        if bad:
            out.errors.append(LoadError(str(path), n, f"field {bad!r} missing, empty or not a string"))
            continue
        too_long = _over_limit("review_text", len(row["review_text"]), max_review_chars)
        if too_long:
            out.errors.append(LoadError(str(path), n, too_long))
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
    return note.get("invitations") or ([note["invitation"]] if note.get("invitation") else [])


def _note_problem(note: Any) -> str | None:
    """Why a note cannot be read (the field named), or None. Checked before any field is used."""
    if not isinstance(note, dict) or not isinstance(note.get("content"), dict):
        return "not an object with a 'content' object"
    for key in ("id", "forum"):
        if not isinstance(note.get(key), str) or not note[key].strip():
            return f"field {key!r} missing, empty or not a string"
    if note.get("invitation") is not None and not isinstance(note["invitation"], str):
        return f"field 'invitation' is {type(note['invitation']).__name__}, expected a string"
    for key in ("invitations", "signatures"):
        value = note.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            return f"field {key!r} is {type(value).__name__}, expected a list of strings"
        bad = next((i for i, v in enumerate(value) if not isinstance(v, str)), None)
        if bad is not None:
            return f"field '{key}[{bad}]' is {type(value[bad]).__name__}, expected a string"
    return None


def _heading(name: str) -> str:
    return " ".join(w.capitalize() for w in re.split(r"[_\s]+", name.strip("_")) if w)


def openreview_review_text(content: dict[str, Any], fields: Sequence[str] = OPENREVIEW_TEXT_FIELDS) -> str:
    """The review text of an OpenReview review note's content (v1 or v2)."""
    single = _content_value(content.get("review"))
    if isinstance(single, str) and single.strip():
        return single.strip()
    blocks = []
    for key in fields:
        value = _content_value(content.get(key))
        if isinstance(value, str) and value.strip():
            blocks.append(f"{_heading(key)}:\n{value.strip()}")
    return "\n\n".join(blocks)


def _read_notes(path: Path, out: IngestResult) -> list[tuple[int, Any, bool]]:
    """(line or note number, note, whether its raw text escapes a surrogate) of a JSON document (a list or {"notes": [...]})
    or of one note per line; unreadable lines are recorded on `out`."""
    lines = _decoded_lines(path, out)
    text = "\n".join(t for _, t in lines)
    data, document_error = _parse(text)
    if document_error is None:
        if isinstance(data, dict) and isinstance(data.get("notes"), list):
            data = data["notes"]
        if not isinstance(data, list):
            out.errors.append(LoadError(str(path), 1, "expected a list of notes or an object with a 'notes' list"))
            return []
        suspect = _may_escape_surrogates(text)
        return [(n, note, suspect) for n, note in enumerate(data, 1)]
    notes, errors = [], []
    for n, line in lines:  # not one JSON document: one note per line
        if not line.strip():
            continue
        note, reason = _parse(line)
        if reason:
            errors.append(LoadError(str(path), n, reason))
        else:
            notes.append((n, note, _may_escape_surrogates(line)))
    if not notes and errors:  # a broken document, not lines of notes: one error where it breaks
        errors = [LoadError(str(path), 1, f"not a JSON document nor one note per line: {document_error}")]
    out.errors += errors
    return notes


def load_openreview(path: str | Path, paper_texts: dict[str, str] | Callable[[str], str | None] | None = None,
                    max_review_chars: int = MAX_REVIEW_CHARS) -> IngestResult:  # fmt: skip
    """Reviews of an OpenReview-style export. `line` is the file line (JSONL) or note number (JSON)."""
    path = corpus_file(path)
    out = IngestResult()
    lookup = paper_texts.get if isinstance(paper_texts, dict) else paper_texts
    papers: dict[str, tuple[int, str]] = {}
    reviews: list[tuple[int, dict, str]] = []
    for n, note, suspect in _read_notes(path, out):
        note_id = note.get("id") if isinstance(note, dict) and isinstance(note.get("id"), str) else None
        problem = _note_problem(note) or _surrogate_problem(note, suspect)
        if problem:
            out.errors.append(LoadError(str(path), n, f"note #{n}{f' ({note_id})' if note_id else ''}: {problem}", note_id))
            continue
        forum, invitations = note["forum"], _invitations(note)
        if note_id == forum or any(i.endswith("Submission") for i in invitations):
            if forum in papers:
                out.warnings.append(f"{path}:{n}: note #{n}: a second submission note for forum {forum}: ignored, "
                                    f"the paper text of note #{papers[forum][0]} is kept")  # fmt: skip
                continue
            content = note["content"]
            title, abstract = _content_value(content.get("title")), _content_value(content.get("abstract"))
            papers[forum] = (n, "\n\n".join(str(x).strip() for x in (title, abstract) if isinstance(x, str) and x.strip()))
        elif any(i.rsplit("/", 1)[-1].lower().replace("-", "_") in META_REVIEW_INVITATIONS for i in invitations):
            text = openreview_review_text(note["content"], META_REVIEW_TEXT_FIELDS)
            if text:  # the first meta-review of a forum is the one kept
                out.meta_reviews.setdefault(forum, text)
        elif any("Review" in i and "Meta" not in i for i in invitations):
            text = openreview_review_text(note["content"])
            problem = (None if text else f"no review text in 'content.review' or any of {list(OPENREVIEW_TEXT_FIELDS)}") \
                or _over_limit("content", len(text), max_review_chars)
            if problem:
                out.errors.append(LoadError(str(path), n, f"note #{n} ({note_id}): {problem}", note_id))
                continue
            reviews.append((n, note, text))
    # a repeated review id keeps its note under `<file>:<index>`, as a repeated corpus key does
    ids, repeats = unique_item_ids([note["id"] for _, note, _ in reviews], [True] * len(reviews),
                                   [f"{path.name}:{n}" for n, _, _ in reviews])  # fmt: skip
    for k, ((n, note, text), review_id) in enumerate(zip(reviews, ids, strict=True)):
        forum = note["forum"]
        if k in repeats:
            out.warnings.append(f"{path}:{n}: note #{n}: id {note['id']!r} repeats note #{reviews[repeats[k]][0]}; "
                                f"kept as {review_id!r}")  # fmt: skip
        given = lookup(forum) if lookup else None
        paper_text = given if isinstance(given, str) and given.strip() else papers.get(forum, (0, ""))[1]
        if not paper_text:
            out.warnings.append(f"{path}:{n}: review {review_id}: no paper text for forum {forum}")
        reviewer = (note.get("signatures") or [None])[0]
        out.reviews.append(review_source(review_id, forum, text, paper_text, str(path), n, reviewer))
    return out


SNIFF_ENTRIES = 50
"""Entries (lines) looked at to tell the format of a review file."""
_OPENREVIEW_KEYS = frozenset({"forum", "content", "invitation", "invitations", "replyto", "signatures", "readers",
                              "writers", "cdate", "tcdate", "ddate", "notes"})  # fmt: skip
_GENERIC_KEYS = frozenset({"paper_id", "paper_text", "review_text"})


def _format_of(row: dict) -> str | None:
    if "body_text" in row:
        return "reviewcritique"
    if _GENERIC_KEYS & row.keys():
        return "jsonl"
    return "openreview" if _OPENREVIEW_KEYS & row.keys() else None


def sniff_format(path: str | Path) -> str:
    """The format of a review file: `openreview` (a JSON document, or notes with OpenReview keys:
    `forum`, `content`, `invitation(s)`, `signatures`, ...), `reviewcritique` (`body_text` and
    reviewer objects) or `jsonl` (`paper_id`/`paper_text`/`review_text`), by the keys of its first
    `SNIFF_ENTRIES` lines (the most common wins), so one odd first line does not decide; `jsonl`
    when none is recognised (its loader then names what is missing on every line)."""
    lines = [t for _, t in _decoded_lines(corpus_file(path), IngestResult()) if t.strip()]
    if not lines:
        return "jsonl"
    votes: Counter[str] = Counter()
    for line in lines[:SNIFF_ENTRIES]:
        row, reason = _parse(line)
        fmt = _format_of(row) if reason is None and isinstance(row, dict) else None
        if fmt:
            votes[fmt] += 1
    if votes:
        return max(("openreview", "reviewcritique", "jsonl"), key=lambda f: votes[f])
    if lines[0].lstrip().startswith(("[", "{")):
        return "openreview"  # a JSON document (pretty-printed, or a list on one line)
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
    "MAX_REVIEW_CHARS",
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

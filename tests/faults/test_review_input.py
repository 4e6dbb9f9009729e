"""Hostile review files: a bad review, note or byte costs that review only, named by file, line (or
note index) and field; the other reviews are kept. Segmentation stays linear in the text's length."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import corpora.reviews.segmentation as segmentation
from corpora.reviews.corpus_io import loaded_corpus
from corpora.reviews.ingest import (
    MAX_REVIEW_CHARS,
    load_openreview,
    load_review_jsonl,
    load_reviewcritique,
    load_reviews,
    sniff_format,
)
from corpora.reviews.segmentation import MAX_PIECE_CHARS, check_offsets, segment_review, sentence_spans

SENTENCES = (
    "The authors, e.g. Smith et al. (2019), report 92.4% accuracy in Fig. 3 and Sec. 4.2.",
    "This is good!",
    "Is it robust?",
    "The baseline (Table 2) reaches 88.1 on SST-2.",
    "No code is released.",
)
FLAT = " ".join(SENTENCES) + " "  # one paragraph, no line break


def generic(paper_id: str, review_text: str, paper_text: str = "The paper.", **extra) -> bytes:
    return json.dumps({"paper_id": paper_id, "paper_text": paper_text, "review_text": review_text, **extra}).encode() + b"\n"


# ------------------------------------------------------------------------- segmentation is linear
def test_pysbd_never_sees_more_than_a_piece_and_offsets_stay_exact(monkeypatch):
    real = segmentation._segmenter()
    seen: list[int] = []

    class Recording:
        def segment(self, text):
            seen.append(len(text))
            return real.segment(text)

    monkeypatch.setattr(segmentation, "_segmenter", lambda: Recording())
    text = ("Summary:\n" + FLAT * 60 + "\n\n" + "- " + FLAT * 3 + "\n") * 3  # paragraphs of ~13,000 characters
    sentences = segment_review(text)
    assert seen and max(seen) <= MAX_PIECE_CHARS
    check_offsets(text, sentences)
    # cuts fall at sentence ends: every sentence is one of the written ones, none is cut in two
    written = set(SENTENCES) | {"Summary:", "- The authors, e.g. Smith et al. (2019), report 92.4% "
                                                "accuracy in Fig. 3 and Sec. 4.2."}  # fmt: skip
    assert {s.text for s in sentences} <= written
    assert sum(s.text == "No code is released." for s in sentences) == 3 * 63


def test_a_paragraph_without_sentence_ends_is_cut_between_words_and_a_blob_anywhere():
    words = "word " * 5_000  # 25,000 characters, no punctuation
    spans = sentence_spans(words)
    assert all(words[s - 1] == " " for s, _ in spans[1:]) and all(words[e] == " " for _, e in spans)
    assert words[spans[0][0] : spans[-1][1]].split() == words.split()
    blob = "x" * 25_000  # nothing to cut at: hard cuts, every character still covered once
    spans = sentence_spans(blob)
    assert spans[0][0] == 0 and spans[-1][1] == len(blob)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_segmentation_cpu_time_grows_linearly():
    def cpu(n: int) -> float:
        text = (FLAT * (n // len(FLAT) + 1))[:n]
        start = time.process_time()
        sentence_spans(text)
        return time.process_time() - start

    cpu(2_000)  # warm up pysbd's compiled rules
    small, large = cpu(20_000), cpu(80_000)
    # four times the text: linear ~4x; the old whole-text pysbd call took ~13x (quadratic)
    assert large < 8 * small, (small, large)


# ------------------------------------------------------------------------- review size
def test_a_review_over_the_limit_is_refused_by_line_and_the_others_kept(tmp_path):
    path = tmp_path / "reviews.jsonl"
    huge = (FLAT + "\n") * (MAX_REVIEW_CHARS // len(FLAT) + 10)
    path.write_bytes(generic("p1", "Fine paper. Clear.") + generic("p2", huge) + generic("p3", "Weak baselines."))
    result = load_review_jsonl(path)
    assert [r.copy.paper_id for r in result.reviews] == ["p1", "p3"]
    (error,) = result.errors
    assert (error.file, error.line) == (str(path), 2)
    assert f"field 'review_text' has {len(huge):,} characters, over the limit of {MAX_REVIEW_CHARS:,}" in error.reason
    small = load_review_jsonl(path, max_review_chars=10)
    assert [r.copy.paper_id for r in small.reviews] == [] and [e.line for e in small.errors] == [1, 2, 3]


def test_a_five_megabyte_review_beside_normal_ones_is_refused_without_segmenting_it(tmp_path, monkeypatch):
    path = tmp_path / "reviews.jsonl"
    path.write_bytes(generic("p1", "Fine paper.") + generic("p2", FLAT * (5_000_000 // len(FLAT))) + generic("p3", "Weak."))
    calls: list[int] = []
    real = segmentation.sentence_spans
    monkeypatch.setattr(segmentation, "sentence_spans", lambda text: calls.append(len(text)) or real(text))
    start = time.process_time()
    result = load_reviews(path)
    assert time.process_time() - start < 60  # minutes before the fix (pysbd ~n^1.9); a second or two now
    assert [r.copy.paper_id for r in result.reviews] == ["p1", "p3"] and max(calls) < 100
    assert [e.line for e in result.errors] == [2] and "over the limit" in result.errors[0].reason


def test_reviewcritique_review_over_the_limit_is_refused(tmp_path):
    path = tmp_path / "rc.jsonl"
    seg = {"segment_text": "x" * 600, "reliability": "Yes", "error_type": None}
    path.write_text(json.dumps({"title": "T", "body_text": "Body.", "gpt4": {"review": [seg] * 2}}) + "\n")
    result = load_reviewcritique(path, max_review_chars=1_000)
    assert result.reviews == [] and "over the limit of 1,000" in result.errors[0].reason


# ------------------------------------------------------------------------- bytes and lines
def test_latin1_bytes_are_warned_by_line_and_counted(tmp_path):
    path = tmp_path / "reviews.jsonl"
    latin1 = generic("p2", "Caf\u00e9 results.").replace(b"\\u00e9", b"\xe9")
    path.write_bytes(generic("p1", "Fine.") + latin1 + generic("p3", "Ok."))
    result = load_review_jsonl(path)
    assert [r.copy.paper_id for r in result.reviews] == ["p1", "p2", "p3"]
    assert result.reviews[1].copy.review_text == "Caf\ufffd results."
    assert result.non_utf8_lines == 1
    assert result.warnings == [f"{path}:2: not UTF-8: byte 0xe9 at column {latin1.index(0xE9) + 1} cannot be decoded (invalid continuation "
                               "byte); replaced with U+FFFD"]  # fmt: skip


def test_line_separator_inside_a_review_does_not_split_its_line(tmp_path):
    path = tmp_path / "reviews.jsonl"
    text = "First point.\u2028Second point.\x85Third."
    path.write_bytes(json.dumps({"paper_id": "p", "paper_text": "P.", "review_text": text}, ensure_ascii=False).encode() + b"\n")
    result = load_review_jsonl(path)
    assert result.errors == [] and result.reviews[0].copy.review_text == text


def test_unpaired_surrogate_and_deep_nesting_cost_their_line_only(tmp_path):
    path = tmp_path / "reviews.jsonl"
    path.write_bytes(generic("p1", "Fine.") + b'{"paper_id": "p2", "paper_text": "P.", "review_text": "bad \\ud800 text"}\n'
                     + b"[" * 100_000 + b"\n" + generic("p4", "Ok."))  # fmt: skip
    result = load_review_jsonl(path)
    assert [r.copy.paper_id for r in result.reviews] == ["p1", "p4"]
    assert [e.line for e in result.errors] == [2, 3]
    assert "unpaired surrogate" in result.errors[0].reason and "invalid JSON" in result.errors[1].reason


# ------------------------------------------------------------------------- paper text
def test_an_empty_paper_text_is_refused_by_line(tmp_path):
    path = tmp_path / "reviews.jsonl"
    path.write_bytes(generic("p1", "Fine.", paper_text="") + generic("p2", "Fine.", paper_text="  \n") + generic("p3", "Ok."))
    result = load_review_jsonl(path)
    assert [r.copy.paper_id for r in result.reviews] == ["p3"]
    assert [str(e) for e in result.errors] == [f"{path}:{n}: field 'paper_text' missing, empty or not a string" for n in (1, 2)]
    rc = tmp_path / "rc.jsonl"
    seg = {"segment_text": "Good.", "reliability": "Yes"}
    rc.write_text(json.dumps({"title": "T", "body_text": " ", "gpt4": {"review": [seg]}}) + "\n")
    assert [e.reason for e in load_reviewcritique(rc).errors] == ["field 'body_text' missing, empty or not a string"]


# ------------------------------------------------------------------------- OpenReview
def _notes() -> list[dict]:
    paper = {"id": "F1", "forum": "F1", "invitation": "Conf/-/Blind_Submission", "content": {"title": "A paper", "abstract": "It works."}}
    review = {"forum": "F1", "invitation": "Conf/-/Paper1/Official_Review", "signatures": ["Conf/Paper1/AnonReviewer1"]}
    return [
        paper,
        review | {"id": "R1", "content": {"review": "Good paper."}},
        review | {"id": "R2", "signatures": {"name": "x"}, "content": {"review": "Signed oddly."}},
        review | {"id": "R3", "invitation": None, "invitations": 7, "content": {"review": "Odd invitations."}},
        review | {"id": "R1", "content": {"review": "Same id again."}},
        review | {"id": "R4", "signatures": [3], "content": {"review": "Fine too."}},
        review | {"id": "R5", "content": {"review": "Broken \ud800 text."}},
    ]


def test_openreview_bad_fields_cost_their_note_and_a_duplicate_id_keeps_its_own(tmp_path):
    path = tmp_path / "notes.json"
    path.write_text(json.dumps(_notes()))
    result = load_openreview(path)
    assert [r.copy.review_id for r in result.reviews] == ["R1", "notes.json:5"]
    assert [r.copy.review_text for r in result.reviews] == ["Good paper.", "Same id again."]
    assert [str(e) for e in result.errors] == [
        f"{path}:3: note #3 (R2): field 'signatures' is dict, expected a list of strings",
        f"{path}:4: note #4 (R3): field 'invitations' is int, expected a list of strings",
        f"{path}:6: note #6 (R4): field 'signatures[0]' is int, expected a string",
        f"{path}:7: note #7 (R5): contains an unpaired surrogate escape: not valid Unicode text",
    ]
    assert [e.item_id for e in result.errors] == ["R2", "R3", "R4", "R5"]
    assert any(f"{path}:5: note #5: id 'R1' repeats note #2; kept as 'notes.json:5'" in w for w in result.warnings)
    # the corpus of these reviews has unique item ids: the run is not refused
    corpus = loaded_corpus([r.copy for r in result.reviews], [r.truth for r in result.reviews], "or", "v1")
    assert corpus.num_items == 2


def test_openreview_jsonl_whose_first_note_lacks_forum_and_content_is_detected(tmp_path):
    path = tmp_path / "notes.jsonl"
    notes = _notes()[:2]
    first = {"id": "D0", "invitation": "Conf/-/Paper1/Official_Review", "signatures": ["x"], "ddate": 1700000000}
    path.write_text("\n".join(json.dumps(n) for n in [first, *notes]) + "\n")
    assert sniff_format(path) == "openreview"
    result = load_reviews(path)
    assert [r.copy.review_id for r in result.reviews] == ["R1"] and [e.line for e in result.errors] == [1]
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(notes, indent=1).encode())
    assert sniff_format(bom) == "openreview" and [r.copy.review_id for r in load_reviews(bom).reviews] == ["R1"]
    generic_file = tmp_path / "generic.jsonl"
    generic_file.write_bytes(b'{"note": "a stray header"}\n' + generic("p1", "Fine.") + generic("p2", "Ok."))
    assert sniff_format(generic_file) == "jsonl"


def test_openreview_non_utf8_note_is_warned_with_its_line(tmp_path):
    path = tmp_path / "notes.jsonl"
    lines = [json.dumps(n).encode() for n in _notes()[:2]]
    lines[1] = lines[1].replace(b"Good paper.", b"Tr\xe8s bien.")
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = load_openreview(path)
    assert result.reviews[0].copy.review_text == "Tr\ufffds bien." and result.non_utf8_lines == 1
    assert result.warnings[0].startswith(f"{path}:2: not UTF-8: byte 0xe8")


@pytest.mark.parametrize("loader", [load_review_jsonl, load_openreview, load_reviewcritique])
def test_an_empty_file_is_an_empty_result(tmp_path, loader):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    result = loader(path)
    assert result.reviews == [] and result.non_utf8_lines == 0


def test_build_report_counts_non_utf8_lines(tmp_path):
    from jobs.build_review_corpus import main

    src = tmp_path / "reviews.jsonl"
    src.write_bytes(generic("p1", "Caf\xe9 uses 3 datasets.".encode("latin-1").decode("latin-1")).replace(b"\\u00e9", b"\xe9")
                    + generic("p2", "In 2019 five baselines were compared."))  # fmt: skip
    out = tmp_path / "out"
    assert main([str(src), "--track", "natural", "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["non_utf8_lines"] == 1 and report["reviews"] == 2
    assert report["warnings"][0].startswith(f"{src}:1: not UTF-8: byte 0xe9")


# ------------------------------------------------------------------------- imported predictions
def _import(tmp_path, lines: list[bytes]) -> dict:
    import asyncio

    from tests.verifiers.review_detectors.review_table import items_of, table
    from verifiers.registry import SystemSpec, build_system
    from verifiers.system import RunContext

    path = tmp_path / "preds.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    copies, _ = table()
    outputs = asyncio.run(build_system(SystemSpec("review_import", {"path": str(path)})).run(items_of(copies), RunContext("r", "2026-01-01")))
    return {o.item_id: o for o in outputs}


def test_import_one_non_utf8_and_one_bad_json_line_fail_their_reviews_only(tmp_path):
    by_id = _import(tmp_path, [
        b'{"review_id": "R1", "review_hallucinated": true}',
        b'{"review_id": "R2", "sentence_types": {"1": "N\xfamero"}, "review_hallucinated": true}',
        b'{"review_id": "R3", "review_hallucinated": tru',
        b'{"review_id": 7, "review_hallucinated": true}',
        b'[[[[',
        b'{"review_id": "R5", "review_hallucinated": false}',
    ])  # fmt: skip
    assert by_id["R1"].label == "HALLUCINATED" and by_id["R5"].label == "VALID"
    assert by_id["R2"].error_kind == "parse" and by_id["R2"].error.startswith("preds.jsonl:2: not UTF-8: byte 0xfa")
    assert by_id["R3"].error_kind == "parse" and by_id["R3"].error.startswith("preds.jsonl:3: not JSON")
    assert by_id["R4"].error_kind == "input" and by_id["R4"].error == (
        "no prediction for review R4 in preds.jsonl (2 unreadable lines naming no review; first: "
        "preds.jsonl:4: a line must be an object with a string review_id)")


def test_import_spans_and_sentence_indices_are_checked_against_the_review(tmp_path):
    from tests.verifiers.review_detectors.review_table import table

    r1_length = len(table()[0][0].review_text)
    by_id = _import(tmp_path, [
        json.dumps({"review_id": "R1", "review_hallucinated": True, "spans": [[0, r1_length + 1]]}).encode(),
        json.dumps({"review_id": "R2", "sentence_labels": [0, 2]}).encode(),
        json.dumps({"review_id": "R3", "sentence_labels": {"0": False}, "sentence_types": {"-1": "Number"}}).encode(),
        json.dumps({"review_id": "R4", "review_hallucinated": "false"}).encode(),
        json.dumps({"review_id": "R5", "review_hallucinated": True, "confidence": float("nan"),
                    "spans": [[0, 3]]}).encode(),  # fmt: skip
    ])  # fmt: skip
    assert all(o.error_kind == "parse" and o.label is None for o in by_id.values()), by_id
    assert by_id["R1"].error == (f"preds.jsonl:1: field 'spans[0]': [0, {r1_length + 1}] runs past the end of the "
                                 f"review text ({r1_length} characters)")  # fmt: skip
    assert by_id["R2"].error == "preds.jsonl:2: field 'sentence_labels': sentence 2 is out of range (the review has 2 sentences)"
    assert by_id["R3"].error == "preds.jsonl:3: field 'sentence_types': '-1' is not a sentence index"
    assert by_id["R4"].error == "preds.jsonl:4: field 'review_hallucinated': 'false' is not true or false"
    assert by_id["R5"].error == "preds.jsonl:5: field 'confidence': nan is not a number in [0, 1]"
    good = _import(tmp_path, [json.dumps({"review_id": "R1", "sentence_labels": [1], "spans": [[0, r1_length]]}).encode()])
    assert good["R1"].label == "HALLUCINATED" and good["R1"].detail["review"]["spans"] == [[0, r1_length]]


# ------------------------------------------------------------------------- a prebuilt corpus
def test_prebuilt_corpus_refuses_truth_outside_its_text_and_sentences_not_where_they_say(tmp_path):
    from corpora.reviews.corpus_io import read_jsonl, write_jsonl
    from tests.scoring.reviews.review_fixtures import injection, truth_of
    from tests.verifiers.review_detectors.review_table import table

    copies, _ = table()
    truths = [truth_of(copies[0], injection(copies[0], 1, "95.0%", "Number"))] + [truth_of(c) for c in copies[1:]]
    items, truth = tmp_path / "items.jsonl", tmp_path / "truth.jsonl"
    write_jsonl(copies, truths, items, truth, "hand")
    rows = [json.loads(line) for line in truth.read_text().splitlines()]
    rows[0]["truth"]["injections"][0]["end"] = 10_000  # past the end of R1's text
    rows[1]["truth"]["sentence_labels"] = {"0": False, "7": True}  # R2 has 2 sentences
    truth.write_text("".join(json.dumps(r) + "\n" for r in rows))
    item_rows = [json.loads(line) for line in items.read_text().splitlines()]
    item_rows[2]["payload"]["sentences"][1]["start"] += 3  # R3's sentence 1 is not where it says
    items.write_text("".join(json.dumps(r) + "\n" for r in item_rows))
    kept, kept_truths, errors = read_jsonl(items, truth)
    assert [c.review_id for c in kept] == ["R4", "R5"] and sorted(kept_truths) == ["R4", "R5"]
    assert [(Path(e.file).name, e.line, e.item_id) for e in errors] == [
        ("items.jsonl", 3, "R3"), ("truth.jsonl", 1, "R1"), ("truth.jsonl", 2, "R2")]
    assert errors[0].reason.startswith("field 'payload.sentences': sentence 1")
    assert errors[1].reason.startswith("field 'truth.injections[0]': span [") and "outside the review text" in errors[1].reason
    assert errors[2].reason == "field 'truth.sentence_labels': sentence 7 is out of range (2 sentences)"

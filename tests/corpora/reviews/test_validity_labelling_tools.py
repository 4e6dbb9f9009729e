"""The tools the held-out validity measurement runs on: PeerRead reviews to the generic JSONL
(`bench/peerread_to_jsonl.py`) and the injections of builds that no label covers yet
(`bench/review_injections_to_label.py`), run in-process on the bundled sample's build."""

from __future__ import annotations

import json

import pytest

from bench.peerread_to_jsonl import main as peerread_to_jsonl
from bench.peerread_to_jsonl import official_reviews
from bench.review_injections_to_label import main as to_label
from jobs.build_review_corpus import main as build_corpus
from tests.helpers.paths import REPO_ROOT

SAMPLE = REPO_ROOT / "corpora" / "samples" / "reviews_sample.jsonl"
LABELS = REPO_ROOT / "tests" / "corpora" / "reviews" / "data" / "injection_validity_labels.jsonl"


def test_official_reviews_of_iclr_and_acl_files():
    iclr = {"reviews": [
        {"OTHER_KEYS": "ICLR 2017 conference AnonReviewer3", "comments": "Good paper.", "IS_META_REVIEW": False},
        {"OTHER_KEYS": "ICLR 2017 pcs", "comments": "Accept.", "IS_META_REVIEW": False},
        {"OTHER_KEYS": "Jane Author", "comments": "Thanks for the review."},
        {"OTHER_KEYS": "ICLR 2017 conference AnonReviewer1", "comments": "", "IS_META_REVIEW": False},
        {"OTHER_KEYS": "ICLR 2017 conference AnonReviewer3", "comments": "Good paper.", "IS_META_REVIEW": False},
    ]}  # fmt: skip
    assert list(official_reviews(iclr)) == [("AnonReviewer3", "Good paper.")]  # PeerRead repeats its lists
    acl = {"reviews": [{"comments": "- Strengths:\nclear"}, {"comments": ""}, {"comments": "- Weaknesses:\nnone"},
                       {"comments": "- Strengths:\nclear"}]}  # fmt: skip
    assert list(official_reviews(acl)) == [("R1", "- Strengths:\nclear"), ("R3", "- Weaknesses:\nnone")]


def test_a_batch_of_ids_with_the_labels_ids_and_the_parsed_abstract(tmp_path, capsys):
    """The README's reproduce command: `--ids` picks the batch's papers, `--id-prefix` gives the ids the
    held-out labels use ("train304-AnonReviewer1"), the parsed abstract opens the paper's sections."""
    split = tmp_path / "train"
    (split / "reviews").mkdir(parents=True)
    (split / "parsed_pdfs").mkdir()
    for pid in ("303", "304", "335", "336"):
        review = {"OTHER_KEYS": "ICLR 2017 conference AnonReviewer1", "comments": f"Review of {pid}."}
        (split / "reviews" / f"{pid}.json").write_text(json.dumps({"title": f"T{pid}", "abstract": "A.", "reviews": [review]}))
    sections = [{"heading": "1 INTRODUCTION", "text": "We study X."}, {"heading": None, "text": "More."}]
    (split / "parsed_pdfs" / "304.pdf.json").write_text(json.dumps({"metadata": {"abstractText": "Parsed A.", "sections": sections}}))
    out = tmp_path / "batch.jsonl"
    assert peerread_to_jsonl([str(split), "--ids", "304-335", "--id-prefix", "train", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["review_id"] for r in rows] == ["train304-AnonReviewer1", "train335-AnonReviewer1"]
    assert rows[0]["paper_id"] == "train304"
    assert rows[0]["paper_text"] == "T304\n\nA.\n\nABSTRACT\nParsed A.\n\n1 INTRODUCTION\nWe study X.\n\nMore."
    assert rows[1]["paper_text"] == "T335\n\nA."  # no parsed PDF: title and abstract, said on stderr
    assert "335" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        peerread_to_jsonl([str(split), "--ids", "304-x", "--out", str(out)])


def test_injections_left_to_label_come_with_their_sentences_and_papers(tmp_path, capsys):
    built = tmp_path / "built"
    assert build_corpus([str(SAMPLE), "--seed", "0", "--copies", "2", "--out", str(built)]) == 0
    capsys.readouterr()
    out, papers = tmp_path / "to_label.jsonl", tmp_path / "papers"
    assert to_label([str(built), "--out", str(out), "--papers-out", str(papers)]) == 0
    assert json.loads(capsys.readouterr().out)["to_label"] == 6
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    truth = [json.loads(line)["truth"] for line in (built / "truth.jsonl").read_text().splitlines()]
    assert len(rows) == sum(len(t["injections"]) for t in truth) == 6  # the two copies never repeat one
    for r in rows:
        assert r["original"] in r["sentence_before"] and r["injected"] in r["sentence_after"]
        assert r["sentence_before"] != r["sentence_after"] and r["corpora"] == [str(built)]
        assert (papers / f"{r['paper_id']}.txt").read_text()  # the paper to read beside it
    # the documented build is wholly labelled: nothing is left to label
    assert to_label([str(built), "--labels", str(LABELS), "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["to_label"] == 0 and out.read_text() == ""

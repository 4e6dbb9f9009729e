"""The tools the held-out validity measurement runs on: PeerRead reviews to the generic JSONL
(`bench/peerread_to_jsonl.py`) and the injections of builds that no label covers yet
(`bench/review_injections_to_label.py`), run in-process on the bundled sample's build."""

from __future__ import annotations

import json

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

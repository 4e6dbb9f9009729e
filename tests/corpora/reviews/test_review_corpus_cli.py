"""jobs/build_review_corpus.py: --help, the injected and natural tracks, outputs and report."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from corpora.reviews.corpus_io import read_jsonl
from jobs.build_review_corpus import main
from tests.corpora.reviews.test_review_ingest import FIXTURES, REVIEWCRITIQUE, require_reviewcritique
from tests.helpers.paths import REPO_ROOT


def _reviews(tmp_path):
    path = tmp_path / "reviews.jsonl"
    rows = [
        {"paper_id": "p1", "paper_text": "We use BERT and RoBERTa on GLUE and SQuAD. BERT reaches 85.4% accuracy on 36 datasets.",
         "review_text": "The paper fine-tunes BERT on GLUE and reports 85.4% accuracy. Recent work might help. "
                        "The authors use 36 datasets."},
        {"paper_id": "p2", "paper_text": "A paper. In 2019, we compared 15 baselines on SQuAD.",
         "review_text": "In 2019, the authors compared 15 baselines on SQuAD."},
        {"paper_id": "p3"},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.integration
def test_help_explains_outputs_and_formats():
    out = subprocess.run([sys.executable, "jobs/build_review_corpus.py", "--help"], cwd=REPO_ROOT,
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    for words in ("items.jsonl", "truth.jsonl", "report.json", "reviewcritique", "openreview", "--track",
                  "rule injectors", "--llm-verify", "--seed"):  # fmt: skip
        assert words in out


def test_injected_track_writes_corpus_truth_tables_and_report(tmp_path, capsys):
    src = _reviews(tmp_path)
    out = tmp_path / "out"
    assert main([str(src), "--out", str(out), "--seed", "3", "--copies", "2", "--max-injections", "1"]) == 0
    assert "review_injection: 2 reviews -> 6 copies, 4 injections, 1 load errors" in capsys.readouterr().out
    copies, truths, errors = read_jsonl(out / "items.jsonl", out / "truth.jsonl")
    assert errors == [] and len(copies) == 6 and set(truths) == {c.review_id for c in copies}
    assert [c.review_id for c in copies][:3] == ["p1:r1#clean", "p1:r1#inj1", "p1:r1#inj2"]
    first = json.loads((out / "items.jsonl").read_text().splitlines()[0])
    assert first["kind"] == "review" and "truth" not in first and "injections" not in json.dumps(first)
    items, truth = pq.read_table(out / "items.parquet"), pq.read_table(out / "truth.parquet")
    assert items.num_rows == truth.num_rows == 6
    assert truth.column("label").to_pylist().count("HALLUCINATED") == 4
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["total"]["kept"] == 4 and report["reviews"] == 2
    assert report["load_errors"] == [f"{src}:3: field 'paper_text' missing, empty or not a string"]
    assert report["unavailable_anchors"] == ["False Concatenation", "Attribution Failure", "Overgeneralization",
                                             "Reasoning Error", "Hyperbole", "Context-based Meaning Error"]  # fmt: skip
    # same seed, same bytes
    again = tmp_path / "again"
    main([str(src), "--out", str(again), "--seed", "3", "--copies", "2", "--max-injections", "1"])
    assert (again / "truth.jsonl").read_bytes() == (out / "truth.jsonl").read_bytes()


def test_natural_track_on_openreview_export(tmp_path):
    out = tmp_path / "nat"
    assert main([str(FIXTURES / "openreview_v2_notes.json"), "--track", "natural", "--out", str(out)]) == 0
    copies, truths, _ = read_jsonl(out / "items.jsonl", out / "truth.jsonl")
    assert [c.review_id for c in copies] == ["rEv1aaaa01", "rEv1bbbb02"]
    assert all(not t.hallucinated for t in truths.values())
    assert len(json.loads((out / "report.json").read_text())["load_errors"]) == 1


@pytest.mark.requires_shared_data
def test_reviewcritique_natural_track(tmp_path):
    require_reviewcritique()
    out = tmp_path / "rc"
    assert main([str(REVIEWCRITIQUE), "--track", "natural", "--out", str(out)]) == 0
    copies, truths, errors = read_jsonl(out / "items.jsonl", out / "truth.jsonl")
    assert errors == [] and len(copies) == 60
    assert sum(len(c.sentences) for c in copies) == 1610
    assert sum(sum(t.sentence_labels.values()) for t in truths.values()) == 226


@pytest.mark.integration
def test_same_bytes_across_processes_with_different_hash_seeds(tmp_path):
    import os

    src = _reviews(tmp_path)
    outputs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"h{hash_seed}"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run([sys.executable, "jobs/build_review_corpus.py", str(src), "--out", str(out), "--seed", "4",
                        "--copies", "3", "--max-injections", "2"], cwd=REPO_ROOT, env=env, check=True,
                       capture_output=True)  # fmt: skip
        outputs.append(((out / "items.jsonl").read_bytes(), (out / "truth.jsonl").read_bytes()))
    assert outputs[0] == outputs[1]

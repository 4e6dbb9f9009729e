"""Issue 21, item 4: hand-labelled injections on the shared papers.

`data/paper_injection_labels.jsonl` holds injections made at seed 7 on six shared papers, each read
by a person and labelled valid or invalid with a one-line reason: 66 made by the code before the
issue-21 fixes (`code: before`, 53 valid) and 23 new ones made after them (`code: after`). The
injector at seed 7 must make only labelled injections on these papers (a change of the injectors
shows up here and needs new labels), none of the injections labelled invalid before the fixes may
come back (but one, below, that no rule tells apart), and the hand-checked validity the corpus
report prints may not fall.
"""

from __future__ import annotations

import json

import pytest

from checkers.equivalence import same_at_sample_points
from corpora.papers.audit_corpus import build_paper_audit_corpus
from corpora.papers.corpus_report import HAND_LABELS, corpus_report, read_labels
from tests.helpers.paths import SHARED_DATA

# "Observations of gravitational waves ... are becoming routine \cite{...}" -> "Simulations": the
# paper's own framing, labelled invalid; a word swap in a cited sentence that no rule tells apart
# from a cited method (the sentence names no method of the cited works).
KNOWN_RESIDUAL = {"cover-your-basis-2023/copy-3/4"}
VALID_AFTER = (59, 67)


def test_labels_are_well_formed():
    labels = read_labels(HAND_LABELS)
    assert len(labels) >= 60 and all(r["reason"].strip() for r in labels)
    before = [r for r in labels if r["code"] == "before"]
    assert (sum(r["label"] == "valid" for r in before), len(before)) == (53, 66)


@pytest.mark.requires_shared_data
def test_the_injector_at_seed_7_makes_labelled_injections_and_drops_the_invalid_ones():
    labels = read_labels(HAND_LABELS)
    papers = sorted({r["paper"] for r in labels})
    corpus = build_paper_audit_corpus([SHARED_DATA / "papers" / p for p in papers], seed=7, check_compile=False,
                                      same_maths=same_at_sample_points)  # fmt: skip
    made = set()
    for row in corpus.truth.to_pylist():
        extra = json.loads(row["extra_json"])
        made |= {(extra["paper_id"], i["file"], i["original"], i["injected"]) for i in extra["injections"]}
    back = [r["injection_id"] for r in labels if r["code"] == "before" and r["label"] == "invalid"
            and (r["paper"], r["file"], r["before"], r["after"]) in made]  # fmt: skip
    assert set(back) <= KNOWN_RESIDUAL, back
    report = corpus_report(corpus, HAND_LABELS)
    h = report.hand_checked
    assert h is not None and h.labelled == h.injections, "unlabelled injections: label them (see the module doc)"
    assert h.valid / h.labelled >= VALID_AFTER[0] / VALID_AFTER[1], (h.valid, h.labelled)
    assert any(line.startswith(f"hand-checked validity: {h.valid}/{h.labelled}") for line in report.lines())


HELDOUT_LABELS = HAND_LABELS.with_name("paper_injection_labels_heldout.jsonl")


def test_held_out_labels_are_self_contained_and_give_the_reported_share():
    """72 injections at seed 7 on six papers never used to tune the injectors (README "Paper audits"),
    read and labelled by hand before any injector fix; each row carries its source repository and
    the injected text in context, so it can be judged without the paper."""
    labels = read_labels(HELDOUT_LABELS)
    assert len(labels) == 72 and len({r["paper"] for r in labels}) == 6
    assert all(r["reason"].strip() and "@" in r["source"] for r in labels)
    assert all(f"[[{r['after']}]]" in r["context_after"] for r in labels)
    assert sum(r["label"] == "valid" for r in labels) == 56  # 78 %: the held-out share in the README

"""All nine anchors through the LLM path end to end: `jobs/build_review_corpus.py --model` against
the replay server on 127.0.0.1 answering the session-written recording
(`data/llm_injection_recording.jsonl`), with the feasibility check (`--llm-check`) and the
equivalence judge (`--llm-verify`). Each anchor is one build over its cases
(`llm_anchor_cases.CASES`); the truth of every injection is checked against the recording's
hand-written expectation: its type path and the exact changed characters."""

from __future__ import annotations

import json

import pytest

from clients.llm_request import messages_hash
from corpora.reviews.records import ANCHORS
from corpora.reviews.taxonomy import review_taxonomy
from jobs.build_review_corpus import main as build_corpus
from tests.corpora.reviews.llm_anchor_cases import (
    CASES,
    RECORDING,
    SAMPLE,
    messages_of,
    read_recording,
    review_rows,
)
from tests.helpers.replay_server import replay_server, server_stats

RECORDING_LINES = read_recording()


def test_recording_answers_the_prompts_the_code_sends_today():
    """Each line's hash is the hash of the prompt rebuilt from its readable fields (a prompt change
    shows here first), its answers are the session's, and the cases are the sample's sentences."""
    assert set(RECORDING_LINES[0]) == {"note"} and "written by a scrutineer session" in RECORDING_LINES[0]["note"]
    for line in RECORDING_LINES[1:]:
        assert line["messages_hash"] == messages_hash(messages_of(line)), line["case"]
        assert line["response"]["model_id"] == "session-written"
    sample = SAMPLE.read_text()
    assert all((c.sentence in sample) != c.written for c in CASES)
    assert {c.anchor for c in CASES} == set(ANCHORS)


@pytest.mark.integration  # starts the replay server
def test_every_anchor_is_injected_through_the_replayed_llm(tmp_path):
    taxonomy = review_taxonomy()
    expected = {line["case"]: line for line in RECORDING_LINES[1:] if line.get("expected_span")}
    reports, found = {}, {}
    with replay_server("--recording", str(RECORDING), tmp=tmp_path) as url:
        for anchor in ANCHORS:
            src = tmp_path / f"{anchor}.jsonl"
            src.write_text("".join(json.dumps(r) + "\n" for r in review_rows(anchor)))
            out = tmp_path / anchor
            code = build_corpus([str(src), "--out", str(out), "--anchors", anchor, "--model", "openai/replayed",
                                 "--api-base", f"{url}/v1", "--llm-check", "--llm-verify", "--llm-all-anchors"])  # fmt: skip
            assert code == 0
            reports[anchor] = json.loads((out / "report.json").read_text())
            items = {r["item_id"]: r["payload"] for r in map(json.loads, (out / "items.jsonl").read_text().splitlines())}
            for row in map(json.loads, (out / "truth.jsonl").read_text().splitlines()):
                for inj in row["truth"]["injections"]:
                    found[row["item_id"].split("#")[0]] = (inj, items[row["item_id"]])
        stats = server_stats(url)
    # every recorded answer was asked for, nothing else was (c-hy-2's second injection asks its two templates again)
    assert stats.get("unmatched", 0) == 0 and stats["answered_prompts"] == len(RECORDING_LINES) - 1 and stats["ok"] == 64

    assert set(found) == set(expected)  # the cases with a valid answer, and only those, were injected
    for case, line in expected.items():
        inj, item = found[case]
        text = item["review_text"]
        assert (inj["anchor"], inj["injector"]) == (line["path"][0], "llm"), case
        assert list(taxonomy.path_of(inj["anchor"], inj["leaf"])) == line["path"], case
        assert text[inj["start"] : inj["end"]] == inj["injected"] == line["expected_span"], case
        assert text == json.loads(line["response"]["text"])["sentence"]  # one-sentence review: the answer itself
        assert line["sentence"].replace(inj["original"], "\0", 1).replace("\0", inj["injected"]) == text, case
    kept = {a: r["counts"]["total"]["kept"] for a, r in reports.items()}
    assert kept == {a: sum(c.anchor == a and c.review_id in expected for c in CASES) for a in ANCHORS}
    assert all(kept[a] >= 1 for a in ANCHORS)
    # Check_M refused 1 Number, 2 Entity, 4 Hyperbole (c-hy-2, both leaves, in both of its injections) and
    # 1 Context-based Meaning Error template; a refused leaf left the anchor's other leaves open
    infeasible = {a: r["counts"]["total"]["infeasible"] for a, r in reports.items() if r["counts"]["total"]["infeasible"]}
    assert infeasible == {"Number": 1, "Entity": 2, "Hyperbole": 4, "Context-based Meaning Error": 1}
    assert reports["Hyperbole"]["feasibility"] == {"asked": 5, "infeasible": 4, "parse_failures": 0}
    assert [s["review_id"] for s in reports["Hyperbole"]["skipped"]] == ["c-hy-2#inj1"]
    # the malformed answer is a counted parse failure; the no-op paraphrase is discarded by the judge
    og = reports["Overgeneralization"]
    assert og["counts"]["total"]["parse_failures"] == og["llm_injector"]["parse_failures"] == 1
    assert og["counts"]["total"]["equivalent"] == og["equivalence"]["judge_equivalent"] == 1
    assert sorted(s["review_id"] for s in og["skipped"]) == ["c-og-equiv#inj1", "c-og-malformed#inj1"]
    assert all(r["unavailable_anchors"] == [] for r in reports.values())



class _Answer:
    def __init__(self, text: str) -> None:
        self.text = text


class _RefusesYearLeaves:
    """An in-process gateway: Check_M refuses the Year Discrepancy leaves, the injector changes 78.4."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def complete(self, messages, params=None):
        prompt = messages[-1]["content"]
        if "compatibility checker" in prompt:
            labels = prompt.split("Hallucination_Labels:\n")[1].splitlines()[0]
            self.asked.append(labels)
            return _Answer("false" if "Year Discrepancy" in labels else "true")
        sentence = prompt.split("Injection_Sentence: ")[1].splitlines()[0]
        return _Answer(json.dumps({"sentence": sentence.replace("78.4", "81.6")}))


def test_a_refused_leaf_leaves_the_anchors_other_leaves_open():
    from corpora.reviews.corpus_builder import BuildConfig, ReviewInjectionBuilder
    from corpora.reviews.ingest import review_source
    from corpora.reviews.llm_injector import LLMInjector
    from corpora.reviews.screening import LLMFeasibilityCheck

    (row,) = [r for r in review_rows("Number") if r["review_id"] == "c-num-1"]
    source = review_source(row["review_id"], row["paper_id"], row["review_text"], row["paper_text"], "t", 1)
    gateway = _RefusesYearLeaves()
    builder = ReviewInjectionBuilder(config=BuildConfig(seed=0, anchors=("Number",), prefer_rules=False, max_attempts=8),
                                     llm_injector=LLMInjector(gateway), feasibility=LLMFeasibilityCheck(gateway))  # fmt: skip
    corpus = builder.build([source])
    # the seeded first draw is a year leaf (refused), the second draw a score leaf (kept)
    assert gateway.asked == ["Number > Year Discrepancy > Event Year Fabrication",
                             "Number > Statistical Value Mismatch > Reported Score Mismatch"]  # fmt: skip
    (inj,) = corpus.truths[1].injections
    assert (inj.leaf, inj.original, inj.injected) == ("Reported Score Mismatch", "78.4", "81.6")
    assert corpus.counts.as_dict()["total"] == {"screened": 1, "attempts": 1, "equivalent": 0, "infeasible": 1,
                                                     "parse_failures": 0, "rejected": 0, "kept": 1, "duplicate": 0, "ungrounded": 0,
                                                     "unrefutable": 0}  # fmt: skip

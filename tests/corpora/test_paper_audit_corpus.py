"""build_paper_audit_corpus: copies, truth per the contract, offsets, determinism, LLM proposer and fallback."""

import json
from collections import Counter
from dataclasses import dataclass

import pytest

from corpora.papers.audit_corpus import build_paper_audit_corpus
from corpora.papers.llm_proposer import LLMProposer
from tests.helpers.paths import REPO_ROOT, SHARED_DATA

EXAMPLE = REPO_ROOT / "corpora" / "samples" / "papers" / "example-paper"
PAPERS = SHARED_DATA / "papers"
KEYS = {"injection_id", "error_type", "severity", "subtype", "file", "start", "end", "original", "injected",
        "rationale", "mechanism", "changed_start", "changed_end", "changed_original", "changed_injected"}  # fmt: skip


def _rows(corpus):
    items = {r["item_id"]: json.loads(r["payload_json"]) for r in corpus.items.to_pylist()}
    truth = {r["item_id"]: json.loads(r["extra_json"]) for r in corpus.truth.to_pylist()}
    return items, truth


def test_example_and_real_papers_follow_the_contract():
    dirs = [EXAMPLE] + ([PAPERS / "legwork-2022", PAPERS / "rescience-pitching-plates-2021"] if PAPERS.is_dir() else [])
    corpus = build_paper_audit_corpus(dirs, seed=5)
    items, truth = _rows(corpus)
    widths: list[int] = []
    assert corpus.items.num_rows == 4 * len(dirs)
    for d in dirs:
        pid = d.name
        clean = items[f"{pid}/copy-0"]
        assert clean["main_file"] == "main.tex" and "main.tex" in clean["files"]
        assert truth[f"{pid}/copy-0"] == {"paper_id": pid, "copy": 0, "clean": True, "injections": [],
                                          "skipped": [], "tex_engine": truth[f"{pid}/copy-0"]["tex_engine"]}  # fmt: skip
        combos = Counter()
        for k in (1, 2, 3):
            payload, t = items[f"{pid}/copy-{k}"], truth[f"{pid}/copy-{k}"]
            assert payload["paper_id"] == pid and payload["copy"] == k and not t["clean"]
            assert len(t["injections"]) + len(t["skipped"]) == 4
            touched = set()
            for n, inj in enumerate(t["injections"], start=1):
                assert set(inj) == KEYS and inj["injection_id"] == f"{pid}/copy-{k}/{n}"
                assert inj["mechanism"] == "rule"  # no proposer: rule sub-types only
                assert payload["files"][inj["file"]][inj["start"] : inj["end"]] == inj["injected"]
                # The changed span is exact and inside the placement window (issue 15).
                text = payload["files"][inj["file"]]
                assert inj["start"] <= inj["changed_start"] <= inj["changed_end"] <= inj["end"]
                assert text[inj["changed_start"] : inj["changed_end"]] == inj["changed_injected"]
                assert inj["changed_injected"] != inj["changed_original"]
                assert inj["changed_end"] - inj["changed_start"] <= len(inj["injected"])
                widths.append(inj["changed_end"] - inj["changed_start"])
                assert clean["files"][inj["file"]].count(inj["original"]) == 1
                touched.add(inj["file"])
                combos[(inj["error_type"], inj["severity"])] += 1
            for rel, text in payload["files"].items():
                if rel not in touched:
                    assert text == clean["files"][rel]  # untouched files byte-exact
        # each combination at most once; issue 21: pitching-plates' cited numbers are maths and its cited
        # method words sit in the authors' own sentences, so a citation cell may stay skipped (counted)
        assert all(v == 1 for v in combos.values()) and len(combos) >= 10
    windows = [len(i["injected"]) for t in truth.values() for i in t["injections"]]
    assert sorted(widths)[len(widths) // 2] < sorted(windows)[len(windows) // 2]  # narrower than the windows


def test_seeded():
    a = build_paper_audit_corpus([EXAMPLE], seed=1)
    b = build_paper_audit_corpus([EXAMPLE], seed=1)
    c = build_paper_audit_corpus([EXAMPLE], seed=2)
    assert a.truth.equals(b.truth) and a.items.equals(b.items) and a.version == b.version
    assert not a.truth.equals(c.truth) and a.version != c.version


@dataclass
class _Answer:
    text: str | None


class ScriptedGateway:
    """A gateway of the proposer's protocol answering from a script (first answer invalid)."""

    def __init__(self):
        self.prompts = []

    async def complete(self, messages, params=None):
        self.prompts.append(messages[-1]["content"])
        if len(self.prompts) == 1:
            return _Answer('{"file": "sections/intro.tex", "original": "24", "injected": "25", "rationale": "x"}')
        if "phantom_evidence" in messages[-1]["content"] or "methods_results" in messages[-1]["content"]:
            original = "we estimate the parameters by least squares"
            injected = original + " (a pilot study on held-out runs confirmed this choice)"
            return _Answer(json.dumps({"file": "sections/method.tex", "original": original, "injected": injected,
                                       "rationale": "phantom evidence"}))  # fmt: skip
        return _Answer("no idea")


def test_llm_proposer_is_retried_with_feedback_and_falls_back_to_rules():
    gateway = ScriptedGateway()
    seeds = [s for s in range(40) if _has_general_s2_llm(s)]
    assert seeds
    corpus = build_paper_audit_corpus([EXAMPLE], seed=seeds[0], proposer=LLMProposer(gateway))
    _, truth = _rows(corpus)
    injections = [i for k in (1, 2, 3) for i in truth[f"example-paper/copy-{k}"]["injections"]]
    llm = [i for i in injections if i["mechanism"] == "llm"]
    assert any(i["subtype"] in ("phantom_evidence", "methods_results_inconsistency") for i in llm)
    assert len(injections) == 12  # LLM sub-types that failed fell back to rule sub-types
    assert any("Earlier proposals were rejected because" in p for p in gateway.prompts)


def _has_general_s2_llm(seed):
    from corpora.papers.schedule import paper_rng
    from corpora.papers.subtypes import paper_subtypes

    rng = paper_rng(seed, "example-paper", "copy-1", "general")
    from corpora.papers.schedule import severity_schedule

    sev = severity_schedule("example-paper", seed)[1]["general"]
    if sev != "S2":
        return False
    return rng.choice(paper_subtypes().for_combination("general", "S2")).mechanism == "llm"


@pytest.mark.requires_shared_data
def test_skipped_injection_has_a_reason():
    # neural-fingerprints has one display equation: no mathematics S3 rule finds a place; issue 21: its
    # only cited reversal is the authors' own finding, its table cells have no total; second round: its
    # cited qualifiers are the authors' own model or a table row, its cited numbers are stated once
    corpus = build_paper_audit_corpus([PAPERS / "neural-fingerprints-2015"], seed=0)
    _, truth = _rows(corpus)
    skipped = {(s["error_type"], s["severity"]): s["reason"] for k in (1, 2, 3)
               for s in truth[f"neural-fingerprints-2015/copy-{k}"]["skipped"]}  # fmt: skip
    assert set(skipped) == {("mathematics", "S3"), ("citations", "S3"), ("numerics", "S1"), ("citations", "S1")}
    assert "only the cited work could show it wrong" in skipped[("citations", "S1")]
    assert "no eligible place in the paper" in skipped[("mathematics", "S3")]
    assert "the authors' own work" in skipped[("citations", "S3")]
    assert "in a table with no total" in skipped[("numerics", "S1")]


def test_ml_variant_never_uses_dimensional_absurdity():
    for seed in range(6):
        corpus = build_paper_audit_corpus([EXAMPLE], seed=seed, variant="ml")
        _, truth = _rows(corpus)
        subtypes = [i["subtype"] for t in truth.values() for i in t["injections"]]
        assert len(subtypes) == 12 and "dimensional_absurdity" not in subtypes
        math_s3 = [i for t in truth.values() for i in t["injections"] if (i["error_type"], i["severity"]) == ("mathematics", "S3")]
        assert [i["subtype"] in ("wrong_plausible_formula", "false_limit_exponent") for i in math_s3] == [True]

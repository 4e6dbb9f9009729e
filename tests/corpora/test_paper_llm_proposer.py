"""The LLM proposer through the real gateway and the replay server on 127.0.0.1."""

import json

import pytest

from clients.llm_gateway import LLMGateway, LLMServices
from clients.retry import RetryPolicy
from corpora.papers.audit_corpus import build_paper_audit_corpus
from corpora.papers.llm_proposer import LLMProposer, ProposalParseError, parse_proposal
from tests.helpers.paths import REPO_ROOT
from tests.helpers.replay_server import replay_server, server_stats

EXAMPLE = REPO_ROOT / "corpora" / "samples" / "papers" / "example-paper"
ORIGINAL = "we estimate the parameters by least squares"
PHANTOM = {"file": "sections/method.tex", "original": ORIGINAL, "rationale": "no such pilot study is reported",
           "injected": ORIGINAL + " (a pilot study on held-out runs confirmed this choice)"}  # fmt: skip
BAD_KEY = {"file": "sections/intro.tex", "original": "\\citep{smith2019,jones2021}",
           "injected": "\\citep{smith2019}", "rationale": "drops a key"}  # fmt: skip


def test_parse_proposal():
    assert parse_proposal("```json\n" + json.dumps(PHANTOM) + "\n```").original == ORIGINAL
    for bad in (None, "no json here", '{"file": 1}', "{not json}"):
        try:
            parse_proposal(bad)
        except ProposalParseError:
            continue
        raise AssertionError(f"accepted {bad!r}")


@pytest.mark.integration
def test_llm_subtypes_through_the_gateway(tmp_path):
    rules = [
        # a rejected proposal (citation key removed) is retried with the reason in the prompt
        {"match": {"contains": "Earlier proposals were rejected because: a citation key"},
         "response": {"text": json.dumps(PHANTOM)}},
        {"match": {"contains": "Sub-type: "}, "response": {"text": json.dumps(BAD_KEY)}},
    ]  # fmt: skip
    with replay_server(recordings=rules, tmp=tmp_path) as url:
        gateway = LLMGateway("openai/test-model", LLMServices(retry=RetryPolicy(max_attempts=2, base_wait=0.01)),
                             api_base=f"{url}/v1")  # fmt: skip
        proposer = LLMProposer(gateway)
        corpus = build_paper_audit_corpus([EXAMPLE], seed=0, proposer=proposer)
        served = server_stats(url)
    truth = [json.loads(r["extra_json"]) for r in corpus.truth.to_pylist()]
    injections = [i for t in truth for i in t["injections"]]
    llm = [i for i in injections if i["mechanism"] == "llm"]
    assert len(injections) == 12 and not any(t["skipped"] for t in truth)
    # seed 0 draws three LLM sub-types: copy 2 general, copy 3 general and copy 3 citations. The script's
    # edit is accepted (after one rejection) for the two general ones; in copy 3 the citations one
    # overlaps the general edit every time, so after 3 rejected proposals it falls back to a rule sub-type.
    assert [(i["injection_id"].split("/")[1], i["subtype"]) for i in llm] == [
        ("copy-2", "methods_results_inconsistency"), ("copy-3", "methodology_experiment_contradiction")]
    assert all(i["injected"] == PHANTOM["injected"] for i in llm)
    copy3_citation = [i for i in injections if i["injection_id"].startswith("example-paper/copy-3")
                      and i["error_type"] == "citations"]  # fmt: skip
    assert len(copy3_citation) == 1 and copy3_citation[0]["mechanism"] == "rule"
    assert proposer.calls == 2 + 2 + 3
    assert served["requests"] == served["ok"] == 7  # one HTTP request per proposal, nothing retried


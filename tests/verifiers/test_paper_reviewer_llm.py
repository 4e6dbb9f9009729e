"""Single-model paper reviewers through the gateway, litellm and the replay server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json

import pytest

from clients.lent_services import RunServices
from clients.llm_gateway import LLMServices
from tests.adjudication.paper_copies import clean_item, injected_item
from tests.helpers.replay_server import replay_server, server_stats
from verifiers.registry import SystemSpec, build_system
from verifiers.reviewers.llm import FREE_FORM, flags_from_text
from verifiers.system import RunContext

pytestmark = pytest.mark.integration  # a replay server subprocess

STRUCTURED_ANSWER = """## Report
The expansion in the Method section is wrong.

```json
{"issues": [{"quote": "a^2 - 2ab + b^2", "location": "Eq. 1", "type": "math", "description": "sign of the cross term"},
            {"quote": "Total & 130", "location": "Table 1", "type": "numerics", "description": "total is 120"},
            {"quote": null, "type": "style", "description": "the abstract is long"}]}
```"""

FREE_ANSWER = """Summary: a short paper on line ratios.

Major comments:
1. The expansion "F = (a+b)^2 = a^2 - 2ab + b^2" has the wrong sign
   on the cross term.
2. The table total does not add up.

Minor: none."""


def ctx(tmp_path) -> RunContext:
    return RunContext("run-r", "2026-05-05", cache_dir=str(tmp_path / "cache"), services=RunServices("test", "", llm=LLMServices()))


def reviewer(url: str, style: str):
    return build_system(SystemSpec("paper_reviewer_llm", {"model": "openai/replayed-reviewer",
                                                          "api_base": f"{url}/v1", "prompt_style": style}))


def test_structured_review_flags_come_from_the_json_list(tmp_path):
    rules = [{"match": {"contains": "four passes"}, "response": {"text": STRUCTURED_ANSWER, "model_id": "m-1"}}]
    with replay_server(recordings=rules, tmp=tmp_path) as url:
        (out,) = asyncio.run(reviewer(url, "structured").run([injected_item()], ctx(tmp_path)))
    assert out.error is None and out.model_id == "m-1" and out.label is None
    d = out.detail
    assert d["prompt_style"] == "structured" and d["review_text"] == STRUCTURED_ANSWER
    assert d["flags_from"] == "json:fenced"
    assert [(f["flag_id"], f["quote"], f["type"]) for f in d["flags"]] == [
        ("P1/copy-1/f1", "a^2 - 2ab + b^2", "mathematics"), ("P1/copy-1/f2", "Total & 130", "numerics"),
        ("P1/copy-1/f3", None, None)]
    assert d["flags"][0]["location"] == "Eq. 1"


def test_free_form_prompt_is_the_one_sentence_referee_prompt_and_flags_are_read_from_prose(tmp_path):
    rules = [{"match": {"contains": FREE_FORM}, "response": {"text": FREE_ANSWER}}]
    with replay_server(recordings=rules, tmp=tmp_path) as url:
        system = reviewer(url, "free_form")
        assert system.messages(clean_item())[0]["content"].startswith(FREE_FORM + "\n\n--- PAPER")
        (out,) = asyncio.run(system.run([clean_item()], ctx(tmp_path)))
        (again,) = asyncio.run(system.run([clean_item()], ctx(tmp_path)))
        assert server_stats(url)["ok"] == 1  # the second review came from the response cache
    assert again.cache_hits == 1 and again.detail == out.detail
    flags = out.detail["flags"]
    assert len(flags) == 2 and out.detail["flags_from"] == "text"
    assert flags[0]["quote"] == "F = (a+b)^2 = a^2 - 2ab + b^2" and flags[0]["description"].endswith("cross term.")
    assert flags[0]["type"] == "mathematics" and flags[1]["type"] == "numerics"


def test_unanswered_copy_is_a_provider_failure_not_an_empty_review(tmp_path):
    with replay_server(recordings=[], tmp=tmp_path) as url:  # every request is a 404
        (out,) = asyncio.run(reviewer(url, "concise_structured").run([clean_item()], ctx(tmp_path)))
    assert out.error_kind == "provider" and out.detail is None


def test_flags_from_text_joins_continuations_and_stops_at_blank_lines():
    flags = flags_from_text("X/copy-0", "- first point about 'the sample of 120 galaxies'\n  continued\n\nprose\n* second")
    assert [f["description"] for f in flags] == ["first point about 'the sample of 120 galaxies' continued", "second"]
    assert flags[0]["quote"] == "the sample of 120 galaxies" and json.dumps(flags)

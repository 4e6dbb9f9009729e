"""Deterministic judges: one replay server per judge on 127.0.0.1, answering by rule lines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from adjudication.judge import JudgeSpec
from tests.helpers.replay_server import replay_server


def says(contains: str, **answer: Any) -> dict[str, Any]:
    """A rule: requests whose last message contains `contains` get `answer` as JSON."""
    return {"match": {"contains": contains}, "response": {"text": json.dumps(answer)}}


@contextmanager
def judge_servers(tmp: Path, scripts: dict[str, list[dict[str, Any]]]) -> Iterator[dict[str, JudgeSpec]]:
    """One server per judge name; yields JudgeSpecs (family = the name) pointing at them."""
    with ExitStack() as stack:
        specs = {}
        for name, rules in scripts.items():
            url = stack.enter_context(replay_server(recordings=rules, tmp=tmp))
            specs[name] = JudgeSpec(model=f"openai/judge-{name}", family=name, api_base=f"{url}/v1")
        yield specs


class SycophantJudge:
    """A local judge (no server) that always answers "detected" at high confidence and copies its
    evidence from the review it is shown, so the evidence check cannot catch it (issue 21)."""

    def __init__(self, model: str = "local/sycophant") -> None:
        self.spec = JudgeSpec(model=model, family="local")

    async def detection_vote(self, prompt: str, role: str) -> dict[str, Any]:
        from adjudication.judge import vote

        review = prompt.split("REVIEW\n", 1)[1].split("\n\nINJECTED ERROR", 1)[0]
        return vote(self.spec.model, self.spec.family, role, detected=True, confidence=0.99,
                    evidence=review.strip()[:120], reason="the review clearly identifies it")


class StrictJudge:
    """A local judge that never credits a review (only quote matches detect under it)."""

    def __init__(self, model: str = "local/strict") -> None:
        self.spec = JudgeSpec(model=model, family="strict")

    async def detection_vote(self, prompt: str, role: str) -> dict[str, Any]:
        from adjudication.judge import vote

        return vote(self.spec.model, self.spec.family, role, detected=False, confidence=0.95, reason="not named")

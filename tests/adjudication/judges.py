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

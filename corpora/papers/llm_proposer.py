"""The LLM proposer: asks a model, through the gateway, for one atomic edit of a given sub-type.

It is given the copy's full LaTeX (every compiled file, headed by its path), the sub-type's
mechanism block and eligibility filter, the fixed output schema, and the reasons earlier
proposals of this sub-type were rejected; it must answer one JSON object
`{"file", "original", "injected", "rationale"}`. The gateway is injected (`CompletionGateway`:
anything with `async complete(messages, params)` returning an object with `.text`, as
`clients.llm_gateway.LLMGateway` does); corpora never imports clients.

The driver builds that gateway on the run's one `RunServices`, so proposals draw from the run's
budget and cache: a proposal the budget refuses fails its cell like any gateway error, and the driver,
seeing the refusal on the run's budget, stops before the (incomplete) corpus is used (exit 4); the
resubmission replays the paid proposals from the cache, or from the run's storage where they are
exported (`cluster/run_services.py: driver_answers`), and builds the same corpus.
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from corpora.papers.injectors_core import Proposal
from corpora.papers.subtypes import SubType

SEVERITY_WORDS = {"S1": "subtle", "S2": "clear", "S3": "blatant"}
DEFAULT_PARAMS: dict[str, Any] = {"temperature": 0.0, "max_tokens": 1200}


class CompletionResponse(Protocol):
    text: str | None


class CompletionGateway(Protocol):
    async def complete(self, messages: list[dict[str, Any]], params: dict[str, Any] | None = None) -> CompletionResponse: ...


class ProposalParseError(ValueError):
    """The model's answer is not one JSON object of the output schema."""


def parse_proposal(text: str | None) -> Proposal:
    """The proposal in a model answer (the first JSON object; code fences allowed)."""
    if not text:
        raise ProposalParseError("empty answer")
    m = re.search(r"\{.*\}", text, re.S)
    if not m:
        raise ProposalParseError("no JSON object in the answer")
    try:
        data = json.loads(m.group(0))
    except json.JSONDecodeError as exc:
        raise ProposalParseError(f"invalid JSON: {exc}") from exc
    missing = [k for k in ("file", "original", "injected", "rationale") if not isinstance(data.get(k), str)]
    if missing:
        raise ProposalParseError(f"missing or non-string fields: {missing}")
    return Proposal(data["file"], data["original"], data["injected"], data["rationale"])


def build_messages(files: dict[str, str], compiled: list[str], subtype: SubType, output_schema: dict[str, Any],
                   rejected: list[str]) -> list[dict[str, Any]]:  # fmt: skip
    """The chat messages for one proposal."""
    sources = "\n\n".join(f"=== FILE: {rel} ===\n{files[rel]}" for rel in compiled if not rel.endswith(".bib"))
    system = (
        "You inject one controlled error into a scientific paper's LaTeX source, for an audit of AI "
        "peer reviewers. Return a single atomic edit as one JSON object and nothing else."
    )
    user = (
        f"Error type: {subtype.error_type}. Severity: {subtype.severity} ({SEVERITY_WORDS[subtype.severity]}).\n"
        f"Sub-type: {subtype.name}.\nMechanism: {subtype.description}\nEligibility: {subtype.eligibility}\n"
        "Rules: `original` must be copied exactly from one file and occur exactly once in it; `injected` "
        "must differ from it; do not add, remove or alter any citation key; keep the LaTeX compilable.\n"
        f"Output schema (JSON Schema): {json.dumps(output_schema)}\n"
    )
    if rejected:
        user += "Earlier proposals were rejected because: " + "; ".join(rejected) + "\n"
    return [{"role": "system", "content": system}, {"role": "user", "content": user + "\n" + sources}]


class LLMProposer:
    """Proposes edits for LLM sub-types through an injected gateway."""

    def __init__(self, gateway: CompletionGateway, params: dict[str, Any] | None = None) -> None:
        self.gateway = gateway
        self.params = {**DEFAULT_PARAMS, **(params or {})}
        self.calls = 0

    async def propose(self, files: dict[str, str], compiled: list[str], subtype: SubType,
                      output_schema: dict[str, Any], rejected: list[str]) -> Proposal:  # fmt: skip
        """One proposal (raises ProposalParseError when the answer does not fit the schema)."""
        self.calls += 1
        response = await self.gateway.complete(build_messages(files, compiled, subtype, output_schema, rejected), self.params)
        return parse_proposal(response.text)

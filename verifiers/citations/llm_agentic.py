"""An agentic LLM citation verifier: the model may query bibliographic sources before it commits
(reference 000, §5.1 and appendix B.2.4, "multi-source" harness).

Tools, over the sources the run provides (`RunServices.bib_source(name)`: the online clients
bound to the run's limiter, snapshot-scoped cache and outage guard; a plain-dict context may give
`{"bib_sources": {name: BibSource}}`, e.g. the offline index in tests): `resolve_doi(doi)` and one
`search_<source>(query)` per source. At most `max_tool_calls` calls per entry, then one final
turn without tools; a model that still does not commit gets HALLMARK's UNCERTAIN@0.5 (flagged
`cap_exceeded`). A source failure (outage, rate limit after retries) is returned to the model as
an error and recorded as `error` evidence — never as "not found".

Every output records the sources queried, the calls made, the per-source evidence (title match
>= 0.85 similarity, absent, or error) and the label each aggregation rule gives on it; the
`aggregation` argument picks the one reported (appendix D):
`model` (the model's verdict), `consensus` (a HALLUCINATED verdict stands only if no queried
source found the title; a single-source absence is routed to UNCERTAIN), `any_no_match` (flag as
soon as one queried source misses, the harness's emergent disposition).
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any, Literal, get_args

from clients.bib_record import BibRecord
from clients.errors import ClientError, ParseError
from clients.llm_budget import BudgetExhausted
from clients.llm_gateway import LLMGateway
from clients.llm_json import ParseStats
from clients.llm_request import prompt_hash
from clients.source import BibSource
from storage.records import Item, Output
from verifiers.citations.entry import CitationEntry
from verifiers.citations.llm_zero_shot import LLMZeroShotVerifier, read_verdict, render_bibtex
from verifiers.llm_batch import provider_failure
from verifiers.registry import package, system
from verifiers.system import RunContext

SYSTEM_PROMPT = """You are a citation verification expert with access to bibliographic lookup tools.

Your task: determine whether a BibTeX entry is a VALID real publication or a HALLUCINATED (fabricated) citation.

Strategy:
1. Inspect the entry for obvious red flags (fake DOI prefix, future year, placeholder authors).
2. Use tools to cross-reference: resolve the DOI, or search by title/author.
3. After gathering evidence (or after finding sufficient signal), emit your verdict.

When you are ready to give your final answer, output ONLY valid JSON -- no prose, no markdown fences:
{
  "label": "VALID" or "HALLUCINATED",
  "confidence": 0.0 to 1.0,
  "reason": "concise explanation citing the evidence you found"
}

Do NOT output the JSON until you have used enough tools or determined that parametric knowledge is sufficient."""

FINAL_TURN = "You have used all your tool calls. Give your final verdict now as JSON only."
AgenticAggregation = Literal["model", "consensus", "any_no_match"]
AGGREGATIONS: tuple[str, ...] = get_args(AgenticAggregation)
TITLE_MATCH = 0.85


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", " ", text.lower()).strip()


def title_similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, _norm(a), _norm(b)).ratio()


def record_json(record: BibRecord) -> dict[str, Any]:
    """A record as the tools return it: authors, title, venue, year, doi (500 chars each at most)."""
    authors = ", ".join(f"{a.given} {a.family}".strip() for a in record.authors)
    values = {"authors": authors, "title": record.title, "venue": record.venue, "year": record.year, "doi": record.doi}
    return {k: (v[:500] if isinstance(v, str) else v) for k, v in values.items()}


def tool_specs(sources: list[str]) -> list[dict[str, Any]]:
    def fn(name: str, description: str, arg: str) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name, "description": description, "parameters": {
            "type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]}}}  # fmt: skip

    specs = [fn("resolve_doi", "Resolve a DOI to its bibliographic record.", "doi")]
    specs += [fn(f"search_{s}", f"Search {s} by title (and authors); returns up to 5 records.", "query") for s in sources]
    return specs


def aggregate(model_label: str, evidence: dict[str, str]) -> dict[str, str]:
    """The label each aggregation rule gives, from the model's label and per-source evidence."""
    answered = [v for v in evidence.values() if v in ("match", "absent")]
    consensus = model_label
    if model_label == "HALLUCINATED" and "match" in answered:
        consensus = "UNCERTAIN"
    any_no_match = "HALLUCINATED" if "absent" in answered else model_label
    return {"model": model_label, "consensus": consensus, "any_no_match": any_no_match}


#: Without a source to query, "the model found no record" holds for every entry and the verdict rules
#: call all of them HALLUCINATED: a configuration to refuse, not to score.
NO_SOURCES = ("llm_agentic needs at least one bibliographic source (args.sources, or bib_sources provided by the "
              "run); with none, every entry would be judged HALLUCINATED because nothing can be found")


class LLMAgenticVerifier(LLMZeroShotVerifier):
    """Tool-using verifier; shares the gateway, budget and provenance plumbing of zero-shot."""

    def __init__(self, model: str, *, sources: list[str] | None = None, max_tool_calls: int = 5,
                 aggregation: str = "model", **kwargs: Any) -> None:  # fmt: skip
        super().__init__(model, name="llm_agentic", **kwargs)
        if sources is not None and not list(sources):
            raise ValueError(NO_SOURCES)
        if aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {AGGREGATIONS}")
        self.sources = list(sources) if sources else None
        self.max_tool_calls = max_tool_calls
        self.aggregation = aggregation
        self.template_hash = prompt_hash(SYSTEM_PROMPT + FINAL_TURN)
        self.parse_stats = ParseStats()
        self._ctx_sources: dict[str, BibSource] = {}

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        services = ctx.services  # any catalogue source, bound to the run's services, or one it lends
        names = self.sources or list(services.source_names)
        if not names:
            return [Output.failed(i.item_id, NO_SOURCES, "system") for i in items]
        missing = [n for n in names if not services.lends(n)]
        if missing:
            return [Output.failed(i.item_id, f"sources not provided by the run: {missing}", "system") for i in items]
        self._ctx_sources = {n: services.bib_source(n) for n in names}
        return await super().run(items, ctx)

    async def _call_tool(self, name: str, arguments: str, entry: CitationEntry,
                         evidence: dict[str, str], queried: list[str]) -> dict[str, Any]:  # fmt: skip
        try:
            args = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            return {"error": "arguments are not valid JSON"}
        title = entry.fields.get("title", "")
        try:
            if name == "resolve_doi":
                for source_name, source in self._ctx_sources.items():
                    queried.append(source_name)
                    record = await source.lookup_doi(str(args.get("doi", "")))
                    if record is not None:
                        evidence[source_name] = "match" if title_similarity(record.title or "", title) >= TITLE_MATCH else "absent"
                        return {"source": source_name, "record": record_json(record)}
                return {"result": "DOI not found"}
            source_name = name.removeprefix("search_")
            source = self._ctx_sources.get(source_name)
            if source is None:
                return {"error": f"unknown tool {name}"}
            queried.append(source_name)
            records = await source.search_title(str(args.get("query", "")), limit=5)
            best = max((title_similarity(r.title or "", title) for r in records), default=0.0)
            evidence[source_name] = "match" if best >= TITLE_MATCH else ("absent" if evidence.get(source_name) != "match" else "match")
            return {"source": source_name, "records": [record_json(r) for r in records]}
        except ClientError as exc:
            evidence.setdefault(name.removeprefix("search_"), "error")
            return {"error": exc.reason}

    async def verify(self, item: Item, gateway: LLMGateway) -> Output:
        if item.load_error:
            return Output.failed(item.item_id, item.load_error, "input")
        entry = CitationEntry.from_item(item)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"BibTeX entry:\n```bibtex\n{render_bibtex(entry)}\n```"},
        ]
        tools = tool_specs(list(self._ctx_sources))
        evidence: dict[str, str] = {}
        queried: list[str] = []
        totals = {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0, "latency_s": 0.0, "cache_hits": 0}
        priced, calls, model_calls, model_id, text = True, 0, 0, None, None
        try:
            while True:
                final = calls >= self.max_tool_calls
                if final and messages[-1]["role"] == "tool":
                    messages.append({"role": "user", "content": FINAL_TURN})
                response = await gateway.complete(messages, self.params, None if final else tools)
                model_calls += 1
                model_id = response.model_id or model_id
                for k in ("tokens_in", "tokens_out", "latency_s"):
                    totals[k] += getattr(response, k)
                totals["cache_hits"] += int(response.cached)
                if response.cost_usd is None:
                    priced = False
                else:
                    totals["cost_usd"] += response.cost_usd
                if not response.tool_calls or final:
                    text = response.text
                    break
                messages.append(response.assistant_message())
                for call in response.tool_calls:
                    calls += 1
                    result = await self._call_tool(call.name, call.arguments, entry, evidence, queried)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
        except BudgetExhausted:
            raise
        except ClientError as exc:  # an outage is UNCERTAIN-by-outage (retried on resume), else errored
            return provider_failure(item.item_id, exc, self.model, detail={"model_calls": model_calls},
                                    api_sources_queried=sorted(set(queried)), api_calls=calls,
                                    prompt_hash=self.template_hash)  # fmt: skip
        common = {"api_sources_queried": sorted(set(queried)), "api_calls": calls, "model_id": model_id,
                  "prompt_hash": self.template_hash, **totals, "cost_usd": totals["cost_usd"] if priced else None}  # fmt: skip
        detail: dict[str, Any] = {"model_calls": model_calls, "tool_calls": calls, "evidence": evidence,
                                  "max_tool_calls": self.max_tool_calls, "aggregation": self.aggregation, **self.params}  # fmt: skip
        try:
            verdict = read_verdict(text)
        except ParseError as exc:
            if calls >= self.max_tool_calls:  # HALLMARK: cap exceeded without a verdict -> UNCERTAIN@0.5
                self.parse_stats.record("cap_exceeded")
                return Output(item.item_id, label="UNCERTAIN", confidence=0.5, reason="tool-call cap reached without a verdict",
                              detail=detail | {"cap_exceeded": True}, **common)  # fmt: skip
            self.parse_stats.record(None)
            return Output(item.item_id, error=f"parse: {exc.message}", error_kind="parse", detail=detail, **common)
        self.parse_stats.record(verdict.parse_method)
        labels = aggregate(verdict.label, evidence)
        label = labels[self.aggregation]
        confidence = verdict.confidence if label == verdict.label else 0.5
        return Output(item.item_id, label=label, confidence=confidence, reason=verdict.reason,
                      predicted_type=verdict.predicted_type if label == "HALLUCINATED" else None,
                      detail=detail | {"parse_method": verdict.parse_method, "labels_by_rule": labels}, **common)  # fmt: skip


@system("llm_agentic", accepts=("citation",), requires=[package("litellm")],
        description="LLM verifier that may query bibliographic sources up to k times per entry",
        runtime_args=("api_key_env", "price_override"))  # fmt: skip
def build_llm_agentic(model: str, sources: list[str] | None = None, max_tool_calls: int = 5,
                      aggregation: AgenticAggregation = "model", api_base: str | None = None,
                      api_key_env: str | None = None, temperature: float | None = 0.0,
                      seed: int | None = 42, max_tokens: int = 1024,
                      price_override: list[float] | None = None) -> LLMAgenticVerifier:  # fmt: skip
    return LLMAgenticVerifier(model, sources=sources, max_tool_calls=max_tool_calls, aggregation=aggregation,
                              api_base=api_base, api_key_env=api_key_env, temperature=temperature, seed=seed,
                              max_tokens=max_tokens, price_override=tuple(price_override) if price_override else None)  # fmt: skip



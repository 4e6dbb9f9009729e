"""`RunContext.services` is always a `RunServices`: no dict form, no `hasattr` branches."""

from __future__ import annotations

from clients.lent_services import RunServices
from clients.llm_gateway import LLMServices
from verifiers.llm_batch import gateway_from_context
from verifiers.system import RunContext


def test_an_isolated_context_gets_run_services_with_nothing_shared() -> None:
    ctx = RunContext("r1", "2026-05-05")
    assert isinstance(ctx.services, RunServices)
    assert (ctx.services.run_key, ctx.services.snapshot) == ("r1", "2026-05-05")
    assert ctx.services.limiter is None and ctx.services.budget is None and ctx.services.cache_dir is None
    assert not hasattr(ctx.services, "get") and not hasattr(ctx.services, "__getitem__")  # the dict shim is gone


def test_the_gateway_uses_the_runs_llm_services() -> None:
    llm = LLMServices(concurrency=3)
    ctx = RunContext("r1", "2026-05-05", services=RunServices("r1", "2026-05-05", llm=llm))
    assert gateway_from_context(ctx, "openai/x").services is llm


def test_a_lent_source_comes_before_the_catalogues() -> None:
    lent = object()
    services = RunServices("r1", "2026-05-05", lent_sources={"crossref": lent, "memory": lent})
    assert services.bib_source("crossref") is lent and services.bib_source("memory") is lent
    assert services.lends("memory") and services.lends("openalex") and not services.lends("nosuch")

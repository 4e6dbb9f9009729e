"""The vLLM backend's CPU paths (no GPU here): lazy import, GPU placement, request batching.
Generation itself needs a GPU node and `vllm`; it is not exercised in this suite."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from clients.llm_request import LLMRequest
from clients.llm_vllm import MicroBatcher, VllmBackend
from cluster.model_actors import ModelSpec, placement
from tests.helpers.paths import REPO_ROOT


@pytest.mark.integration
def test_gateway_and_backends_import_without_vllm():
    code = ("import sys, clients.llm_gateway, clients.llm_vllm, clients.llm_llamacpp, cluster.model_actors, "
            "verifiers.citations.llm_zero_shot; clients.llm_llamacpp.LlamaCppBackend('m.gguf'); "
            "print('vllm' in sys.modules, 'llama_cpp' in sys.modules, 'xllamacpp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"]  # engines load at first generation


def test_placement_asks_one_gpu_per_tensor_parallel_rank_and_none_for_llama_cpp():
    assert placement(ModelSpec("big", "vllm", {"model": "Qwen/Qwen3-8B", "tensor_parallel_size": 4},
                               accelerator_type="H100")) == {"num_gpus": 4, "num_cpus": 1, "accelerator_type": "H100"}
    assert placement(ModelSpec("small", "llamacpp", {"model_path": "m.gguf", "n_threads": 2})) == {"num_gpus": 0, "num_cpus": 2}
    with pytest.raises(ValueError):
        placement(ModelSpec("x", "tgi", {}))  # type: ignore[arg-type]


def test_micro_batcher_sends_concurrent_requests_as_one_batch_in_order():
    seen: list[list[int]] = []

    def run_batch(batch: list[int]) -> list[int]:
        seen.append(list(batch))
        time.sleep(0.01)
        return [x * 10 for x in batch]

    async def scenario() -> list[int]:
        batcher = MicroBatcher(run_batch, max_batch=8, batch_wait_s=0.05)
        return await asyncio.gather(*(batcher.submit(i) for i in range(20)))

    assert asyncio.run(scenario()) == [i * 10 for i in range(20)]
    assert [len(b) for b in seen] == [8, 8, 4]


def test_engine_failure_reaches_every_caller_of_the_batch():
    def run_batch(batch: list[int]) -> list[int]:
        raise RuntimeError("CUDA out of memory")

    async def scenario() -> list[BaseException | int]:
        batcher = MicroBatcher(run_batch, batch_wait_s=0.01)
        return await asyncio.gather(*(batcher.submit(i) for i in range(3)), return_exceptions=True)

    assert all(isinstance(r, RuntimeError) for r in asyncio.run(scenario()))


@pytest.mark.skipif("vllm" in sys.modules or __import__("importlib").util.find_spec("vllm") is not None,
                    reason="vllm installed: this checks the message shown where it is not")
def test_vllm_backend_without_vllm_says_what_is_missing():
    backend = VllmBackend("Qwen/Qwen3-0.6B", tensor_parallel_size=2)
    assert backend.num_gpus == 2
    with pytest.raises(RuntimeError, match="pip install vllm"):
        asyncio.run(backend.generate(LLMRequest("self/q", [{"role": "user", "content": "hi"}]), timeout=5))

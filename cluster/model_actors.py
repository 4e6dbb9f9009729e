"""Self-hosted open-weights models as Ray actors: one engine per actor, shared by every worker.

A `ModelSpec` names a backend kind (`llamacpp` on CPU nodes, `vllm` on GPU nodes) and its
arguments; `placement(spec)` turns it into Ray resources (vLLM: `num_gpus` = tensor-parallel
size; llama.cpp: CPU threads, no GPU) in one place. `start_model_actor(spec)` creates (or finds)
the named actor and returns an `ActorBackend`, which speaks the gateway's `ModelBackend`
interface: give it to the run as `LLMServices.backends[spec.name]` and configure the system
with model `self/<name>`, exactly like an API model. The actor is async, so concurrent requests
reach the backend together (vLLM batches them; llama.cpp serialises them).

Lifetime: the actor is named `model:<name>:<fingerprint>`, where the fingerprint hashes the spec
and the weights file (size, mtime, sha256 of its first MiB). A job asking for the same spec and
weights finds and shares the running engine; a changed spec or new weights get a new actor, never
the old one. The fingerprint also enters the response cache key (`ActorBackend.fingerprint`), so new
weights never replay old answers. `stop_model_actor` releases an actor when its job ends.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from clients.errors import ClientError, TransientError
from clients.llm_backend import ModelBackend
from clients.llm_request import LLMRequest, LLMResponse

__all__ = ["ActorBackend", "ModelActor", "ModelSpec", "build_backend", "placement", "spec_fingerprint",
           "start_model_actor", "stop_model_actor"]

NAMESPACE = "scrutineer"


@dataclass(frozen=True)
class ModelSpec:
    """One self-hosted model deployment."""

    name: str
    """Backend name; systems reach it as model `self/<name>`."""
    kind: Literal["llamacpp", "vllm"]
    args: dict[str, Any] = field(default_factory=dict)
    """Backend constructor arguments (llamacpp: model_path, n_ctx, n_threads, runtime; vllm: model,
    tensor_parallel_size, engine_args ...)."""
    accelerator_type: str | None = None
    """Ray accelerator label to pin GPU actors to (e.g. `H100`), matching infra/ node groups."""


def _weights_signature(path: str) -> dict[str, Any] | None:
    """Size, mtime and sha256 of the first MiB of a local weights file (None: not a local file,
    e.g. a hub id, which the spec itself names)."""
    file = Path(path).expanduser()
    if not file.is_file():
        return None
    stat = file.stat()
    with file.open("rb") as handle:
        head = hashlib.sha256(handle.read(1 << 20)).hexdigest()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "head_sha256": head}


def spec_fingerprint(spec: ModelSpec) -> str:
    """12 hex digits naming what the engine answers with: kind, arguments, weights file."""
    weights = {k: _weights_signature(str(v)) for k, v in sorted(spec.args.items())
               if k in ("model_path", "model") and isinstance(v, str)}  # fmt: skip
    body = json.dumps({"kind": spec.kind, "args": spec.args, "weights": weights}, sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:12]


def actor_name(spec: ModelSpec, fingerprint: str | None = None) -> str:
    return f"model:{spec.name}:{fingerprint or spec_fingerprint(spec)}"


def placement(spec: ModelSpec) -> dict[str, Any]:
    """Ray actor options for a spec: the one place resources are derived from config."""
    if spec.kind == "vllm":
        options: dict[str, Any] = {"num_gpus": int(spec.args.get("tensor_parallel_size", 1)), "num_cpus": 1}
        if spec.accelerator_type:
            options["accelerator_type"] = spec.accelerator_type
        return options
    if spec.kind == "llamacpp":
        return {"num_gpus": 0, "num_cpus": int(spec.args.get("n_threads") or 1)}
    raise ValueError(f"unknown model backend kind '{spec.kind}' (known: llamacpp, vllm)")


def build_backend(spec: ModelSpec) -> ModelBackend:
    """The backend object a spec names (heavy imports happen at its first generation)."""
    if spec.kind == "llamacpp":
        from clients.llm_llamacpp import LlamaCppBackend

        return LlamaCppBackend(**spec.args)
    if spec.kind == "vllm":
        from clients.llm_vllm import VllmBackend

        return VllmBackend(**spec.args)
    raise ValueError(f"unknown model backend kind '{spec.kind}' (known: llamacpp, vllm)")


class ModelActor:
    """Holds one backend (one engine); plain class so it also runs in-process."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.backend = build_backend(spec)
        self.served = 0

    async def generate(self, request: LLMRequest, timeout: float) -> LLMResponse:
        response = await self.backend.generate(request, timeout)
        self.served += 1
        return response

    async def stats(self) -> dict[str, Any]:
        return {"name": self.spec.name, "kind": self.spec.kind, "served": self.served}


class ActorBackend:
    """`ModelBackend` over a named `ModelActor`. Picklable: ship it to workers in `LLMServices`."""

    def __init__(self, name: str, namespace: str = NAMESPACE, fingerprint: str | None = None) -> None:
        self.name = name
        self.namespace = namespace
        self.fingerprint = fingerprint
        """Spec and weights fingerprint: part of the actor name and of the response cache key."""
        self._handle: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_handle": None}

    def handle(self) -> Any:
        if self._handle is None:
            import ray

            actor = f"model:{self.name}:{self.fingerprint}" if self.fingerprint else f"model:{self.name}"
            self._handle = ray.get_actor(actor, namespace=self.namespace)
        return self._handle

    async def generate(self, request: LLMRequest, timeout: float) -> LLMResponse:
        import ray

        try:
            return await self.handle().generate.remote(request, timeout)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if hasattr(exc, "cause") else None
            if isinstance(cause, ClientError):
                raise cause from None
            raise TransientError(f"model actor '{self.name}' failed: {str(exc)[:300]}", source=self.name) from exc
        except ray.exceptions.RayActorError as exc:
            raise TransientError(f"model actor '{self.name}' is gone: {str(exc)[:200]}", source=self.name) from exc

    async def stats(self) -> dict[str, Any]:
        return await self.handle().stats.remote()


def start_model_actor(spec: ModelSpec, namespace: str = NAMESPACE) -> ActorBackend:
    """Create the actor of this spec and weights (or find it if it runs already: shared on purpose,
    the name carries the fingerprint) and return a backend for it."""
    import ray

    fingerprint = spec_fingerprint(spec)
    ray.remote(ModelActor).options(
        name=actor_name(spec, fingerprint), namespace=namespace, get_if_exists=True, lifetime="detached",
        max_concurrency=64, **placement(spec),
    ).remote(spec)  # fmt: skip
    return ActorBackend(spec.name, namespace, fingerprint)


def stop_model_actor(backend: ActorBackend) -> bool:
    """Release the actor behind `backend` (its GPUs or CPU threads); False when it was gone."""
    import ray

    name = f"model:{backend.name}:{backend.fingerprint}" if backend.fingerprint else f"model:{backend.name}"
    try:
        ray.kill(ray.get_actor(name, namespace=backend.namespace))
    except ValueError:
        return False
    backend._handle = None
    return True

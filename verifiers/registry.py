"""One registry of systems under test: name -> factory, with declared requirements.

Factories are registered with `@system("name", requires=[...])`. A `SystemSpec` (name plus the
factory's keyword arguments) is what a config and a run manifest store; `build_system(spec)`
rebuilds the same system anywhere, e.g. inside a Ray worker. Optional heavy dependencies are
imported inside the factory, so the registry imports with none of them installed.

Run identity (`SystemSpec.config_hash`) hashes the name and the arguments that change answers.
A factory declares the others with `@system(..., runtime_args=(...))`; they are recorded in the
manifest but not hashed, so changing them resumes the run, as does renaming its label:

| system(s)                               | runtime arguments (not hashed)               |
|-----------------------------------------|----------------------------------------------|
| field_match, doi_only, citeintegrity    | max_concurrency, client_options (timeouts, retries, base_urls of mirrors / replay servers) |
| llm_zero_shot, llm_agentic              | api_key_env, price_override                  |
| paper_reviewer_llm                      | api_key_env                                  |
| paper_reviewer_mechanical               | checker_url, workers, timeout_s              |

A model's `api_base` is hashed: a different server may serve different weights. A source's base
URL is not: which answers are replayed is decided by the snapshot scope of the response cache.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from verifiers.system import System

SystemFactory = Callable[..., System]


@dataclass(frozen=True)
class Requirement:
    """Something a system needs to run here: an importable package, an environment variable
    (API key: only its presence is checked, its value is never read into logs) or a reachable URL."""

    kind: Literal["package", "env", "reachable"]
    name: str
    hint: str = ""

    def unmet_reason(self) -> str | None:
        if self.kind == "package":
            if importlib.util.find_spec(self.name) is None:
                return f"missing package '{self.name}'" + (f" ({self.hint})" if self.hint else "")
        elif self.kind == "env":
            if not os.environ.get(self.name):
                return f"environment variable {self.name} is not set" + (f" ({self.hint})" if self.hint else "")
        elif self.kind == "reachable":
            try:
                urllib.request.urlopen(urllib.request.Request(self.name, method="HEAD"), timeout=3)
            except urllib.error.HTTPError:
                return None  # the server answered: reachable
            except OSError as exc:
                return f"{self.name} unreachable ({type(exc).__name__})"
        return None


def package(name: str, hint: str = "") -> Requirement:
    return Requirement("package", name, hint)


def env(name: str, hint: str = "") -> Requirement:
    return Requirement("env", name, hint)


def reachable(url: str, hint: str = "") -> Requirement:
    return Requirement("reachable", url, hint)


@dataclass(frozen=True)
class SystemEntry:
    name: str
    factory: SystemFactory
    requires: tuple[Requirement, ...]
    description: str
    runtime_args: tuple[str, ...] = ()
    """Factory arguments that change how a system runs, never what it answers (concurrency,
    timeouts, service URLs): recorded in the manifest, left out of the config hash."""

    def unavailable_reasons(self) -> list[str]:
        return [r for r in (req.unmet_reason() for req in self.requires) if r]


@dataclass(frozen=True)
class SystemSpec:
    """A system as configured: registry name plus factory arguments. `label` tells two
    configurations of one family apart in reports (defaults to the name)."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    label: str | None = None

    @property
    def display_name(self) -> str:
        return self.label or self.name

    def config_hash(self) -> str:
        """Hash of what changes the answers: the name and the arguments, less the system's declared
        `runtime_args` (not the label either), so raising concurrency or renaming resumes the run."""
        entries = _REGISTRY if self.name in _REGISTRY else registered()
        runtime = set(entries[self.name].runtime_args) if self.name in entries else set()
        args = {k: v for k, v in self.args.items() if k not in runtime}
        canonical = json.dumps({"name": self.name, "args": args}, sort_keys=True, default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "args": self.args, "label": self.label}


_REGISTRY: dict[str, SystemEntry] = {}


def system(
    name: str, *, requires: list[Requirement] | tuple[Requirement, ...] = (), description: str = "",
    runtime_args: tuple[str, ...] = (),
) -> Callable[[SystemFactory], SystemFactory]:
    """Register a system factory under `name`; `runtime_args` names its arguments that do not
    change answers (left out of run identity)."""

    def register(factory: SystemFactory) -> SystemFactory:
        if name in _REGISTRY and _REGISTRY[name].factory is not factory:
            raise ValueError(f"system '{name}' is already registered by {_REGISTRY[name].factory.__module__}")
        doc = description or next(iter((factory.__doc__ or "").strip().splitlines()), "")
        _REGISTRY[name] = SystemEntry(name, factory, tuple(requires), doc, tuple(runtime_args))
        return factory

    return register


def load_plugins(modules: list[str] | tuple[str, ...]) -> None:
    """Import modules that register extra systems (e.g. a project's own verifier)."""
    for module in modules:
        importlib.import_module(module)


def registered() -> dict[str, SystemEntry]:
    _load_builtins()
    return dict(sorted(_REGISTRY.items()))


def get_entry(name: str) -> SystemEntry:
    entries = registered()
    if name not in entries:
        raise KeyError(f"unknown system '{name}'; registered: {', '.join(entries)}")
    return entries[name]


def build_system(spec: SystemSpec, plugins: tuple[str, ...] = ()) -> System:
    """Build the system a spec names. Raises with the reason when it cannot run here."""
    load_plugins(plugins)
    entry = get_entry(spec.name)
    reasons = entry.unavailable_reasons()
    if reasons:
        raise RuntimeError(f"system '{spec.name}' is not available here: {'; '.join(reasons)}")
    return entry.factory(**spec.args)


def _load_builtins() -> None:
    """Import every module of the `verifiers` package once: each registers its own systems, so
    adding a system is adding a module (heavy dependencies stay inside the factories)."""
    import pkgutil

    import verifiers

    for info in pkgutil.iter_modules(verifiers.__path__):
        importlib.import_module(f"verifiers.{info.name}")

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
| review_llm_judge, review_nli            | api_key_env                                  |

An identity argument added after runs were recorded is declared `@system(..., added_args=(...))`
(field_match: `title_strictness`, `year_tolerance`): it is hashed only when set to a value other than
its default, so a config that leaves it out or writes the default keeps its run id.

A model's `api_base` is hashed: a different server may serve different weights. A source's base
URL is not: which answers are replayed is decided by the snapshot scope of the response cache.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from storage import records as storage_records
from storage.registry import Registry
from verifiers.system import System

if TYPE_CHECKING:
    from pydantic import BaseModel

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
            return probe_url(self.name)
        return None


PROBE_TIMEOUT_S = 2.0


@functools.cache
def probe_url(url: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """None when the server at `url` answers (any HTTP status), else why not. Cached per process,
    so a listing of many systems sharing one source probes it once."""
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout_s).close()
    except urllib.error.HTTPError:
        return None  # the server answered: reachable
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return f"{url} unreachable ({type(reason).__name__})"
    return None


def probe_urls(urls: Iterable[str]) -> None:
    """Probe several URLs at once (fills `probe_url`'s cache), so a listing waits one timeout, not n."""
    unique = sorted(set(urls))
    if unique:
        with ThreadPoolExecutor(max_workers=min(8, len(unique))) as pool:
            list(pool.map(probe_url, unique))


def source_urls(names: Iterable[str]) -> dict[str, str]:
    """API root of each named online source in clients/ (unknown names and 'offline_index' skipped)."""
    from clients.source_catalog import SOURCE_CLASSES

    return {n: SOURCE_CLASSES[n].BASE_URL for n in names if isinstance(n, str) and n in SOURCE_CLASSES}


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
    accepts: tuple[str, ...] | None = None
    """The item kinds (storage `Item.kind`: citation | paper_copy | review | a plug-in's) the system
    reads; None: any (a wrapper such as `ensemble`, or a plug-in that declares none)."""
    added_args: tuple[str, ...] = ()
    """Identity arguments added after runs were recorded: left out of the config hash when written
    at their default, so a config that writes the default keeps the run id it had without them."""

    def unhashed_defaults(self) -> dict[str, Any]:
        """`added_args` and their declared defaults."""
        params = inspect.signature(self.factory).parameters
        return {n: params[n].default for n in self.added_args if n in params}

    def kind_problem(self, item_kinds: Iterable[str]) -> str | None:
        """Why this system cannot read items of these kinds (None when it can)."""
        unread = [k for k in item_kinds if self.accepts is not None and k not in self.accepts]
        if not unread:
            return None
        return f"reads {' and '.join(self.accepts or ())} items, not {' and '.join(unread)}"

    def argument_roles(self) -> tuple[list[str], list[str]]:
        """The factory's named arguments split into (identity, runtime): identity ones change the
        answers and enter the run id; runtime ones are recorded in the manifest only. The label
        is never part of the identity."""
        roles = argument_roles(self.arguments_model())
        return [n for n, r in roles.items() if r == "identity"], [n for n, r in roles.items() if r == "runtime"]

    def arguments_model(self) -> type[BaseModel]:
        """The factory's arguments as a typed model (see `arguments_model`)."""
        return arguments_model(self.name, self.factory, self.runtime_args)

    def argument_problems(self, args: dict[str, Any] | None = None) -> list[str]:
        """Arguments the factory would reject: unknown names, required ones not given, and values
        of the wrong type or outside a closed set (checked strictly: "no" is not a bool, "3" not
        an int), each naming the argument."""
        args = args or {}
        params = inspect.signature(self.factory).parameters
        open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        named = {n: p for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        problems = [
            f"unknown argument '{key}' (accepted: {', '.join(named) or 'none'})"
            for key in args
            if key not in named and not open_ended
        ]
        problems += [
            f"missing argument '{n}'"
            for n, p in named.items()
            if p.default is inspect.Parameter.empty and n not in args
        ]
        if not problems:
            problems += _type_problems(self.arguments_model(), args)
        return problems

    def effective_args(self, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """The factory's defaults overlaid with `args`."""
        params = inspect.signature(self.factory).parameters
        defaults = {n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty}
        return {**defaults, **(args or {})}

    def source_problems(self, args: dict[str, Any] | None = None, probe: bool = True) -> list[str]:
        """What the configured bibliographic sources lack: an index file, or a reachable service."""
        effective = self.effective_args(args)
        sources = effective.get("sources")
        if not isinstance(sources, list | tuple):
            return []
        problems = []
        if "offline_index" in sources:
            index_path = effective.get("index_path")
            if not index_path:
                problems.append("source 'offline_index' needs argument 'index_path'")
            elif not str(index_path).startswith("s3://") and not _index_exists(index_path):
                problems.append(f"index_path {index_path} does not exist")
        if probe:
            urls = source_urls(sources)
            probe_urls(urls.values())
            problems += [f"source '{n}': {r}" for n, url in urls.items() if (r := probe_url(url))]
        return problems

    def unavailable_reasons(self, args: dict[str, Any] | None = None, probe: bool = True) -> list[str]:
        """Why this system cannot run here with `args`: packages, keys, arguments, sources."""
        reasons = [r for r in (req.unmet_reason() for req in self.requires if probe or req.kind != "reachable") if r]
        reasons += self.argument_problems(args)
        return reasons + key_problems(args or {}) + self.source_problems(args, probe)


ArgumentRole = Literal["identity", "runtime"]


@functools.cache
def arguments_model(name: str, factory: SystemFactory, runtime_args: tuple[str, ...] = ()) -> type[BaseModel]:
    """A pydantic model of a system factory's named arguments, built from its signature: each
    field has the parameter's annotation and default, and its role (`identity`: hashed into the
    run id; `runtime`: recorded only, as `@system(runtime_args=...)` declares) in
    `json_schema_extra["role"]`. Strict, so a TOML string never passes for a bool or a number;
    an annotation that does not resolve here is left unchecked (Any)."""
    import typing

    from pydantic import ConfigDict, Field, create_model

    try:
        hints = typing.get_type_hints(factory)
    except Exception:  # a name only imported for type checking: check what does resolve
        hints = {}
    fields: dict[str, Any] = {}
    for pname, p in inspect.signature(factory).parameters.items():
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            continue
        role: ArgumentRole = "runtime" if pname in runtime_args else "identity"
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[pname] = (hints.get(pname, Any), Field(default, json_schema_extra={"role": role}))
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(factory).parameters.values())
    config = ConfigDict(strict=True, arbitrary_types_allowed=True, extra="allow" if open_ended else "forbid")
    return create_model(f"{name}_arguments", __config__=config, **fields)


def argument_roles(model: type[BaseModel]) -> dict[str, ArgumentRole]:
    """Each argument of a system's arguments model and its role, in signature order."""
    return {n: (f.json_schema_extra or {}).get("role", "identity") for n, f in model.model_fields.items()}  # type: ignore[union-attr]


def _type_problems(model: type[BaseModel], args: dict[str, Any]) -> list[str]:
    """`args` checked against the arguments model: one line per wrong value, naming the argument."""
    from pydantic import ValidationError

    try:
        model.model_validate(args)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            where = ".".join(str(part) for part in err["loc"])
            top = err["loc"][0] if err["loc"] else None
            given = args.get(top) if isinstance(top, str) else None
            problems.append(f"argument '{where}': {err['msg']} (got {given!r})")
        return problems
    return []


def key_problems(args: dict[str, Any]) -> list[str]:
    """API keys an LLM system's arguments need and the environment lacks (names only, never values)."""
    key_env, model = args.get("api_key_env"), args.get("model")
    if isinstance(key_env, str):
        return [] if os.environ.get(key_env) else [f"environment variable {key_env} (api_key_env) is not set"]
    if not isinstance(model, str) or model.startswith("self/") or args.get("api_base"):
        return []  # self-hosted or a custom endpoint: its key, if any, is the endpoint's business
    if importlib.util.find_spec("litellm") is None:
        return []  # reported as a missing package by the system's requirements
    import litellm  # heavy: only for a run that names a hosted model

    try:
        missing = litellm.validate_environment(model=model).get("missing_keys") or []
    except Exception:  # an unknown provider: litellm will say so when called
        return []
    return [f"model {model} needs environment variable {k}" for k in missing]


@dataclass(frozen=True)
class SystemSpec(storage_records.SystemSpec):
    """`storage.records.SystemSpec` (the data) with what the registry knows: the system's declared
    runtime arguments and the offline index's provenance."""

    def runtime_arg_names(self) -> tuple[str, ...]:
        entry = SYSTEMS.get(self.name, None)
        return entry.runtime_args if entry is not None else ()

    def unhashed_defaults(self) -> dict[str, Any]:
        entry = SYSTEMS.get(self.name, None)
        return entry.unhashed_defaults() if entry is not None else {}

    def provenance(self) -> dict[str, Any]:
        """What answered besides the arguments: the offline index's file, hash, size and dumps."""
        index_path = self.args.get("index_path")
        if not index_path or str(index_path).startswith("s3://"):
            return {}
        from index.offline_index import index_provenance

        return {"index": index_provenance(index_path)}


def _load_builtins() -> None:
    """Import every module of the `verifiers` package and its subpackages (citations/, reviewers/)
    once: each registers its own systems, so adding a system is adding a module (heavy dependencies
    stay inside the factories)."""
    import pkgutil

    import verifiers

    for info in pkgutil.walk_packages(verifiers.__path__, prefix="verifiers."):
        importlib.import_module(info.name)


SYSTEMS: Registry[SystemEntry] = Registry("system", loader=_load_builtins, describe=lambda e: e.description,
                                          known_word="registered")


def _index_exists(index_path: str) -> bool:
    from index.offline_index import resolve_index_path

    return resolve_index_path(index_path).exists()


def system(
    name: str, *, requires: list[Requirement] | tuple[Requirement, ...] = (), description: str = "",
    runtime_args: tuple[str, ...] = (), accepts: tuple[str, ...] | None = None, added_args: tuple[str, ...] = (),
) -> Callable[[SystemFactory], SystemFactory]:
    """Register a system factory under `name`; `runtime_args` names its arguments that do not
    change answers (left out of run identity); `accepts` the item kinds it reads (None: any);
    `added_args` identity arguments added later, hashed only when set to a value other than their
    default (old configs and ones writing the default keep their run ids)."""

    def register(factory: SystemFactory) -> SystemFactory:
        doc = description or next(iter((factory.__doc__ or "").strip().splitlines()), "")
        SYSTEMS.add(name, SystemEntry(name, factory, tuple(requires), doc, tuple(runtime_args),
                                      None if accepts is None else tuple(accepts), tuple(added_args)), lazy=False)
        return factory

    return register


def load_plugins(modules: list[str] | tuple[str, ...]) -> None:
    """Import modules that register extra systems (e.g. a project's own verifier)."""
    for module in modules:
        importlib.import_module(module)


def registered() -> dict[str, SystemEntry]:
    return SYSTEMS.entries()


def get_entry(name: str) -> SystemEntry:
    """The system registered as `name` (raises UnknownName, a KeyError, naming the registered ones)."""
    return SYSTEMS.get(name)


def build_system(spec: SystemSpec, plugins: tuple[str, ...] = ()) -> System:
    """Build the system a spec names. Raises with the reason when it cannot run here."""
    load_plugins(plugins)
    entry = get_entry(spec.name)
    # Sources are not probed here: a worker builds systems once, and an outage must read as
    # UNCERTAIN answers, never as a system that failed to build.
    reasons = [r for r in (q.unmet_reason() for q in entry.requires if q.kind != "reachable") if r]
    reasons += entry.argument_problems(spec.args)
    if reasons:
        raise RuntimeError(f"system '{spec.name}' is not available here: {'; '.join(reasons)}")
    return entry.factory(**spec.args)


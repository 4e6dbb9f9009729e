"""One shape for every name -> thing table: systems, sources, checks, injectors, perturbations.

A `Registry[T]` is a read-only `Mapping[str, T]` (so `reg[name]`, `name in reg`, `reg.items()`
work as on the dicts it replaces) with one way to add and one error for a wrong name:

- `reg.register("name")` decorates a function or class and registers it as is;
  `reg.add("name", entry)` registers any value; `reg.add("name", "module:attr")` registers a lazy
  path, imported on first `get` (so listing names never imports heavy modules).
- `reg.get(name)` / `reg[name]` raise `UnknownName` (a KeyError) naming the known entries.
- `reg.names()` and `reg.entries()` sorted by name; iteration, `keys()`, `items()` in
  registration order, `reg.describe(name)` (first docstring line, or
  what the registry's `describe` says).
- A `loader` (e.g. "import every module of the package") runs once, before the first lookup of
  a name not yet registered and before any listing.

Registering a second, different entry under a taken name raises: two modules must not fight over
a name silently. Registering the same entry again (a module imported twice) is a no-op.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError):
    """A name no entry of a registry carries; the message lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0])


def _module_of(entry: Any) -> str:
    """The module that registered `entry`: its own (a function or class) or its factory's / fn's."""
    for candidate in (getattr(entry, "factory", None), getattr(entry, "fn", None), entry):
        if callable(candidate) and hasattr(candidate, "__qualname__"):
            return getattr(candidate, "__module__", "") or ""
    return ""


class Registry(Mapping[str, T], Generic[T]):
    """Entries of one kind by name (see the module notes)."""

    def __init__(self, kind: str, *, loader: Callable[[], None] | None = None,
                 describe: Callable[[T], str] | None = None, known_word: str = "known") -> None:  # fmt: skip
        self.kind = kind
        self._entries: dict[str, T | str] = {}
        self._lazy: set[str] = set()
        self._loader = loader
        self._loaded = loader is None
        self._describe = describe
        self._known_word = known_word

    # ------------------------------------------------------------ adding
    def add(self, name: str, entry: T | str, *, lazy: bool | None = None) -> None:
        """Register `entry` under `name`; a str "module:attr" is a lazy path unless `lazy=False`."""
        is_lazy = isinstance(entry, str) and ":" in entry if lazy is None else lazy
        if name in self._entries:
            old = self._entries[name]
            if old is entry or old == entry:
                return
            where = _module_of(old)
            raise ValueError(f"{self.kind} '{name}' is already registered" + (f" by {where}" if where else ""))
        self._entries[name] = entry
        if is_lazy:
            self._lazy.add(name)

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register the decorated function or class under `name`, return it unchanged."""

        def wrap(entry: T) -> T:
            self.add(name, entry, lazy=False)
            return entry

        return wrap

    def remove(self, name: str) -> None:
        """Take `name` out (a test's throwaway entry, a plugin unloaded); unknown names are ignored."""
        self._entries.pop(name, None)
        self._lazy.discard(name)

    # ------------------------------------------------------------ reading
    def load(self) -> None:
        """Run the loader once (idempotent)."""
        if not self._loaded:
            self._loaded = True
            assert self._loader is not None
            self._loader()

    def get(self, name: str, default: Any = ...) -> T:  # type: ignore[override]
        if name not in self._entries:
            self.load()
        if name not in self._entries:
            if default is not ...:
                return default
            raise UnknownName(f"unknown {self.kind} '{name}'; {self._known_word}: {', '.join(self.names())}")
        if name in self._lazy:
            module, _, attr = str(self._entries[name]).partition(":")
            self._entries[name] = getattr(importlib.import_module(module), attr)
            self._lazy.discard(name)
        return self._entries[name]  # type: ignore[return-value]

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        if name not in self._entries:
            self.load()
        return name in self._entries

    def names(self) -> list[str]:
        self.load()
        return sorted(self._entries)

    def __iter__(self) -> Iterator[str]:
        """Names in registration order (as the dicts this replaces iterated); `names()` sorts."""
        self.load()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self.load()
        return len(self._entries)

    def entries(self) -> dict[str, T]:
        """Every entry by name, sorted (lazy paths imported)."""
        return {n: self.get(n) for n in self.names()}

    def describe(self, name: str) -> str:
        entry = self.get(name)
        if self._describe is not None:
            return self._describe(entry)
        return next(iter((getattr(entry, "__doc__", None) or "").strip().splitlines()), "")

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._entries)} entries)"


__all__ = ["Registry", "UnknownName"]

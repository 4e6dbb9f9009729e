"""One registry of check kinds: name -> pure function `check_<kind>(payload) -> CheckResult`.

Check modules register with `@check("math.equality", doc=...)`; `run_check(kind, payload)`
dispatches in-process (no limits; see `checkers.sandbox` for the isolated runner). An unknown kind
or a malformed payload becomes an `error` result, never an exception.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from checkers.result import CheckInputError, CheckResult
from storage.registry import Registry

CheckFn = Callable[[dict[str, Any]], CheckResult]

_MODULES = ("checkers.math_checks", "checkers.unit_checks", "checkers.numeric_checks")


@dataclass(frozen=True)
class CheckSpec:
    kind: str
    fn: CheckFn
    doc: str
    """The input format, shown by `jobs/check.py --help`."""


def _load() -> None:
    for name in _MODULES:
        importlib.import_module(name)


CHECKS: Registry[CheckSpec] = Registry("check kind", loader=_load, describe=lambda spec: spec.doc)


def check(kind: str, doc: str) -> Callable[[CheckFn], CheckFn]:
    """Register a check function under `kind`."""

    def wrap(fn: CheckFn) -> CheckFn:
        CHECKS.add(kind, CheckSpec(kind, fn, doc), lazy=False)
        return fn

    return wrap


def registered() -> dict[str, CheckSpec]:
    """All check kinds, loading the check modules on first use."""
    return CHECKS.entries()


def run_check(kind: str, payload: dict[str, Any]) -> CheckResult:
    """Run one check in this process (no time or memory limit)."""
    specs = registered()
    start = time.perf_counter()
    if kind not in specs:
        result = CheckResult(kind, "error", f"unknown check kind {kind!r}; known: {', '.join(specs)}")
    elif not isinstance(payload, dict):
        result = CheckResult(kind, "error", "payload must be a JSON object")
    else:
        try:
            result = specs[kind].fn(payload)
        except CheckInputError as exc:
            result = CheckResult(kind, "error", f"bad input: {exc}")
        except RecursionError:
            result = CheckResult(kind, "inconclusive", "recursion limit hit (expression too deep)")
        except MemoryError:
            result = CheckResult(kind, "inconclusive", "memory limit hit")
        except SystemError as exc:  # what CPython raises when an allocation fails deep inside C code
            result = CheckResult(
                kind, "inconclusive", f"memory limit hit (interpreter SystemError: {str(exc)[:80]})"
            )
        except Exception as exc:  # an engine failure is not a verdict on the statement
            result = CheckResult(
                kind, "inconclusive", f"engine failed: {type(exc).__name__}: {str(exc)[:200]}"
            )
    return replace(result, elapsed_s=round(time.perf_counter() - start, 6))


def request_parts(request: Any) -> tuple[str, dict[str, Any]]:
    """A request is `{"kind": k, "payload": {...}}` or flat `{"kind": k, ...fields}`."""
    if not isinstance(request, dict) or not isinstance(request.get("kind"), str):
        raise CheckInputError("a check request is a JSON object with a string 'kind'")
    if isinstance(request.get("payload"), dict):
        return request["kind"], request["payload"]
    return request["kind"], {k: v for k, v in request.items() if k != "kind"}

"""checkers room (see DESIGN.md): mechanical checks as pure functions, and their Serve app.

`run_check(kind, payload) -> CheckResult` dispatches to the registered `check_<kind>` functions
(math_checks, unit_checks, numeric_checks); `IsolatedRunner` runs them under time and memory
limits; `checkers.service` holds the Ray Serve deployment (imported on demand, it needs Ray).
"""

from checkers.registry import registered, request_parts, run_check
from checkers.result import OUTCOMES, CheckInputError, CheckResult
from checkers.sandbox import IsolatedRunner, Limits

__all__ = [
    "OUTCOMES",
    "CheckInputError",
    "CheckResult",
    "IsolatedRunner",
    "Limits",
    "registered",
    "request_parts",
    "run_check",
]

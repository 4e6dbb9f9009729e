"""Systems under test and their one registry.

Every module of this package registers its own systems with `@system(...)`; `registered()` and
`build_system()` import them all on first use, so adding a system is adding a module.
"""

from verifiers.registry import (
    Requirement,
    SystemSpec,
    build_system,
    get_entry,
    load_plugins,
    registered,
    system,
)
from verifiers.system import RunContext, System

__all__ = [
    "Requirement",
    "RunContext",
    "System",
    "SystemSpec",
    "build_system",
    "get_entry",
    "load_plugins",
    "registered",
    "system",
]

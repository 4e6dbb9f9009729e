"""audits room: one `Audit` per product line (citations, paper_audit, ...), chosen by a run
config's `audit = "..."`. Each runs the same five steps: build corpus -> run systems ->
adjudicate -> score -> publish (see audits/base.py). May import every room below jobs/;
only jobs/, bench/ and tests/ import it.

Adding an audit kind is one module plus one registry line: built-in kinds are a line adding to
`AUDITS` ("module:Class" paths, imported on first use, so `jobs/run_corpus.py --help` stays
instant); a plug-in module named in a config's `plugins` calls `register_audit` when imported.
The kind brings its own config sections, identity and item kinds (audits/base.py); the driver,
`RunConfig` and cluster/ need no edit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from storage.registry import Registry, UnknownName

if TYPE_CHECKING:
    from audits.base import Audit

#: Audit classes by kind; built-in kinds as lazy "module:Class" paths (imported on first use).
AUDITS: Registry[type[Audit]] = Registry("audit kind")
AUDITS.add("citations", "audits.citations:CitationAudit")
AUDITS.add("paper_audit", "audits.papers:PaperAudit")
AUDITS.add("reviews", "audits.reviews:ReviewAudit")


def register_audit(name: str, path: str) -> None:
    """Register a plug-in audit kind as "module:Class" (e.g. from a module a config's `plugins` names);
    a second, different path under a taken name raises ValueError."""
    AUDITS.add(name, path, lazy=True)


class UnknownAudit(KeyError):
    """A config's `audit` names no registered kind."""

    def __str__(self) -> str:
        return str(self.args[0])


def get_audit(name: str) -> Audit:
    """The audit registered as `name`, ready to run (raises UnknownAudit naming the known kinds)."""
    try:
        cls = AUDITS.get(name)
    except UnknownName:
        raise UnknownAudit(f"config field 'audit': unknown audit kind '{name}'; known: {', '.join(AUDITS)}") from None
    return cls()


__all__ = ["AUDITS", "UnknownAudit", "get_audit", "register_audit"]

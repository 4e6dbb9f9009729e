"""What a report states about its run besides the numbers: corpus, snapshot, code revision,
the run ids it covers and each system's status (complete, withheld for a source outage, failed)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SystemStatus:
    status: str
    published: bool = True
    first_error: str | None = None

    @property
    def withheld(self) -> bool:
        return not self.published


@dataclass(frozen=True)
class ReportContext:
    corpus: str = ""
    snapshot: str = ""
    code_revision: str = ""
    run_ids: tuple[str, ...] = ()
    systems: dict[str, SystemStatus] = field(default_factory=dict)

    def status_of(self, system: str) -> SystemStatus | None:
        return self.systems.get(system)

    @property
    def withheld(self) -> list[str]:
        return [name for name, s in self.systems.items() if s.withheld]

    @property
    def completeness(self) -> str:
        """One line: complete, or what is missing and why."""
        if not self.systems:
            return "completeness unknown"
        withheld = self.withheld
        if withheld:
            return f"INCOMPLETE: scores withheld: source outage ({', '.join(withheld)})"
        incomplete = [n for n, s in self.systems.items() if not s.status.startswith("complete")]
        if incomplete:
            return "incomplete: " + "; ".join(f"{n}: {self.systems[n].status}" for n in incomplete)
        return "complete: every system answered every item"

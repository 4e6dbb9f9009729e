"""What a report states about its run besides the numbers: corpus, snapshot, code revision,
the run ids it covers and each system's status (complete, withheld for a source outage, failed)."""

from __future__ import annotations

from dataclasses import dataclass, field

from storage.store import Store


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


def report_context(store: str | Store, run_ids: list[str]) -> ReportContext:
    """What a run's report states besides its numbers (corpus, snapshot, code revision, each
    system's status), read from the stored manifests and scores.json: the same from the run
    that wrote the report and from a later rebuild."""
    st = store if isinstance(store, Store) else Store(store)
    run_ids = sorted(run_ids)
    manifests = [st.read_json(r, "manifest.json") or {} for r in run_ids]
    first = manifests[0] if manifests else {}
    systems = {}
    for run_id, manifest in zip(run_ids, manifests, strict=True):
        scores = st.read_json(run_id, "scores.json") or {}
        label = (manifest.get("system") or {}).get("label") or (manifest.get("system") or {}).get("name") or run_id
        systems[label] = SystemStatus(status=scores.get("status", "unknown"), published=scores.get("published", True),
                                      first_error=scores.get("first_error"))  # fmt: skip
    corpus = first.get("corpus") or {}
    revisions = sorted({str(m.get("code_revision")) for m in manifests if m.get("code_revision")})
    return ReportContext(corpus=f"{corpus.get('name', '?')}@{corpus.get('version', '?')}",
                         snapshot=str(first.get("snapshot", "?")), code_revision=", ".join(revisions) or "unknown",
                         run_ids=tuple(run_ids), systems=systems)  # fmt: skip

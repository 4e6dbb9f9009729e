"""Construction audits of a generated citation corpus: do the labels say what the entries are?

An audit is a named check over the generated entries and the reference list; it returns the
entries that fail, one line each. `AuditReport` collects them (`ok` when every check is empty).
For a HALLMARK-format corpus (`audit_corpus`):

- negatives_differ: every HALLUCINATED entry differs from its source after normalization and is
  not an acceptable rendering of it (a fabrication with no source has a title no real work has);
- no_conflicting_labels: no two entries with the same input (exact, or equal after normalization)
  carry opposite labels;
- valid_is_acceptable: every VALID entry is an acceptable rendering of its source reference;
- taxonomy_consistent: type and tier are the taxonomy's, and every sub-test the type's signature
  fixes has that value.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from corpora.citations.fields import citation_identity, reference_fields
from corpora.citations.formatting import same_citation
from corpora.citations.generator import GeneratedEntry
from corpora.citations.normalization import normalize_text
from corpora.citations.real_reference import Reference
from corpora.citations.taxonomy import Taxonomy


@dataclass
class AuditReport:
    """Failures per named check; a check with no failures passed."""

    checks: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(self.checks.values())

    @property
    def failures(self) -> list[str]:
        """Every failure as 'check: detail'."""
        return [f"{name}: {detail}" for name, details in self.checks.items() for detail in details]

    def summary(self) -> str:
        """One line per check: name, passed or the number of failures."""
        return "\n".join(f"{name}: {'passed' if not d else f'{len(d)} failures'}" for name, d in self.checks.items())


def conflicting_labels(inputs: Iterable[tuple[str, object, str]]) -> list[str]:
    """(id, input key, label) triples -> one line per input key that carries more than one label."""
    labels: dict[object, set[str]] = defaultdict(set)
    ids: dict[object, list[str]] = defaultdict(list)
    for item_id, key, label in inputs:
        labels[key].add(label)
        ids[key].append(item_id)
    return [f"{sorted(ids[k])} share one input but carry labels {sorted(v)}" for k, v in labels.items() if len(v) > 1]


def audit_corpus(entries: list[GeneratedEntry], references: Iterable[Reference], taxonomy: Taxonomy) -> AuditReport:
    """Run the four construction audits over a generated HALLMARK-format corpus."""
    refs = {r.ref_id: r for r in references}
    known_titles = {normalize_text(r.title) for r in refs.values()}
    report = AuditReport({"negatives_differ": [], "no_conflicting_labels": [], "valid_is_acceptable": [], "taxonomy_consistent": []})
    for g in entries:
        e, key = g.entry, g.entry["bibtex_key"]
        source = refs.get(g.source_id) if g.source_id else None
        if g.source_id and source is None:
            report.checks["negatives_differ" if g.label == "HALLUCINATED" else "valid_is_acceptable"].append(
                f"{key}: source '{g.source_id}' not in the reference list"
            )
            continue
        if g.label == "HALLUCINATED":
            if source is None:
                if normalize_text(e["fields"].get("title")) in known_titles:
                    report.checks["negatives_differ"].append(f"{key}: fabricated title is a real work's title")
            elif citation_identity(e["fields"]) == citation_identity(reference_fields(source)) or same_citation(
                e["fields"], source
            ):
                report.checks["negatives_differ"].append(f"{key}: does not differ from its source '{source.ref_id}'")
        elif source is None or not same_citation(e["fields"], source):
            report.checks["valid_is_acceptable"].append(f"{key}: not an acceptable rendering of '{g.source_id}'")
        report.checks["taxonomy_consistent"].extend(_taxonomy_failures(e, taxonomy))
    exact = [(g.entry["bibtex_key"], (g.entry["bibtex_type"], json.dumps(g.entry["fields"], sort_keys=True)), g.label) for g in entries]
    normalized = [(g.entry["bibtex_key"], citation_identity(g.entry["fields"]), g.label) for g in entries]
    report.checks["no_conflicting_labels"] = conflicting_labels(exact) + conflicting_labels(normalized)
    return report


def _taxonomy_failures(entry: dict, taxonomy: Taxonomy) -> list[str]:
    key, type_name = entry["bibtex_key"], entry["hallucination_type"]
    if entry["label"] == "VALID":
        return [] if type_name is None and entry["difficulty_tier"] is None else [f"{key}: VALID entry carries a type or tier"]
    if type_name not in taxonomy:
        return [f"{key}: unknown type {type_name!r}"]
    kind = taxonomy[type_name]
    out = []
    if entry["difficulty_tier"] != kind.tier:
        out.append(f"{key}: tier {entry['difficulty_tier']} but {type_name} is tier {kind.tier}")
    for name, expected in kind.signature.items():
        if name == "doi_resolves" and "doi" not in entry["fields"]:
            expected = None
        if expected is not None and entry["subtests"].get(name) is not expected:
            out.append(f"{key}: sub-test {name}={entry['subtests'].get(name)} but {type_name} expects {expected}")
    return out


__all__ = ["AuditReport", "audit_corpus", "conflicting_labels"]

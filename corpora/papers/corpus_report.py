"""What a paper-audit corpus holds, in numbers a program chair can quote (issue 21).

Papers loaded and failed (no main file, a refused main file: named with their folder and reason),
the `\\input`/`\\include` files that were missing (folder, file, line), copies and injections, the
schedule's cells (4 error types x 3 injected copies per paper) filled by the sub-type drawn, by
another sub-type of the same combination, by a rule stand-in, or skipped, the draws the meaning
and label checks rejected, and the hand-checked validity: of this corpus's injections, how many a
person read and judged valid (`tests/corpora/data/paper_injection_labels.jsonl`, matched by paper,
file and exact before/after text). Printed by `jobs/inject_papers.py` and the paper audit, written
to `corpus_report.json` and the run manifest's corpus entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from corpora.loaded_corpus import LoadedCorpus

HAND_LABELS = Path(__file__).resolve().parents[2] / "tests" / "corpora" / "data" / "paper_injection_labels.jsonl"
"""The project's hand labels of injections on the shared papers (absent from an installed copy: then none)."""


@dataclass(frozen=True)
class HandChecked:
    valid: int
    labelled: int
    injections: int
    """Injections of the labelled papers in this corpus (labelled ones among them: `labelled`)."""
    seed: int | None
    papers: int = 0
    """Labelled papers with injections in this corpus."""
    by_type: dict[str, list[int]] = field(default_factory=dict)
    """Error type -> [valid, labelled]: where the invalid injections are."""


@dataclass
class CorpusReport:
    papers: int = 0
    papers_failed: list[dict[str, Any]] = field(default_factory=list)
    papers_missing_inputs: list[dict[str, Any]] = field(default_factory=list)
    copies: int = 0
    injections: int = 0
    cells: int = 0
    cells_filled_as_drawn: int = 0
    cells_substituted: int = 0
    """Filled by another sub-type of the same type and severity than the one drawn (stand-ins included)."""
    cells_stand_in: int = 0
    cells_skipped: int = 0
    draws_rejected: int = 0
    hand_checked: HandChecked | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        missing_papers = len({m["paper"] for m in self.papers_missing_inputs})
        out = [f"papers: {self.papers} ({len(self.papers_failed)} failed, {missing_papers} with missing input files)",
               f"copies: {self.copies}, injections: {self.injections}",
               f"cells: {self.cells} ({self.cells_filled_as_drawn} as drawn, {self.cells_substituted} by a substitute "
               f"of the same type and severity, {self.cells_stand_in} of those by a rule stand-in, "
               f"{self.cells_skipped} skipped)",
               f"draws rejected by the meaning and label checks (re-drawn): {self.draws_rejected}"]  # fmt: skip
        h = self.hand_checked
        if h is None or not h.labelled:
            out.append("hand-checked validity: none of these injections was hand-labelled")
        else:
            out.append(f"hand-checked validity: {h.valid}/{h.labelled} ({h.valid / h.labelled:.0%}) of the hand-labelled "
                       f"injections valid, {h.papers} papers at seed {h.seed} ({h.injections - h.labelled} injections of "
                       "the labelled papers not labelled)")  # fmt: skip
            if h.by_type:
                out.append("  by error type: " + ", ".join(f"{t} {v}/{n}" for t, (v, n) in sorted(h.by_type.items())))
        for f in self.papers_failed:
            out.append(f"  failed paper {f['paper']} ({f['folder']}): {f['reason']}")
        for m in self.papers_missing_inputs:
            out.append(f"  {m['paper']}: {m['folder']}/{m['file']}:{m['line']}: '{m['missing']}' not found, not loaded")
        return out


def read_labels(path: str | Path) -> list[dict[str, Any]]:
    """Hand labels, one JSON object a line (paper, seed, file, before, after, label, reason); a bad
    line raises naming the file, line and field."""
    rows = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not JSON ({exc.msg})") from exc
        for key in ("paper", "seed", "file", "before", "after", "label", "reason"):
            if key not in row:
                raise ValueError(f"{path}:{n}: no {key!r} field")
        if row["label"] not in ("valid", "invalid"):
            raise ValueError(f"{path}:{n}: label {row['label']!r} (want 'valid' or 'invalid')")
        rows.append(row)
    return rows


def hand_checked(truth_rows: Iterable[dict[str, Any]], labels: list[dict[str, Any]], seed: int | None) -> HandChecked:
    """Of the injections in `truth_rows` on papers with labels at `seed`, those labelled, and valid."""
    at_seed = [r for r in labels if seed is None or r["seed"] == seed]
    by_key = {(r["paper"], r["file"], r["before"], r["after"]): r["label"] for r in at_seed}
    papers = {r["paper"] for r in at_seed}
    valid = labelled = total = 0
    seen: set[str] = set()
    by_type: dict[str, list[int]] = {}
    for row in truth_rows:
        extra = json.loads(row.get("extra_json") or "{}")
        if extra.get("paper_id") not in papers or extra.get("track") == "natural":
            continue
        for inj in extra.get("injections") or []:
            total += 1
            seen.add(extra["paper_id"])
            label = by_key.get((extra["paper_id"], inj["file"], inj["original"], inj["injected"]))
            if label is None:
                continue
            counts = by_type.setdefault(str(inj.get("error_type", "?")), [0, 0])
            counts[0] += label == "valid"
            counts[1] += 1
            labelled += 1
            valid += label == "valid"
    return HandChecked(valid, labelled, total, seed, len(seen), by_type)


def corpus_report(corpus: LoadedCorpus, labels: str | Path | None = None) -> CorpusReport:
    """The report of a built paper-audit corpus (`labels`: hand labels to match its injections against)."""
    summary = corpus.summary or {}
    rows = corpus.truth.to_pylist()
    report = CorpusReport(papers=int(summary.get("papers", 0)), papers_failed=list(summary.get("papers_failed", [])),
                          papers_missing_inputs=list(summary.get("papers_missing_inputs", [])))  # fmt: skip
    for row in rows:
        extra = json.loads(row.get("extra_json") or "{}")
        report.copies += 1
        if extra.get("clean") or extra.get("track") == "natural":
            continue
        injections, skipped = extra.get("injections") or [], extra.get("skipped") or []
        substituted = extra.get("substituted") or []
        report.injections += len(injections)
        report.cells += len(injections) + len(skipped)
        report.cells_skipped += len(skipped)
        report.cells_substituted += len(substituted)
        report.cells_stand_in += sum(1 for s in substituted if s.get("stand_in"))
        report.draws_rejected += int((extra.get("draws") or {}).get("invalid", 0))
    report.cells_filled_as_drawn = report.cells - report.cells_skipped - report.cells_substituted
    if labels is not None and Path(labels).is_file():
        report.hand_checked = hand_checked(rows, read_labels(labels), summary.get("seed"))
    return report

"""The hand-labelled statements of the shared real papers (issue 15), and a runner over them.

`data/real_statements.jsonl` names, per statement: the paper id, the file, an `anchor` (a verbatim
excerpt of the paper, found in the file up to whitespace), the `statement` checked (the anchor
itself unless given: a composed statement says how in `note`), `options` for the check
(definitions taken from the paper's text, domain, functions; `units` for a `kind` of
`units.dimensions`, whose statement goes in as `equation`) and the `expected` outcome read by
hand: `confirmed`, `inconclusive` (the checker cannot decide: unknown functions, sequences,
ambiguous notation), `not-checkable` (a definition, a set, an implication: skipped, inconclusive
or error are all right) or `refuted` (only where the paper itself is wrong; none so far, or for a deliberately broken copy of a
paper's statement, marked `broken_copy`: a changed sign or coefficient, to show that refutations are kept).
The papers are read from the shared data, never copied into the repository.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from storage.latex_comments import blank_comments
from verifiers.reviewers.statements import ContextEntry, Quote, context_for, paper_context, paper_macros

LABELS = Path(__file__).parent / "data" / "real_statements.jsonl"
ACCEPTED = {
    "confirmed": {"confirmed"},
    "inconclusive": {"inconclusive", "skipped"},
    "not-checkable": {"skipped", "inconclusive", "error"},
    "refuted": {"refuted"},
}


def load_labels() -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in LABELS.read_text().splitlines() if line.strip()]
    for n, row in enumerate(rows, 1):
        missing = {"paper", "file", "anchor", "expected"} - row.keys()
        if missing or row["expected"] not in ACCEPTED:
            raise ValueError(
                f"{LABELS.name} line {n}: missing {sorted(missing)} or bad expected {row.get('expected')!r}"
            )
    return rows


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def paper_preamble(paper_dir: Path) -> str:
    """Every .tex file of the paper: its macro definitions are read from all of them."""
    return "\n".join(p.read_text(errors="replace") for p in sorted(paper_dir.rglob("*.tex")))


def paper_context_entries(paper_dir: Path) -> list[ContextEntry]:
    """The paper's equations and prose dependences, read as the mechanical reviewer reads them."""
    texts = {str(p.relative_to(paper_dir)): blank_comments(p.read_text(errors="replace"))
             for p in sorted(paper_dir.rglob("*.tex"))}  # fmt: skip
    return paper_context(texts, paper_macros(texts))


def anchor_span(source: str, anchor: str) -> tuple[int, int]:
    """[start, end) of `anchor` in `source`, whitespace ignored."""
    pattern = r"\s*".join(re.escape(c) for c in _squash(anchor))
    m = re.search(pattern, source)
    return (m.start(), m.end()) if m else (0, 0)


def run_statements(papers: Path, kind: str = "math.statement", run=None) -> list[dict[str, Any]]:
    """Check every labelled statement; rows carry the label, the outcome and the reason."""
    if run is None:
        from checkers.registry import run_check as run
    rows, preambles, contexts = [], {}, {}
    for label in load_labels():
        source = (papers / label["paper"] / label["file"]).read_text(errors="replace")
        if _squash(label["anchor"]) not in _squash(source):
            raise AssertionError(
                f"anchor not found in {label['paper']}/{label['file']}: {label['anchor'][:60]}"
            )
        if label["paper"] not in preambles:
            preambles[label["paper"]] = paper_preamble(papers / label["paper"])
            contexts[label["paper"]] = paper_context_entries(papers / label["paper"])
        text = label.get("statement") or label["anchor"]
        if "kind" in label:  # a check of another kind (units.dimensions): its own payload, whatever `kind` is
            this_kind, payload = label["kind"], {"equation": text, **label.get("options", {})}
        else:
            this_kind, payload = kind, {"statement": text, **label.get("options", {})}
            if kind == "math.statement":
                payload["preamble"] = preambles[label["paper"]]
                # the paper's other equations, as the mechanical reviewer sends them (issue 21)
                # a composed statement (`statement` given) is not the anchor's row: the anchor stays in its context
                own = [] if "statement" in label else [Quote(label["file"], *anchor_span(source, label["anchor"]),
                                                             label["anchor"])]  # fmt: skip
                if context := context_for(text, own, contexts[label["paper"]]):
                    payload["context"] = context
        result = run(this_kind, payload)
        rows.append({**label, "outcome": result.outcome, "reason": result.reason,
                     "agrees": result.outcome in ACCEPTED[label["expected"]]})  # fmt: skip
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    outcomes = Counter(r["outcome"] for r in rows)
    n = len(rows)
    confirmed_labels = [r for r in rows if r["expected"] == "confirmed"]
    return {
        "statements": n,
        "papers": len({r["paper"] for r in rows}),
        "outcomes": dict(sorted(outcomes.items())),
        "error_share": outcomes.get("error", 0) / n,
        "refuted_but_labelled_correct": sum(
            r["outcome"] == "refuted" and r["expected"] != "refuted" for r in rows
        ),
        "confirmed_recall": (
            sum(r["outcome"] == "confirmed" for r in confirmed_labels) / len(confirmed_labels)
            if confirmed_labels
            else None
        ),  # fmt: skip
        "agreement": sum(r["agrees"] for r in rows) / n,
        "by_label": {label: dict(sorted(Counter(r["outcome"] for r in rows if _label(r) == label).items()))
                     for label in sorted({_label(r) for r in rows})},  # fmt: skip
        "broken_copies_refuted": f"{sum(r['outcome'] == 'refuted' for r in rows if r.get('broken_copy'))}"
                                 f"/{sum(1 for r in rows if r.get('broken_copy'))}",
    }


def _label(row: dict[str, Any]) -> str:
    return "refuted (broken copy)" if row.get("broken_copy") else row["expected"]


def table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'paper':<28} {'expected':<14} {'outcome':<13} reason"]
    for r in rows:
        mark = "" if r["agrees"] else "  <-- differs from label"
        lines.append(f"{r['paper']:<28} {r['expected']:<14} {r['outcome']:<13} {r['reason'][:70]}{mark}")
    return "\n".join(lines)

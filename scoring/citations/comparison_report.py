"""`RunComparison` as a Markdown document, one self-contained HTML file and a CSV of the changed items."""

from __future__ import annotations

import csv
import html
import io
import math
from typing import Any

from scoring.citations.run_comparison import CHANGE_KINDS, RunComparison


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def _p(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def sections(c: RunComparison) -> list[tuple[str, list[str] | tuple[list[str], list[list[str]]]]]:
    """(heading, paragraphs or (head, rows)) in order."""
    a, b = c.before, c.after
    out: list[tuple[str, Any]] = []
    facts = [f"before: {a.run_id} ({a.system.label}, snapshot {a.snapshot}, code {a.code.label}, {a.outcome.status})",
             f"after: {b.run_id} ({b.system.label}, snapshot {b.snapshot}, code {b.code.label}, {b.outcome.status})",
             f"corpus: {a.corpus.name}@{a.corpus.version}; {c.shared} items answered by both, {c.only_before} only "
             f"before, {c.only_after} only after", *c.notes]  # fmt: skip
    out.append(("Runs", facts))
    diff_rows = [[k, _f(x), _f(y)] for k, x, y in c.differences]
    diff_rows += [[f"outputs.{k}", ", ".join(x) or "(none)", ", ".join(y) or "(none)"]
                  for k, (x, y) in c.provenance.items() if x != y]  # fmt: skip
    out.append(("What differs", (["field", "before", "after"], diff_rows) if diff_rows
                else ["nothing recorded differs: any change is nondeterminism"]))  # fmt: skip
    kinds = list(CHANGE_KINDS)
    out.append(("Changes by stratum", (["stratum", "n", *kinds],
                                       [[r["stratum"], str(r["n"]), *[str(r[k]) for k in kinds]] for r in c.counts])))
    stats: list[str] = []
    if c.mcnemar is not None:
        m = c.mcnemar
        stats.append(f"McNemar exact test on right/wrong: {m.fixed} fixed, {m.broken} broken, p = {_p(m.p_value)}")
    if stats or c.paired:
        head = ["metric", "before", "after", "after - before", "95% CI", "p (two-sided)"]
        rows = [[r.metric, _f(r.value_b), _f(r.value_a), f"{r.diff:+.3f}", f"[{_f(r.diff_ci[0])}, {_f(r.diff_ci[1])}]",
                 _p(r.p_two_sided)] for r in c.paired]  # fmt: skip
        out.append(("Paired statistics", stats))
        if rows:
            out.append(("Metric differences (paired bootstrap)", (head, rows)))
    head = ["item", "truth", "type", "tier", "before", "after", "conf before", "conf after", "change", "attributed to"]
    rows = [[x.item_id, x.truth or "", x.hallucination_type or "", _f(x.tier), x.label_before, x.label_after,
             _f(x.confidence_before, 2), _f(x.confidence_after, 2), x.change, x.attributed_to] for x in c.changes]
    out.append(("Changed items", (head, rows) if rows else ["no item changed"]))
    if c.injections:
        out.append(("Injections detected before, not after (and back)",
                    (["item", "injection", "error type", "before", "after", "change"],
                     [[i.item_id, i.unit_id, i.error_type or "", i.before, i.after, i.change] for i in c.injections])))
    return out


def title_of(c: RunComparison) -> str:
    return f"What flipped: {c.before.system.label} ({c.before.snapshot}) -> {c.after.system.label} ({c.after.snapshot})"


def to_markdown(c: RunComparison) -> str:
    parts = [f"# {title_of(c)}", ""]
    for heading, content in sections(c):
        parts += [f"## {heading}", ""]
        if isinstance(content, tuple):
            head, body = content
            parts += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            parts += ["| " + " | ".join(x.replace("|", "\\|") for x in row) + " |" for row in body]
        else:
            parts += [f"- {line}" for line in content]
        parts.append("")
    return "\n".join(parts)


def to_html(c: RunComparison) -> str:
    esc = html.escape
    body = [f"<h1>{esc(title_of(c))}</h1>"]
    for heading, content in sections(c):
        body.append(f"<h2>{esc(heading)}</h2>")
        if isinstance(content, tuple):
            head, rows = content
            body.append("<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"
                        + "".join("<tr>" + "".join(f"<td>{esc(x)}</td>" for x in r) + "</tr>" for r in rows)
                        + "</tbody></table>")  # fmt: skip
        else:
            body.append("<ul>" + "".join(f"<li>{esc(x)}</li>" for x in content) + "</ul>")
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1em}"
             "td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title_of(c))}</title>"
            f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")


def changes_csv(c: RunComparison) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["item_id", "truth", "hallucination_type", "tier", "label_before", "label_after", "confidence_before",
                "confidence_after", "change", "attributed_to"])
    for x in c.changes:
        w.writerow([x.item_id, x.truth, x.hallucination_type, x.tier, x.label_before, x.label_after,
                    x.confidence_before, x.confidence_after, x.change, x.attributed_to])
    return buf.getvalue()

"""`RunComparison` as a Markdown document, one self-contained HTML file (both from the one page writer,
scoring/report_pages.py: provenance of both runs, glossary) and a CSV of the changed items."""

from __future__ import annotations

import csv
import io
import math
from typing import Any

from scoring.citations.run_comparison import CHANGE_KINDS, RunComparison
from scoring.report_context import ReportContext, SystemStatus
from scoring.report_pages import ReportPage, Section, difference_text, p_value_text
from scoring.report_pages import to_html as page_html
from scoring.report_pages import to_markdown as page_markdown


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)




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
        stats.append(f"McNemar exact test on right/wrong: {m.fixed} fixed, {m.broken} broken, p = {p_value_text(m.p_value)}")
    if stats or c.paired:
        head = ["metric", "before", "after", "after - before", "95% CI", "p (two-sided)"]
        rows = [[r.metric, _f(r.value_b), _f(r.value_a), *difference_text(r.diff, *r.diff_ci),
                 p_value_text(r.p_two_sided)] for r in c.paired]  # fmt: skip
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


GLOSSARY = (
    ("fixed", "wrong before (or undecided), right after: the stated label now equals the truth."),
    ("broken", "right before, wrong (or undecided) after."),
    ("label changed", "the label moved between two answers that are both not right (e.g. HALLUCINATED -> UNCERTAIN)."),
    ("confidence only", "same label, another stated confidence."),
    ("attributed to", "what differs between the runs that explains the change: the item's own provenance (model id, "
                      "prompt hash the provider returned) first, else the first recorded difference of the runs."),
    ("McNemar exact test", "two-sided binomial test of fixed against broken items (the items that changed "
                           "right/wrong): a small p says the change is not noise."),
    ("paired bootstrap", "95% interval of after - before of a metric, resampling the shared items together."),
    ("DR / FPR / MCC", "detection rate (hallucinated flagged), false-positive rate (valid flagged), Matthews "
                       "correlation with truth (0 = chance)."),
)


def context_of(c: RunComparison) -> ReportContext:
    """Both runs' provenance on one page: corpus, the two snapshots and code revisions, their statuses."""
    a, b = c.before, c.after
    pair = lambda x, y: x if x == y else f"{x} -> {y}"  # noqa: E731
    return ReportContext(corpus=pair(f"{a.corpus.name}@{a.corpus.version}", f"{b.corpus.name}@{b.corpus.version}"),
                         snapshot=pair(str(a.snapshot), str(b.snapshot)), code_revision=pair(a.code.label, b.code.label),
                         run_ids=(a.run_id, b.run_id),
                         systems={f"before ({a.system.label})": SystemStatus(a.outcome.status),
                                  f"after ({b.system.label})": SystemStatus(b.outcome.status)})  # fmt: skip


def page_of(c: RunComparison) -> ReportPage:
    out = []
    for heading, content in sections(c):
        out.append(Section(heading, table=content) if isinstance(content, tuple) else Section(heading, lines=content))
    return ReportPage(title_of(c), context_of(c), "", out, GLOSSARY)


def to_markdown(c: RunComparison) -> str:
    return page_markdown(page_of(c))


def to_html(c: RunComparison) -> str:
    return page_html(page_of(c))


def changes_csv(c: RunComparison) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["item_id", "truth", "hallucination_type", "tier", "label_before", "label_after", "confidence_before",
                "confidence_after", "change", "attributed_to"])
    for x in c.changes:
        w.writerow([x.item_id, x.truth, x.hallucination_type, x.tier, x.label_before, x.label_after,
                    x.confidence_before, x.confidence_after, x.change, x.attributed_to])
    return buf.getvalue()

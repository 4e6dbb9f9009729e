"""The one writer of every report page (citations, papers, reviews, run comparisons): a Markdown
file and one self-contained HTML file with the same content, plus the metric rows as CSV.

Every page opens with its provenance (corpus, snapshot, code revision, run ids, completeness:
`scoring.report_context.ReportContext`), then an optional warning (AUDIT INVALID), the intro, one
heading + note + table (or lines) per section, the figures and a glossary of the metrics shown.
The HTML embeds its figures as `data:` URIs, so it renders anywhere, MLflow's artifact viewer
included (a relative `<img src="x.png">` is broken there); the Markdown, a separate file, links
them by relative path. An interval over fewer than `SMALL_N` units is marked `SMALL_N_MARK` and
its section says why it means little.
"""

from __future__ import annotations

import base64
import csv
import html
import math
import mimetypes
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scoring.report_context import ReportContext

Table = tuple[list[str], list[list[str]]]
"""A header and its rows, every cell already formatted."""

Glossary = Sequence[tuple[str, str]]

SMALL_N = 10
"""Below this many units (papers, entries, flags) a 95% interval says little: the cell is marked."""
SMALL_N_MARK = "†"
SMALL_N_NOTE = (f"{SMALL_N_MARK} n < {SMALL_N}: too few units for the 95% interval to mean much; read the count, "
                "not the interval.")  # fmt: skip

STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}table{border-collapse:collapse;"
         "font-size:13px;margin-bottom:1em}td,th{border:1px solid #ccc;padding:3px 6px}img{max-width:100%}"
         ".alert{background:#fde2e1;border:1px solid #c0392b;padding:8px;font-weight:bold}"
         ".facts{color:#333}dt{font-weight:bold;margin-top:4px}")  # fmt: skip


@dataclass(frozen=True)
class Section:
    """A heading, a note under it, then a table or lines (alert lines render as warnings)."""

    heading: str
    note: str = ""
    table: Table | None = None
    lines: Sequence[str] = ()
    alert: bool = False


@dataclass(frozen=True)
class Figure:
    path: Path
    caption: str


@dataclass(frozen=True)
class ReportPage:
    title: str
    context: ReportContext | None
    intro: str
    sections: Sequence[Section]
    glossary: Glossary
    figures: Sequence[Figure] = ()
    warning: str | None = None
    extra_facts: Sequence[str] = field(default_factory=tuple)


def with_interval(value: float | None, low: float | None, high: float | None, n: int | None, *,
                  digits: int = 3, ci_digits: int | None = None) -> str:  # fmt: skip
    """`value [low, high]`; n/a for an undefined value; marked when n is too small for the interval."""
    if value is None or not math.isfinite(value):
        return "n/a"
    text = f"{value:.{digits}f}"
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        d = digits if ci_digits is None else ci_digits
        text += f" [{low:.{d}f}, {high:.{d}f}]"
        if n is not None and n < SMALL_N:
            text += f" {SMALL_N_MARK}"
    return text


NOT_APPLICABLE = "not applicable"
"""A comparison with no defined difference (a metric undefined for one side): not a test, no p-value."""


def _defined(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def p_value_text(p: float | None) -> str:
    """A p-value as printed: `< 0.001` below it (never `0.000`), not applicable when undefined."""
    if not _defined(p):
        return NOT_APPLICABLE
    assert p is not None
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def difference_text(diff: float | None, low: float | None = None, high: float | None = None) -> tuple[str, str]:
    """(signed difference, `[low, high]`) as printed; not applicable (never `+nan`) when undefined."""
    if not _defined(diff):
        return NOT_APPLICABLE, NOT_APPLICABLE
    interval = f"[{low:.3f}, {high:.3f}]" if _defined(low) and _defined(high) else "[n/a, n/a]"
    return f"{diff:+.3f}", interval


def provenance(context: ReportContext | None) -> list[str]:
    """The run facts every page states; unknown ones say so rather than vanish."""
    c = context or ReportContext()
    return [f"corpus: {c.corpus or 'unknown'}", f"snapshot: {c.snapshot or 'unknown'}",
            f"code revision: {c.code_revision or 'unknown'}", f"runs: {', '.join(c.run_ids) or 'unknown'}",
            c.completeness]  # fmt: skip


def _alerts(page: ReportPage) -> list[str]:
    """What must be read first: a withheld run's completeness, an invalid audit."""
    out = [page.context.completeness] if page.context is not None and page.context.withheld else []
    return out + ([page.warning] if page.warning else [])


def _facts(page: ReportPage) -> list[str]:
    alerts = _alerts(page)
    return [f for f in provenance(page.context) if f not in alerts] + list(page.extra_facts)


def _small_n(section: Section) -> bool:
    return section.table is not None and any(SMALL_N_MARK in cell for row in section.table[1] for cell in row)


def _note(section: Section) -> str:
    return " ".join(x for x in (section.note, SMALL_N_NOTE if _small_n(section) else "") if x)


def md_table(t: Table) -> str:
    head, body = t
    if not body:
        return "_no data_\n"
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
    return "\n".join(lines) + "\n"


def html_table(t: Table) -> str:
    head, body = t
    if not body:
        return "<p><em>no data</em></p>"
    h = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    b = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in body)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{b}</tbody></table>"


def data_uri(path: Path) -> str:
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def to_markdown(page: ReportPage) -> str:
    md = [f"# {page.title}", ""]
    md += [line for a in _alerts(page) for line in (f"**{a}**", "")]
    md += [f"- {f}" for f in _facts(page)] + [""]
    if page.intro:
        md += [page.intro, ""]
    for s in page.sections:
        md += [f"## {s.heading}", ""]
        if note := _note(s):
            md += [note, ""]
        if s.table is not None:
            md.append(md_table(s.table))
        if s.lines:
            md += [f"- {x}" for x in s.lines] + [""]
    if page.figures:
        md += ["## Figures", ""]
        md += [f"![{f.caption}]({f.path.name})\n" for f in page.figures]
    md += ["## Glossary", ""] + [f"- **{k}**: {v}" for k, v in page.glossary] + [""]
    return "\n".join(md)


def to_html(page: ReportPage) -> str:
    esc = html.escape
    body = [f"<h1>{esc(page.title)}</h1>"]
    body += [f"<p class='alert'>{esc(a)}</p>" for a in _alerts(page)]
    body.append("<ul class='facts'>" + "".join(f"<li>{esc(f)}</li>" for f in _facts(page)) + "</ul>")
    if page.intro:
        body.append(f"<p>{esc(page.intro)}</p>")
    for s in page.sections:
        body.append(f"<h2>{esc(s.heading)}</h2>")
        if note := _note(s):
            body.append(f"<p>{esc(note)}</p>")
        if s.table is not None:
            body.append(html_table(s.table))
        if s.lines and s.alert:
            body += [f"<p class='alert'>{esc(x)}</p>" for x in s.lines]
        elif s.lines:
            body.append("<ul>" + "".join(f"<li>{esc(x)}</li>" for x in s.lines) + "</ul>")
    if page.figures:
        body.append("<h2>Figures</h2>")
    for f in page.figures:  # embedded: a relative src is broken in MLflow's artifact viewer
        body.append(f"<figure><img src='{data_uri(f.path)}' alt='{esc(f.caption)}'>"
                    f"<figcaption>{esc(f.caption)}</figcaption></figure>")  # fmt: skip
    body.append("<h2>Glossary</h2><dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in page.glossary)
                + "</dl>")  # fmt: skip
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(page.title)}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")


def write_page(out: Path, stem: str, page: ReportPage) -> tuple[Path, Path]:
    """`<stem>.md` and `<stem>.html` under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    md_path, html_path = out / f"{stem}.md", out / f"{stem}.html"
    md_path.write_text(to_markdown(page), encoding="utf-8")
    html_path.write_text(to_html(page), encoding="utf-8")
    return md_path, html_path


def write_metrics_csv(path: Path, rows: list[dict[str, Any]], names: Sequence[str]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(names), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


__all__ = ["SMALL_N", "SMALL_N_MARK", "SMALL_N_NOTE", "STYLE", "Figure", "Glossary", "ReportPage", "Section", "Table",
           "data_uri", "html_table", "md_table", "provenance", "to_html", "to_markdown", "with_interval", "write_metrics_csv",
           "write_page"]

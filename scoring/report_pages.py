"""One way to write an audit's report pages: Markdown and a self-contained-style HTML page with the
same sections (title, an optional warning, an intro, tables with notes, figures), plus the metric
rows as CSV. The paper and review audits' reports are built from this."""

from __future__ import annotations

import csv
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Table = tuple[list[str], list[list[str]]]
"""A header and its rows, every cell already formatted."""

STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse;"
         "font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px}img{max-width:100%}")


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


def write_pages(out: Path, stem: str, *, title: str, intro: str, sections: Sequence[tuple[str, str, Table]],
                figures: Sequence[Path], warning: str | None = None) -> tuple[Path, Path]:
    """`<stem>.md` and `<stem>.html` under `out`: the title, the warning in bold (e.g. AUDIT INVALID),
    the intro, one heading + note + table per section, then the figures."""
    md = [f"# {title}\n"] + ([f"**{warning}**\n"] if warning else []) + [intro + "\n"]
    body = [f"<h1>{html.escape(title)}</h1>"]
    body += [f"<p><strong>{html.escape(warning)}</strong></p>"] if warning else []
    body.append(f"<p>{html.escape(intro)}</p>")
    for name, note, t in sections:
        md += [f"## {name}\n", note + "\n", md_table(t)]
        body += [f"<h2>{html.escape(name)}</h2>", f"<p>{html.escape(note)}</p>", html_table(t)]
    md.append("## Figures\n")
    body.append("<h2>Figures</h2>")
    for f in figures:
        md.append(f"![{f.stem}]({f.name})\n")
        body.append(f'<p><img src="{html.escape(f.name)}" alt="{html.escape(f.stem)}"></p>')
    md_path, html_path = out / f"{stem}.md", out / f"{stem}.html"
    md_path.write_text("\n".join(md), encoding="utf-8")
    html_path.write_text(f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
                         f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>", encoding="utf-8")
    return md_path, html_path


def write_metrics_csv(path: Path, rows: list[dict[str, Any]], names: Sequence[str]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(names), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


__all__ = ["STYLE", "Table", "html_table", "md_table", "write_metrics_csv", "write_pages"]

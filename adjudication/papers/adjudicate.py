"""Adjudicate a paper-audit run: reviewer outputs + items + truth -> a VERDICT_SCHEMA table.

    from adjudication.papers.adjudicate import PaperAdjudicationConfig, adjudicate_paper_run
    verdicts = adjudicate_paper_run(items, truth, outputs, PaperAdjudicationConfig(
        panel=["openai/gpt-x", "anthropic/claude-y", "gemini/gemini-z"], escalation="anthropic/claude-y"))

Injected copies (truth `clean` false) go through detection matching (`adjudication.papers.detection`),
one row per (reviewer output, injection; a natural-error copy's rows say `track: "natural"` in
their detail); clean copies through false-positive adjudication
(`adjudication.papers.false_positive`), one row per flag. Each output row's own `run_id` and `system`
go onto its verdicts, so one call can take the outputs of several reviewers. An output whose copy
has no truth or no item is an error (a coverage problem the caller must see), not a skip.

`adjudicate_calibrated` is what an audit runs (issue 21): the controls first, with every judge;
judges that credit a control (`adjudication.papers.calibration`) are then excluded from the
verdicts of every reviewer and of the controls (their votes recorded, not counted).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from adjudication.check_runner import CheckRunner, LocalChecks, ServiceChecks
from adjudication.judge import Judge, JudgeSpec
from adjudication.papers.calibration import uncalibrated_judges
from adjudication.papers.controls import control_cases
from adjudication.papers.detection import DetectionMatcher
from adjudication.papers.false_positive import FalsePositiveAdjudicator
from clients.llm_gateway import LLMServices
from storage.outages import outage_sources
from storage.schemas import VERDICT_SCHEMA, table_from_rows

__all__ = ["PaperAdjudicationConfig", "adjudicate_calibrated", "adjudicate_paper_controls", "adjudicate_paper_run",
           "adjudicate_paper_run_async"]

JudgeLike = JudgeSpec | str | dict[str, Any]


@dataclass
class PaperAdjudicationConfig:
    """Who judges what. Judges are `JudgeSpec`s, model strings or dicts of JudgeSpec fields."""

    panel: list[JudgeLike]
    """Detection-matching panel (cross-family in the paper: three judges)."""
    escalation: JudgeLike | None = None
    """The one judge that gets the full paper when the panel is split or unsure (None: no escalation)."""
    low_confidence: float = 0.7
    """A majority whose mean confidence is below this escalates."""
    fp_panel: list[JudgeLike] | None = None
    """General-issues false-positive panel (defaults to `panel`)."""
    citation_panel: list[JudgeLike] | None = None
    """Citation false-positive panel (defaults to the FP panel)."""
    typer: JudgeLike | None = None
    """Judge that decides whether a clean-copy flag is clear and types it (None: every flag is clear)."""
    check_builder: JudgeLike | None = None
    """Judge that turns a numerics/mathematics flag into a check (None: only flags carrying a check)."""
    checker_url: str | None = None
    """Checker service URL; None runs checks in a local sandbox pool."""
    checker_workers: int = 1
    cited_texts_dir: str | None = None
    """Directory of `<bibkey>.txt` files: cited works' text for the citation panel."""
    concurrency: int = 8
    """(copy, reviewer) pairs adjudicated at once."""
    uncalibrated: frozenset[str] = frozenset()
    """Detection judges (model names) whose votes are recorded but not counted (judge calibration)."""
    extra: dict[str, Any] = field(default_factory=dict)


def _judges(specs: list[JudgeLike] | None, services: LLMServices, cache_dir: str | None) -> list[Judge]:
    # an object that already votes (a local judge) is used as it is
    return [s if hasattr(s, "detection_vote") else Judge(JudgeSpec.parse(s), services, cache_dir) for s in specs or []]


def _cited_texts(directory: str | None) -> dict[str, str]:
    if not directory:
        return {}
    return {p.stem: p.read_text(encoding="utf-8", errors="replace") for p in sorted(Path(directory).glob("*.txt"))}


def _rows(table: pa.Table | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return table.to_pylist() if isinstance(table, pa.Table) else list(table)


async def adjudicate_paper_run_async(items: pa.Table | list[dict[str, Any]], truth: pa.Table | list[dict[str, Any]],
                                     outputs: pa.Table | list[dict[str, Any]], config: PaperAdjudicationConfig, *,
                                     services: LLMServices | None = None, cache_dir: str | None = None,
                                     checks: CheckRunner | None = None) -> pa.Table:  # fmt: skip
    """See the module docstring. `checks` overrides the checker chosen by the config."""
    services = services or LLMServices()
    own_checks = checks is None
    checks = checks or (ServiceChecks(config.checker_url) if config.checker_url else LocalChecks(config.checker_workers))
    panel = _judges(config.panel, services, cache_dir)
    escalation = _judges([config.escalation], services, cache_dir)[0] if config.escalation else None
    fp_panel = _judges(config.fp_panel, services, cache_dir) or panel
    detection = DetectionMatcher(panel, escalation, config.low_confidence, uncalibrated=config.uncalibrated)
    fp = FalsePositiveAdjudicator(
        general_panel=fp_panel, checks=checks, citation_panel=_judges(config.citation_panel, services, cache_dir) or None,
        typer=_judges([config.typer], services, cache_dir)[0] if config.typer else None,
        check_builder=_judges([config.check_builder], services, cache_dir)[0] if config.check_builder else None,
        cited_texts=_cited_texts(config.cited_texts_dir))  # fmt: skip
    payloads = {r["item_id"]: json.loads(r["payload_json"] or "{}") for r in _rows(items)}
    truths = {r["item_id"]: json.loads(r["extra_json"] or "{}") for r in _rows(truth)}
    slots = asyncio.Semaphore(config.concurrency)

    async def one(output: dict[str, Any]) -> list[dict[str, Any]]:
        item_id = output["item_id"]
        if item_id not in truths or item_id not in payloads:
            raise KeyError(f"output for {item_id} has no {'truth' if item_id not in truths else 'item'} row")
        t, payload = truths[item_id], payloads[item_id]
        if down := outage_sources(output.get("detail_json")):  # no review was made: unscored, never "missed"
            output = {**output, "error": f"no review: {', '.join(down)} unavailable (retried on resubmission)"}
        files, main = payload.get("files") or {}, payload.get("main_file") or "main.tex"
        async with slots:
            adjudicator = fp if t.get("clean") else detection
            rows = await adjudicator.adjudicate(output, t, files, main)
        if t.get("track"):  # issue 15: natural errata are scored as their own track, beside the injected one
            for r in rows:
                r["detail_json"] = json.dumps(json.loads(r.get("detail_json") or "{}") | {"track": t["track"]},
                                              ensure_ascii=False)  # fmt: skip
        return [{"run_id": output["run_id"], "system": output["system"], **r} for r in rows]

    try:
        per_output = await asyncio.gather(*(one(o) for o in _rows(outputs)))
    finally:
        if own_checks:
            checks.close()  # type: ignore[attr-defined]
    return table_from_rows([r for rows in per_output for r in rows], VERDICT_SCHEMA)


def adjudicate_paper_run(items: pa.Table | list[dict[str, Any]], truth: pa.Table | list[dict[str, Any]],
                         outputs: pa.Table | list[dict[str, Any]], config: PaperAdjudicationConfig, *,
                         services: LLMServices | None = None, cache_dir: str | None = None,
                         checks: CheckRunner | None = None) -> pa.Table:  # fmt: skip
    """Synchronous entry point (one event loop for the whole run)."""
    return asyncio.run(adjudicate_paper_run_async(items, truth, outputs, config, services=services,
                                                  cache_dir=cache_dir, checks=checks))  # fmt: skip


def adjudicate_paper_controls(items: pa.Table | list[dict[str, Any]], truth: pa.Table | list[dict[str, Any]],
                              outputs: pa.Table | list[dict[str, Any]], config: PaperAdjudicationConfig, *,
                              services: LLMServices | None = None, cache_dir: str | None = None,
                              checks: CheckRunner | None = None) -> pa.Table:  # fmt: skip
    """Verdicts (run_id "controls") of the built-in controls (`adjudication.papers.controls`): a null
    reviewer, a random-quote reviewer, a quote-everything reviewer, a token-quotes reviewer and each
    real reviewer's reviews shuffled across papers,
    adjudicated exactly like `outputs` (the real reviewers' output rows, any number of systems)."""
    rows = _rows(outputs)
    by_system: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_system.setdefault(r["system"], []).append(r)
    payloads = {r["item_id"]: json.loads(r["payload_json"] or "{}") for r in _rows(items)}
    truths = {r["item_id"]: json.loads(r["extra_json"] or "{}") for r in _rows(truth)}
    cases = control_cases(payloads, truths, by_system)
    return adjudicate_paper_run(items, truth, cases, config, services=services, cache_dir=cache_dir, checks=checks)


def adjudicate_calibrated(items: pa.Table | list[dict[str, Any]], truth: pa.Table | list[dict[str, Any]],
                          outputs_by_run: dict[str, pa.Table | list[dict[str, Any]]], config: PaperAdjudicationConfig,
                          *, services: LLMServices | None = None, cache_dir: str | None = None,
                          checks: CheckRunner | None = None) -> tuple[dict[str, pa.Table], frozenset[str]]:  # fmt: skip
    """Verdicts per run id (and "controls") with judge calibration, and the judges excluded.

    The controls are adjudicated first by every judge; a judge crediting a control above
    `CALIBRATION_MAX_CREDIT` is excluded from every verdict after that, the controls' included
    (their second pass reads the judges' cached answers)."""
    all_outputs = [r for rows in outputs_by_run.values() for r in _rows(rows)]
    kw = {"services": services, "cache_dir": cache_dir, "checks": checks}
    controls = adjudicate_paper_controls(items, truth, all_outputs, config, **kw) if outputs_by_run else None
    excluded = uncalibrated_judges(controls.to_pylist()) if controls is not None else frozenset()
    if excluded:
        config = dataclasses.replace(config, uncalibrated=excluded)
        controls = adjudicate_paper_controls(items, truth, all_outputs, config, **kw)
    verdicts = {run_id: adjudicate_paper_run(items, truth, rows, config, **kw) for run_id, rows in outputs_by_run.items()}
    if controls is not None:
        verdicts["controls"] = controls
    return verdicts, excluded

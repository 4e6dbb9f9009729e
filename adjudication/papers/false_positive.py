"""False-positive adjudication of the flags a reviewer raised on a clean copy (reference 002, §2.4).

Per flag: (1) the typer (an optional judge) says whether it is a clear, specific claim and of
which type — without a typer every flag counts as clear, with its stated type or `general`; an
unclear flag is `ambiguous`. (2) Routing by type:

* numerics and mathematics -> a mechanical check built independently of the flag. The flag's
  own check (the mechanical reviewer's `check.kind/payload`) is never re-run: it would only
  repeat the route that raised the flag, so a wrong check (a definition read as an identity, the
  wrong block of table rows) would rate itself right. The check builder (an optional judge)
  turns the flag into a check request, accepted only when it is of another kind than the flag's
  own check, every number it uses is printed in the paper (the re-reading step, done
  deterministically), and it does not test a definition as an identity (`is_definition`).
  refuted -> `confirmed_issue`, confirmed -> `false_positive`, anything else -> `ambiguous`.
  A flag no check can be built for goes to the general panel.
* citations -> the citation panel, given the cited works' text when the run supplies it.
* general -> the general panel (three judges in the paper) with the full paper.

Panel verdict: the majority outcome of the judges that answered; no majority -> `ambiguous`.
No panel configured (no independent adjudicator at all) -> `undecided`: the flag is counted but
not rated, so a false-positive rate with nobody independent behind it is n/a, never 0.
A reviewer that failed on the clean copy yields one row of unit_kind `review`, outcome
`unscored` (flags never raised cannot be rated; the row keeps the failure visible).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from adjudication.check_runner import CheckRunner
from adjudication.judge import Judge, vote
from adjudication.papers.source import paper_text
from storage.records import Output, PaperReview

__all__ = ["FLAG_OUTCOMES", "FalsePositiveAdjudicator", "is_definition", "numbers_printed"]

FLAG_OUTCOMES: tuple[str, ...] = ("confirmed_issue", "false_positive", "ambiguous")
ERROR_TYPES = ("general", "mathematics", "numerics", "citations")
CHECK_ROOMS = {"numerics": ("numerics.",), "mathematics": ("math.", "units.")}

TYPER_PROMPT = """A referee raised the point below about a scientific paper. Is it a clear, specific claim that
something in the paper is wrong (as opposed to a suggestion, a question, or a low-confidence or
open-to-interpretation remark)? Classify it as one of: citations, mathematics, numerics, general.

POINT
{flag}

Answer with JSON only: {{"clear": true or false, "type": "citations|mathematics|numerics|general"}}"""

CHECK_BUILDER_PROMPT = """Turn the referee's point below into one mechanical check of the paper.
Available check kinds and their input fields:
{kinds}
Use numbers exactly as printed in the paper (strings), and LaTeX as written in the paper.

POINT
{flag}

PAPER
{paper}

Answer with JSON only: {{"kind": "<check kind>", "payload": {{...}}}}"""

PANEL_PROMPT = """A referee raised the point below about a scientific paper. Decide whether it is a genuine issue
in the paper (confirmed_issue), a false positive (the paper is actually right, or the point
misreads it), or ambiguous (a matter of interpretation, or it cannot be decided from the paper).

POINT
{flag}
{cited}
PAPER
{paper}

Answer with JSON only:
{{"outcome": "confirmed_issue" | "false_positive" | "ambiguous", "confidence": 0.0 to 1.0, "reason": "one sentence"}}"""

CHECK_KIND_DOCS = {
    "numerics": "numerics.table_row_total / table_column_total / sum_total {values: [..], total}; "
                "numerics.percentages_sum {percentages: [..], relation: equal|at_most}; numerics.percentage_of "
                "{percent, of, stated}; numerics.ratio {numerator, denominator, stated}; numerics.difference "
                "{minuend, subtrahend, stated}; numerics.abstract_body {abstract, body}; numerics.repeated_constant "
                "{values: [..]}; numerics.integer_equality {values: [..]}; numerics.rounded_value {value, rounded}",
    "mathematics": "math.equality {lhs, rhs}; math.series {series, equals}; math.limit {expr, var, to, dir, equals}; "
                   "math.inequality {statement}; units.dimensions {equation, units: {symbol: unit}}",
}  # fmt: skip

# A statement that introduces a symbol, not one that claims two things are equal: never an identity to check.
_DEFINITION = re.compile(r":=|=:|\\coloneqq|\\eqqcolon|\\equiv|\\triangleq|\\stackrel\{\s*\\?(?:rm\s*)?def|"
                         r"\\overset\{\s*\\?(?:rm\s*)?def|\bwhere\b|\bwe\s+define\b|\bdefined\s+(?:as|by)\b|"
                         r"\bdenotes?\b|\blet\b", re.IGNORECASE)


def is_definition(*texts: Any) -> bool:
    """Does any text (quote, payload, description) define a symbol (`:=`, \\equiv, "where", "we define", "let")?"""
    return any(_DEFINITION.search(t if isinstance(t, str) else json.dumps(t, default=str)) for t in texts if t)


_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_CITE = re.compile(r"\\cite[a-zA-Z]*\*?(?:\[[^\]]*\])*\{([^}]*)\}")


def numbers_printed(payload: Any, paper: str) -> bool:
    """Is every number in the check input printed somewhere in the paper?"""
    found = _NUMBER.findall(json.dumps(payload))
    digits = re.sub(r"\s", "", paper)
    return all(n in paper or n.replace(",", "") in digits.replace(",", "") for n in found)


def render_flag(flag: dict[str, Any]) -> str:
    parts = [f"Type stated by the referee: {flag.get('type') or 'none'}"]
    if flag.get("location"):
        parts.append(f"Location: {flag['location']}")
    if flag.get("quote"):
        parts.append(f'Quoted passage: "{flag["quote"]}"')
    parts.append(f"Point: {flag.get('description', '')}")
    return "\n".join(parts)


@dataclass
class FalsePositiveAdjudicator:
    general_panel: list[Judge]
    checks: CheckRunner
    citation_panel: list[Judge] | None = None
    """Defaults to the general panel."""
    typer: Judge | None = None
    check_builder: Judge | None = None
    cited_texts: dict[str, str] = field(default_factory=dict)
    """Text of cited works by BibTeX key (given to the citation panel when the flag cites them)."""
    max_cited_chars: int = 20000

    async def panel(self, judges: list[Judge], flag: dict[str, Any], paper: str, cited: str = "") -> tuple[str, list[dict[str, Any]], bool | None]:  # fmt: skip
        if not judges:
            return "undecided", [], None
        prompt = PANEL_PROMPT.format(flag=render_flag(flag), cited=cited, paper=paper)
        votes = list(await asyncio.gather(*(j.outcome_vote(prompt, "panel", FLAG_OUTCOMES) for j in judges)))
        counts = Counter(v["outcome"] for v in votes if v["outcome"] is not None)
        ranked = counts.most_common()
        if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) or ranked[0][1] * 2 <= sum(counts.values()):
            return "ambiguous", votes, False
        return ranked[0][0], votes, len(ranked) == 1

    async def check_for(self, flag: dict[str, Any], kind: str, paper: str) -> tuple[dict[str, Any] | None, str]:
        """(check request, where it came from) for a numerics/mathematics flag, or (None, why not)."""
        own = flag.get("check") or {}
        own_kind = own.get("kind") if isinstance(own.get("kind"), str) else None
        if self.check_builder is None:
            return None, "no check builder configured (the flag's own check is never re-run)"
        try:
            data = await self.check_builder.ask(CHECK_BUILDER_PROMPT.format(
                kinds=CHECK_KIND_DOCS[kind], flag=render_flag(flag), paper=paper), ("kind", "payload"))
        except Exception as exc:  # a builder that cannot answer sends the flag to the panel
            return None, f"check builder failed: {exc}"
        if not (isinstance(data["kind"], str) and data["kind"].startswith(CHECK_ROOMS[kind]) and isinstance(data["payload"], dict)):
            return None, f"check builder proposed an unusable check {data['kind']!r}"
        if own_kind is not None and data["kind"] == own_kind:
            return None, f"check builder proposed the flag's own check kind {own_kind!r} (not independent)"
        if kind == "numerics" and not numbers_printed(data["payload"], paper):
            return None, "check builder used numbers not printed in the paper"
        if data["kind"] == "math.equality" and is_definition(flag.get("quote"), data["payload"]):
            return None, "the quoted statement is a definition, not an identity"
        return {"kind": data["kind"], "payload": data["payload"]}, "check_builder"

    def cited_context(self, flag: dict[str, Any]) -> tuple[str, list[str]]:
        text = f"{flag.get('quote') or ''} {flag.get('description') or ''}"
        keys = [k.strip() for m in _CITE.finditer(text) for k in m.group(1).split(",")]
        keys += [k for k in self.cited_texts if k not in keys and re.search(rf"\b{re.escape(k)}\b", text)]
        have = [k for k in keys if k in self.cited_texts]
        blocks = [f"\nCITED WORK {k}\n{self.cited_texts[k][: self.max_cited_chars]}\n" for k in have]
        return "".join(blocks), have

    async def adjudicate_flag(self, flag: dict[str, Any], files: dict[str, str], main_file: str) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:  # fmt: skip
        paper = paper_text(files, main_file)
        stated = flag.get("type") if flag.get("type") in ERROR_TYPES else None
        votes: list[dict[str, Any]] = []
        kind, clear = stated or "general", True
        if self.typer is not None:
            try:
                data = await self.typer.ask(TYPER_PROMPT.format(flag=render_flag(flag)), ("clear", "type"))
                clear = data["clear"] is not False and str(data["clear"]).lower() != "false"
                kind = data["type"] if data["type"] in ERROR_TYPES else kind
                votes.append(vote(self.typer.spec.model, self.typer.spec.family_name, "typer",
                                  outcome=None if clear else "ambiguous", reason=f"clear={clear}, type={kind}"))  # fmt: skip
            except Exception as exc:  # an unreadable typer answer keeps the stated type
                votes.append(vote(self.typer.spec.model, self.typer.spec.family_name, "typer", reason=f"no answer: {exc}"))
        extra: dict[str, Any] = {"flag_type": kind, "stated_type": stated, "escalated": False}
        if not clear:
            return "ambiguous", votes, extra | {"matched_by": "typer", "unanimous": True, "clear": False}
        if kind in CHECK_ROOMS:
            request, origin = await self.check_for(flag, kind, paper)
            if request is not None:
                result = await self.checks.run(request["kind"], request["payload"])
                outcome = {"refuted": "confirmed_issue", "confirmed": "false_positive"}.get(result.get("outcome"), "ambiguous")
                votes.append(vote("checker", "checker", "checker", outcome=outcome,
                                  evidence=json.dumps(result.get("evidence"), default=str)[:2000],
                                  reason=f"{request['kind']} {result.get('outcome')}: {result.get('reason', '')}"))  # fmt: skip
                return outcome, votes, extra | {"matched_by": "checker", "unanimous": True, "check_origin": origin,
                                                "check": {"kind": request["kind"], "payload": request["payload"],
                                                          "outcome": result.get("outcome")}}  # fmt: skip
            extra["no_check"] = origin
        if kind == "citations":
            cited, keys = self.cited_context(flag)
            outcome, panel_votes, unanimous = await self.panel(self.citation_panel or self.general_panel, flag, paper, cited)
            return outcome, votes + panel_votes, extra | {"matched_by": "panel" if panel_votes else "no_adjudicator",
                                                          "unanimous": unanimous, "cited_keys": keys}  # fmt: skip
        outcome, panel_votes, unanimous = await self.panel(self.general_panel, flag, paper)
        return outcome, votes + panel_votes, extra | {"matched_by": "panel_general" if panel_votes else "no_adjudicator",
                                                      "unanimous": unanimous}  # fmt: skip

    async def adjudicate(self, output: dict[str, Any], truth: dict[str, Any], files: dict[str, str],
                         main_file: str) -> list[dict[str, Any]]:  # fmt: skip
        """Verdict rows (without run_id/system) for every flag of one review of a clean copy."""
        base = {"paper_id": truth.get("paper_id"), "copy": truth.get("copy")}
        if output.get("error"):
            return [{"item_id": output["item_id"], "unit_id": f"{output['item_id']}/review", "unit_kind": "review",
                     "outcome": "unscored", "votes_json": "[]",
                     "detail_json": json.dumps(base | {"unscored_reason": f"reviewer failed: {output['error']}"})}]  # fmt: skip
        try:
            flags = Output.from_row(output).detail_as(PaperReview).flags
        except ValueError as exc:  # a reviewer outside the contract: this review unscored, the others kept
            return [{"item_id": output["item_id"], "unit_id": f"{output['item_id']}/review", "unit_kind": "review",
                     "outcome": "unscored", "votes_json": "[]",
                     "detail_json": json.dumps(base | {"unscored_reason": str(exc)})}]  # fmt: skip
        results = await asyncio.gather(*(self.adjudicate_flag(f, files, main_file) for f in flags))
        return [{"item_id": output["item_id"], "unit_id": f["flag_id"], "unit_kind": "flag", "outcome": outcome,
                 "votes_json": json.dumps(votes, ensure_ascii=False),
                 "detail_json": json.dumps(base | extra, ensure_ascii=False, default=str)}
                for f, (outcome, votes, extra) in zip(flags, results, strict=True)]  # fmt: skip

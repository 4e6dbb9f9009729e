"""Detection matching: for each (copy, reviewer), which injected errors did the review find?

Reference 002, §2.4. Per injection, in order:

1. quote match (`adjudication.quote_match`): a flag quoting the injected span -> `detected`,
   one vote with role `quote_match`, no model called;
2. the panel: every judge gets the review (text and flags) and the injection record and answers
   {detected, confidence, evidence, reason}; the verdict is the majority of the judges that
   answered;
3. escalation: a split vote, a majority whose mean confidence is below `low_confidence`, or no
   answering judge sends the injection to one escalation judge that also gets the full paper;
   its answer is the verdict (it may reverse the panel). If it cannot answer either, the panel
   majority stands, or the injection is `unscored` when there is none.

A reviewer that failed on the copy gets `unscored` for every injection, without calls.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from adjudication.judge import Judge, vote
from adjudication.paper_source import paper_text
from adjudication.quote_match import quote_matches

__all__ = ["DETECTION_PROMPT", "DetectionMatcher", "majority"]

DETECTION_PROMPT = """You are adjudicating whether a peer review detected a specific error that was deliberately
injected into a scientific paper. Judge only whether the review identifies this error (the same
location and the same problem), not whether the review is good.

REVIEW
{review}

INJECTED ERROR
Injection ID: {injection_id}
Type: {error_type} (severity {severity}, sub-type {subtype})
Location: {file}, characters {start}-{end}
Original text: {original}
Injected text: {injected}
Why it is an error: {rationale}
{paper}
Answer with JSON only:
{{"detected": true or false, "confidence": 0.0 to 1.0,
  "evidence": "the review passage that identifies the error, or null",
  "reason": "one sentence"}}"""

ESCALATION_HEADER = "\nFULL PAPER (escalation: the panel was split or unsure)\n"


def render_review(detail: dict[str, Any]) -> str:
    text = str(detail.get("review_text") or "").strip()
    flags = detail.get("flags") or []
    lines = [text] if text else []
    if flags:
        lines.append("\nFlags raised by the review:")
        for f in flags:
            where = f" [{f['location']}]" if f.get("location") else ""
            quote = f' quote: "{f["quote"]}"' if f.get("quote") else ""
            lines.append(f"- ({f.get('type') or 'untyped'}){where} {f.get('description', '')}{quote}")
    return "\n".join(lines) or "(empty review)"


def majority(votes: list[dict[str, Any]]) -> tuple[bool | None, bool, float | None]:
    """(verdict, unanimous, mean confidence of the majority side) over answering votes;
    verdict None on a tie or when no judge answered."""
    answered = [v for v in votes if v["detected"] is not None]
    yes = sum(v["detected"] for v in answered)
    no = len(answered) - yes
    if not answered or yes == no:
        return None, False, None
    verdict = yes > no
    side = [v["confidence"] for v in answered if v["detected"] == verdict and v["confidence"] is not None]
    return verdict, min(yes, no) == 0, (sum(side) / len(side) if side else None)


@dataclass
class DetectionMatcher:
    """The panel, the escalation judge and the escalation rule."""

    panel: list[Judge]
    escalation: Judge | None = None
    low_confidence: float = 0.7
    """A majority whose mean confidence is below this escalates."""

    async def judge_injection(self, injection: dict[str, Any], detail: dict[str, Any],
                              files: dict[str, str], main_file: str) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:  # fmt: skip
        """(outcome, votes, detail additions) for one injection and one review."""
        for flag in detail.get("flags") or []:
            evidence = quote_matches(flag, injection, files)
            if evidence:
                return "detected", [vote("mechanical", "mechanical", "quote_match", detected=True, confidence=1.0,
                                         evidence=flag.get("quote"), reason=f"{flag['flag_id']}: {evidence}")], \
                    {"matched_by": "quote", "escalated": False, "unanimous": True}  # fmt: skip
        fields = {k: injection.get(k, "") for k in ("injection_id", "error_type", "severity", "subtype", "file",
                                                    "start", "end", "original", "injected", "rationale")}  # fmt: skip
        if not detail.get("flags") and (detail.get("prompt_style") == "mechanical" or not detail.get("review_text", "").strip()):
            # Nothing was raised (a mechanical review's findings are its flags): nothing to ask judges about.
            return "missed", [], {"matched_by": "no_findings", "escalated": False, "unanimous": True}
        if not self.panel and self.escalation is None:
            # Quote matching only (no judges configured): an injection no flag quotes is missed.
            return "missed", [], {"matched_by": "quote_only", "escalated": False, "unanimous": True}
        prompt = DETECTION_PROMPT.format(review=render_review(detail), paper="", **fields)
        votes = list(await asyncio.gather(*(j.detection_vote(prompt, "panel") for j in self.panel)))
        verdict, unanimous, confidence = majority(votes)
        split = verdict is None or not unanimous
        unsure = confidence is not None and confidence < self.low_confidence
        if (split or unsure or verdict is None) and self.escalation is not None:
            full = ESCALATION_HEADER + paper_text(files, main_file) + "\n"
            esc = await self.escalation.detection_vote(
                DETECTION_PROMPT.format(review=render_review(detail), paper=full, **fields), "escalation")
            votes.append(esc)
            all_answered = [v["detected"] for v in votes if v["detected"] is not None]
            if esc["detected"] is not None:
                return ("detected" if esc["detected"] else "missed"), votes, {
                    "matched_by": "escalation", "escalated": True, "unanimous": len(set(all_answered)) == 1}
            return self._settle(verdict, votes, escalated=True, unanimous=False)
        return self._settle(verdict, votes, escalated=False, unanimous=unanimous)

    @staticmethod
    def _settle(verdict: bool | None, votes: list[dict[str, Any]], escalated: bool,
                unanimous: bool) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:  # fmt: skip
        if verdict is None:
            return "unscored", votes, {"matched_by": "panel", "escalated": escalated, "unanimous": False,
                                       "unscored_reason": "no majority and no escalation verdict"}  # fmt: skip
        return ("detected" if verdict else "missed"), votes, {"matched_by": "panel", "escalated": escalated,
                                                               "unanimous": unanimous}  # fmt: skip

    async def adjudicate(self, output: dict[str, Any], truth: dict[str, Any], files: dict[str, str],
                         main_file: str) -> list[dict[str, Any]]:  # fmt: skip
        """Verdict rows (without run_id/system) for every injection of one copy and one review."""
        rows = []
        detail = json.loads(output["detail_json"]) if output.get("detail_json") else {}
        for injection in truth.get("injections", []):
            base = {k: injection.get(k) for k in ("error_type", "severity", "subtype")}
            base.update(paper_id=truth.get("paper_id"), copy=truth.get("copy"))
            if output.get("error"):
                outcome, votes = "unscored", []
                extra = {"matched_by": None, "escalated": False, "unanimous": False,
                         "unscored_reason": f"reviewer failed: {output['error']}"}  # fmt: skip
            else:
                outcome, votes, extra = await self.judge_injection(injection, detail, files, main_file)
            rows.append({"item_id": output["item_id"], "unit_id": injection["injection_id"], "unit_kind": "injection",
                         "outcome": outcome, "votes_json": json.dumps(votes, ensure_ascii=False),
                         "detail_json": json.dumps(base | extra, ensure_ascii=False)})  # fmt: skip
        return rows

"""Detection matching: for each (copy, reviewer), which injected errors did the review find?

Reference 002, §2.4, hardened by issue 15 so that a verdict of `detected` cannot be gamed. Per
injection, in order:

1. quote match (`adjudication.papers.quote_match`): a flag whose quote is specific (at most
   `MAX_QUOTE_CHARS`, at least `MIN_QUOTE_CHARS` non-space characters), overlaps the injection's
   changed characters and whose description names the error (`names_the_error`) -> `detected`,
   one vote with role `quote_match`, no model called. A located quote whose description does not
   name the error is left to the panel; without a panel the injection is `missed`
   (`matched_by: "quote_unnamed"`);
2. the panel: every judge gets the review (text and flags) and the injection record and answers
   {detected, confidence, evidence, reason}. A "detected" vote counts only when its evidence is
   found in the review (`evidence_in_review`: rapidfuzz partial_ratio of the normalised evidence
   against the normalised review >= `EVIDENCE_MIN_RATIO`, evidence of at least
   `EVIDENCE_MIN_CHARS` characters); otherwise it is recorded as an abstention saying why.
   The verdict is the majority of the judges that answered;
3. escalation: a split vote, a majority whose mean confidence is below `low_confidence`, or no
   answering judge sends the injection to one escalation judge that also gets the full paper;
   its answer (vetted like a panel vote, and itself needing confidence >= `low_confidence`) is
   the verdict.

Judge calibration (issue 21, `adjudication.papers.calibration`): judges named in
`uncalibrated` (they credited the controls) are still asked and their votes recorded with role
`uncalibrated`, but they never count; with no calibrated panel judge left the panel is as if not
configured.

A verdict the rules above cannot reach is `undecided`, never `detected`: a failed, unreadable or
unsure escalation, or an unsure/split panel with no escalation judge configured. Undecided
injections are out of the detection-rate denominator and counted beside it
(`scoring.papers.detection`). A reviewer that failed on the copy gets `unscored` for every
injection, without calls. `unanimous` is None when no judge voted (quote matches, empty
reviews), so agreement statistics over judges read n/a rather than 1.000. Each row's detail says
whether the reviewer could see the injection (`visible`: its changed span inside the reviewer's
recorded `shown_spans`; None when the reviewer saw the whole copy).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz

from adjudication.judge import Judge, vote
from adjudication.papers.quote_match import (
    changed_span,
    flag_quotes,
    names_the_error,
    normalize,
    quote_matches,
    quote_specificity,
)
from adjudication.papers.source import paper_text
from storage.records import Output, PaperReview

__all__ = ["DETECTION_PROMPT", "EVIDENCE_MIN_CHARS", "EVIDENCE_MIN_RATIO", "DetectionMatcher", "evidence_in_review",
           "majority", "quote_tally"]

EVIDENCE_MIN_RATIO = 85.0
"""rapidfuzz partial_ratio (0-100) a judge's normalised evidence must reach against the normalised
review: tolerates re-spacing, dropped LaTeX markup and a few changed characters, not invention."""
EVIDENCE_MIN_CHARS = 8
"""Shorter evidence (after normalisation) is too easy to find anywhere and does not count."""

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
Changed characters: "{changed_original}" -> "{changed_injected}" (the review must address this change)
Why it is an error: {rationale}
{paper}
Detected means the review both points at this place (not at a whole file or section, not at a single
symbol found everywhere) and says what is wrong there (the changed value or the kind of error, e.g. a
sign, a coefficient, a total, a reference). "Something here may be wrong" is not a detection.

Answer with JSON only:
{{"detected": true or false, "confidence": 0.0 to 1.0,
  "evidence": "the review passage that identifies the error, or null",
  "reason": "one sentence"}}"""

ESCALATION_HEADER = "\nFULL PAPER (escalation: the panel was split or unsure)\n"


def render_review(review: PaperReview) -> str:
    text = review.review_text.strip()
    flags = review.flags
    lines = [text] if text else []
    if flags:
        lines.append("\nFlags raised by the review:")
        for f in flags:
            where = f" [{f['location']}]" if f.get("location") else ""
            quote = f' quote: "{f["quote"]}"' if f.get("quote") else ""
            lines.append(f"- ({f.get('type') or 'untyped'}){where} {f.get('description', '')}{quote}")
    return "\n".join(lines) or "(empty review)"


def evidence_in_review(evidence: Any, review: str) -> tuple[bool, float]:
    """(found, partial ratio): is the judge's evidence a passage of the review?"""
    ev, rv = normalize(str(evidence or "")), normalize(review)
    if len(ev) < EVIDENCE_MIN_CHARS or not rv:
        return False, 0.0
    score = 100.0 if ev in rv else float(fuzz.partial_ratio(ev, rv))
    return score >= EVIDENCE_MIN_RATIO, score


def vet_vote(v: dict[str, Any], review: str) -> dict[str, Any]:
    """A "detected" vote without evidence found in the review becomes an abstention (kept, with why)."""
    if v["detected"] is not True:
        return v
    found, score = evidence_in_review(v.get("evidence"), review)
    if found:
        return v
    why = "no evidence given" if not v.get("evidence") else f"evidence not found in the review (partial ratio {score:.0f})"
    return v | {"detected": None, "reason": f"detected vote discarded: {why}; judge said: {v.get('reason')}"}


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


def _model(judge: Any) -> str | None:
    spec = getattr(judge, "spec", None)  # duck-typed judges (tests' fixed answers) may have none
    return getattr(spec, "model", None)


def quote_tally(review: PaperReview) -> dict[str, int]:
    """The review's flags by the specificity of their quotes (issue 21): how many flags carry a
    quote, and how many of those are over-long (a whole file) or token-only (a bare symbol)."""
    kinds = [quote_specificity(q) for f in review.flags for q in flag_quotes(f)[:1]]
    return {"flags": len(review.flags), "quoted": len(kinds), "over_long": kinds.count("over_long"),
            "token_only": kinds.count("token_only")}


@dataclass
class DetectionMatcher:
    """The panel, the escalation judge and the escalation rule."""

    panel: list[Judge]
    escalation: Judge | None = None
    low_confidence: float = 0.7
    """A majority whose mean confidence is below this escalates."""
    uncalibrated: frozenset[str] = frozenset()
    """Judge models whose votes are recorded but not counted (they credited the controls)."""

    def _counted(self, votes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [v for v in votes if v.get("role") != "uncalibrated"]

    def _mark(self, vote_: dict[str, Any]) -> dict[str, Any]:
        return vote_ | {"role": "uncalibrated"} if vote_.get("judge") in self.uncalibrated else vote_

    async def judge_injection(self, injection: dict[str, Any], review: PaperReview,
                              files: dict[str, str], main_file: str) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:  # fmt: skip
        """(outcome, votes, detail additions) for one injection and one review."""
        located = None  # a flag that quotes the change but does not say what is wrong
        for flag in review.flags:
            evidence = quote_matches(flag, injection, files)
            if evidence and names_the_error(flag.get("description"), injection):
                return "detected", [vote("mechanical", "mechanical", "quote_match", detected=True, confidence=1.0,
                                         evidence=flag.get("quote"), reason=f"{flag['flag_id']}: {evidence}")], \
                    {"matched_by": "quote", "escalated": False, "unanimous": None}  # fmt: skip
            located = located or (flag["flag_id"] if evidence else None)
        fields = {k: injection.get(k, "") for k in ("injection_id", "error_type", "severity", "subtype", "file",
                                                    "start", "end", "original", "injected", "rationale",
                                                    "changed_original", "changed_injected")}  # fmt: skip
        if review.found_nothing:
            # Nothing was raised (a mechanical review's findings are its flags): nothing to ask judges about.
            return "missed", [], {"matched_by": "no_findings", "escalated": False, "unanimous": None}
        calibrated = [j for j in self.panel if _model(j) not in self.uncalibrated]
        escalation = self.escalation if self.escalation and _model(self.escalation) not in self.uncalibrated else None
        rendered = render_review(review)
        prompt = DETECTION_PROMPT.format(review=rendered, paper="", **fields)
        votes = [self._mark(vet_vote(v, rendered))
                 for v in await asyncio.gather(*(j.detection_vote(prompt, "panel") for j in self.panel))]
        if not calibrated and escalation is None:
            # Quote matching only (no calibrated judge; uncalibrated ones' votes are kept on the record):
            # an injection no flag quotes and names is missed.
            extra = {"matched_by": "quote_unnamed" if located else "quote_only", "escalated": False, "unanimous": None}
            if located:
                extra["located_by"] = located
            if self.panel:
                extra["uncalibrated_judges"] = sorted(self.uncalibrated)
            return "missed", votes, extra
        verdict, unanimous, confidence = majority(self._counted(votes))
        split = verdict is None or not unanimous
        unsure = confidence is None or confidence < self.low_confidence
        if not (split or unsure):
            return ("detected" if verdict else "missed"), votes, {"matched_by": "panel", "escalated": False,
                                                                  "unanimous": unanimous}  # fmt: skip
        if escalation is None:
            return "undecided", votes, {"matched_by": "panel", "escalated": False, "unanimous": unanimous if votes else None,
                                        "undecided_reason": "panel split or unsure and no escalation judge"}  # fmt: skip
        full = ESCALATION_HEADER + paper_text(files, main_file) + "\n"
        esc = vet_vote(await escalation.detection_vote(
            DETECTION_PROMPT.format(review=rendered, paper=full, **fields), "escalation"), rendered)
        votes.append(esc)
        all_answered = [v["detected"] for v in self._counted(votes) if v["detected"] is not None]
        extra = {"matched_by": "escalation", "escalated": True, "unanimous": len(set(all_answered)) == 1}
        if esc["detected"] is None:
            # A failed or impossible escalation decides nothing: the low-confidence panel vote never stands.
            return "undecided", votes, extra | {"undecided_reason": f"escalation gave no verdict: {esc['reason']}"}
        if esc["confidence"] is None or esc["confidence"] < self.low_confidence:
            return "undecided", votes, extra | {
                "undecided_reason": f"escalation confidence {esc['confidence']} below {self.low_confidence}"}
        return ("detected" if esc["detected"] else "missed"), votes, extra

    @staticmethod
    def visible(injection: dict[str, Any], review: PaperReview | None) -> bool | None:
        """Was the injection's changed span in what the reviewer was shown? None: the reviewer saw
        the whole copy or did not record what it saw (`shown_spans`, a reviewer's detail)."""
        spans = review.shown_spans if review is not None else None
        if spans is None:
            return None
        cs, ce = changed_span(injection)
        f = injection.get("file")
        return any(s.get("file") == f and int(s["start"]) <= cs and max(ce, cs + 1) <= int(s["end"]) for s in spans)

    async def adjudicate(self, output: dict[str, Any], truth: dict[str, Any], files: dict[str, str],
                         main_file: str) -> list[dict[str, Any]]:  # fmt: skip
        """Verdict rows (without run_id/system) for every injection of one copy and one review."""
        rows = []
        review, unscored = None, f"reviewer failed: {output['error']}" if output.get("error") else None
        if unscored is None:
            try:
                review = Output.from_row(output).detail_as(PaperReview)
            except ValueError as exc:  # a reviewer outside the contract: this review unscored, the others kept
                unscored = str(exc)
        tally = quote_tally(review) if review is not None else None
        for injection in truth.get("injections", []):
            base = {k: injection.get(k) for k in ("error_type", "severity", "subtype")}
            if tally is not None:  # the review's quotes by specificity, the same on each row of the copy
                base["review_quotes"] = tally
            base.update(paper_id=truth.get("paper_id"), copy=truth.get("copy"), visible=self.visible(injection, review))
            if review is None:
                outcome, votes = "unscored", []
                extra = {"matched_by": None, "escalated": False, "unanimous": False, "unscored_reason": unscored}
            else:
                outcome, votes, extra = await self.judge_injection(injection, review, files, main_file)
            rows.append({"item_id": output["item_id"], "unit_id": injection["injection_id"], "unit_kind": "injection",
                         "outcome": outcome, "votes_json": json.dumps(votes, ensure_ascii=False),
                         "detail_json": json.dumps(base | extra, ensure_ascii=False)})  # fmt: skip
        return rows

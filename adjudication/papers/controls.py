"""Built-in controls of every paper audit (issue 15): reviews that carry no real finding, scored
by exactly the same adjudication as the real reviewers, so their detection rates show what the
adjudication awards to nothing.

* `control:null` — a review with no flags and one content-free sentence (`NULL_REVIEW`). Judges
  are still asked (with a panel configured), so a panel that "detects" from nothing shows here.
* `control:random_quote` — per copy, `RANDOM_QUOTES` flags each quoting a random sentence of
  the paper's printed text (seeded by the copy id): the detection that chance quoting earns.
* `control:shuffled:<reviewer>` — each real reviewer's review of one paper scored against
  another paper's injections (the same copy number of the next paper in sorted order, within
  the same track: injected or natural errata): what a review earns on a paper it never read.
  Needs two papers or more in a track.
* `control:quote_everything` — per copy, one flag per `.tex` file quoting the whole file with
  "something in this file may be wrong" (issue 21): a review that points everywhere. Quote
  specificity (`adjudication.papers.quote_match.MAX_QUOTE_CHARS`) must keep it near zero.
* `control:token_quotes` — per copy, one flag per bare token of `_TOKENS` found in the paper
  ("0", "+", "in", "}", every digit) with the same content-free description: quotes too
  short to locate (`MIN_QUOTE_CHARS`) must not earn detections.

Clean copies are not controlled (a control raises no judged flag on them). The report sets each
rate beside the real reviewers' and calls the audit invalid when the null control's detection
rate exceeds `NULL_TOLERANCE`, or any control reaches a reviewer's detection rate within its CI
(`scoring.papers.metrics.audit_invalid_reasons`). Every panel judge adjudicates the controls
first; one that credits them is excluded (`adjudication.papers.calibration`).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping
from typing import Any

from storage.latex_comments import remove_comments
from storage.outages import outage_sources
from storage.records import PaperReview

__all__ = ["CONTROL_PREFIX", "CONTROL_NAMES", "NULL_REVIEW", "NULL_TOLERANCE", "RANDOM_QUOTES",
           "VAGUE_DESCRIPTION", "control_cases"]

CONTROL_PREFIX = "control:"
NULL_REVIEW = "I have read the paper and have no specific comments."
NULL_TOLERANCE = 0.05
"""A null control detecting more than this share of injections makes the audit invalid."""
RANDOM_QUOTES = 5
VAGUE_DESCRIPTION = "something in this file may be wrong"
CONTROL_NAMES = ("null", "random_quote", "quote_everything", "token_quotes")
"""The controls built for every injected copy (besides `shuffled:<reviewer>`)."""
_TOKENS = (*"0123456789", "+", "-", "=", "^", "_", "in", "of", "the", "is", "}", "{", "(", ")", "x", "a", "\\")
"""The token-quotes control quotes each of these that occurs in the copy: every digit, operator and brace."""

_SENTENCE = re.compile(r"[^.!?\n]{30,240}[.!?]")


def _sentences(files: Mapping[str, str]) -> list[str]:
    out = []
    for rel in sorted(files):
        if rel.endswith(".bib"):
            continue
        text = remove_comments(files[rel], " ")
        out += [m.group(0).strip() for m in _SENTENCE.finditer(text) if "\\" not in m.group(0)[:2]]
    return out


def _tokens(files: Mapping[str, str]) -> list[str]:
    """Bare tokens that occur in the paper's .tex files (so a quote of one is found there)."""
    text = " ".join(files[rel] for rel in sorted(files) if not rel.endswith(".bib"))
    return [t for t in _TOKENS if t in text]


def _vague_flags(item_id: str, tag: str, quotes: list[str]) -> list[dict[str, Any]]:
    return [{"flag_id": f"{item_id}/{tag}{n}", "quote": q, "location": None, "type": None,
             "description": VAGUE_DESCRIPTION, "check": None} for n, q in enumerate(quotes, 1)]  # fmt: skip


def _output(item_id: str, system: str, detail: dict[str, Any]) -> dict[str, Any]:
    return {"run_id": "controls", "system": system, "item_id": item_id, "error": None,
            "detail_json": json.dumps(detail, ensure_ascii=False)}


def control_cases(payloads: Mapping[str, dict[str, Any]], truths: Mapping[str, dict[str, Any]],
                  reviewer_outputs: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Output rows (run_id "controls") of every control for every injected copy; a shuffled review
    carries the copy it is scored against as its item_id (`shuffled_from` names the one reviewed)."""
    cases: list[dict[str, Any]] = []
    injected = sorted(i for i, t in truths.items() if not t.get("clean") and i in payloads)
    for item_id in injected:
        files = payloads[item_id].get("files") or {}
        cases.append(_output(item_id, CONTROL_PREFIX + "null",
                             PaperReview(review_text=NULL_REVIEW, prompt_style="control", flags=[]).to_detail()))
        rng = random.Random(int(hashlib.sha256(item_id.encode()).hexdigest()[:16], 16))
        pool = _sentences(files)
        quotes = rng.sample(pool, min(RANDOM_QUOTES, len(pool)))
        flags = [{"flag_id": f"{item_id}/f{n}", "quote": q, "location": None, "type": None,
                  "description": "This passage looks wrong.", "check": None} for n, q in enumerate(quotes, 1)]
        cases.append(_output(item_id, CONTROL_PREFIX + "random_quote", PaperReview(
            review_text="\n".join(f'- This passage looks wrong: "{q}"' for q in quotes), prompt_style="control",
            flags=flags).to_detail()))  # fmt: skip
        # issue 21: quoting everything, and quoting single tokens, must not buy detections
        whole = [files[rel] for rel in sorted(files) if rel.endswith(".tex") and files[rel].strip()]
        cases.append(_output(item_id, CONTROL_PREFIX + "quote_everything", PaperReview(
            review_text="\n".join(f"- {VAGUE_DESCRIPTION} (file {n})" for n in range(1, len(whole) + 1)),
            prompt_style="control", flags=_vague_flags(item_id, "e", whole)).to_detail()))  # fmt: skip
        tokens = _tokens(files)
        cases.append(_output(item_id, CONTROL_PREFIX + "token_quotes", PaperReview(
            review_text="\n".join(f'- {VAGUE_DESCRIPTION}: "{t}"' for t in tokens), prompt_style="control",
            flags=_vague_flags(item_id, "t", tokens)).to_detail()))  # fmt: skip
    # Shuffled within a track (injected copies against injected, natural errata against natural):
    # copy k of a paper is scored against copy k of the next paper of the same track (cyclically
    # when that paper has fewer copies, as a repository's errata copies may).
    copies: dict[tuple[str, str], list[str]] = {}
    for i in injected:
        copies.setdefault((_track(truths[i]), truths[i].get("paper_id")), []).append(i)
    for ids in copies.values():
        ids.sort(key=lambda i: (str(truths[i].get("copy")), i))
    target_of: dict[str, str] = {}
    for track in sorted({t for t, _ in copies}):
        papers = sorted(p for t, p in copies if t == track)
        if len(papers) < 2:
            continue
        for n, p in enumerate(papers):
            mine, theirs = copies[(track, p)], copies[(track, papers[(n + 1) % len(papers)])]
            target_of.update({i: theirs[k % len(theirs)] for k, i in enumerate(mine)})
    for system, outputs in sorted(reviewer_outputs.items()):
        if system.startswith(CONTROL_PREFIX):
            continue
        for out in outputs:
            t = truths.get(out["item_id"])
            if not t or t.get("clean") or out.get("error") or outage_sources(out.get("detail_json")):
                continue
            target = target_of.get(out["item_id"])
            if target is not None:
                detail = json.loads(out.get("detail_json") or "{}")
                detail.pop("shown_spans", None)  # spans of another paper's files say nothing here
                cases.append(_output(target, f"{CONTROL_PREFIX}shuffled:{system}",
                                     detail | {"shuffled_from": out["item_id"]}))
    return cases


def _track(truth: Mapping[str, Any]) -> str:
    """"injected" (the corpus's own injections) or "natural" (errata from a paper's history)."""
    return str(truth.get("track") or "injected")

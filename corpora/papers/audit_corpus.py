"""Build a paper-audit corpus: per paper one clean copy and three injected copies, with their truth.

For each paper the schedule (`paper_schedule`) fixes the severity of each error type in each
injected copy; for each (copy, type) a sub-type of that combination is drawn with the copy's
seeded stream. Rule sub-types try their injector's candidates in seeded order (lower priority
first) until the validator accepts one; LLM sub-types ask the proposer, feeding back the reasons
of rejected proposals, up to `max_llm_attempts` times. When a sub-type cannot be injected (no
proposer, no eligible place, every proposal rejected) the other sub-types of the same combination
are tried, rule sub-types when there is no proposer; if none succeeds the injection is recorded as
skipped in the truth, with the reason. Item and truth rows follow the paper-audit data contract:
payload {paper_id, copy, main_file, files}, truth extra {paper_id, copy, clean, injections,
skipped, tex_engine}. The main file is named `main.tex` in the payload (its text is unchanged).
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from corpora.loaded_corpus import LoadedCorpus, LoadError
from corpora.papers.injectors import RULES, Proposal
from corpora.papers.label_check import label_mismatch
from corpora.papers.latex_paper import LatexPaper, load_latex_paper
from corpora.papers.llm_proposer import LLMProposer, ProposalParseError
from corpora.papers.schedule import paper_rng, severity_schedule
from corpora.papers.subtypes import ERROR_TYPES, SUBTYPES_PATH, SubType, paper_subtypes
from corpora.papers.validator import INVALID_PREFIXES, SameMaths, compiles, tex_engine, validate
from storage.schemas import ITEM_SCHEMA, TRUTH_SCHEMA, table_from_rows

PAYLOAD_MAIN = "main.tex"
MAX_RULE_CANDIDATES = 60


@dataclass(frozen=True)
class Injection:
    """One injected error. `start`/`end`/`original`/`injected` are the context window used to place
    the edit uniquely (often ~20 characters for a 1-character change); `changed_start`/`changed_end`
    are the offsets in the copy's file of exactly the characters the edit changed (a diff of the
    window's old and new text; equal for a pure deletion), `changed_original`/`changed_injected`
    their old and new text. Detection matching uses the changed span (issue 15)."""

    injection_id: str
    error_type: str
    severity: str
    subtype: str
    file: str
    start: int
    end: int
    original: str
    injected: str
    rationale: str
    mechanism: str
    changed_start: int = -1
    changed_end: int = -1
    changed_original: str = ""
    changed_injected: str = ""


def changed_span(original: str, injected: str) -> tuple[int, int, int, int]:
    """(old_start, old_end, new_start, new_end): the region that differs, from the first to the last
    difference a character diff (difflib) finds between the two texts."""
    ops = [op for op in difflib.SequenceMatcher(None, original, injected, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not ops:
        return 0, 0, 0, 0
    return ops[0][1], ops[-1][2], ops[0][3], ops[-1][4]


@dataclass
class PaperCopy:
    paper_id: str
    copy: int
    files: dict[str, str]
    injections: list[Injection]
    skipped: list[dict[str, str]]
    invalid_draws: dict[str, int] = field(default_factory=dict)
    """Draws rejected by the meaning check (issue 15), by reason; each was re-drawn."""
    draws: dict[str, int] = field(default_factory=dict)
    """attempts (every draw validated), invalid (rejected by the meaning or label check), redrawn (invalid
    draws in cells a later draw filled), unfilled (invalid draws in cells that ended skipped),
    substituted (cells filled by another sub-type than the one drawn), stand_ins (of those, by a rule stand-in)."""
    substituted: list[dict[str, Any]] = field(default_factory=list)
    """Cells filled by another sub-type than the drawn one: {error_type, severity, drawn, filled_by, stand_in, reason}."""


class _CopyBuilder:
    """Applies validated edits to one copy, keeping every recorded offset right."""

    def __init__(self, paper: LatexPaper, copy: int, engine: str | None, same_maths: SameMaths | None = None) -> None:
        self.paper, self.copy, self.engine, self.same_maths = paper, copy, engine, same_maths
        self.files = dict(paper.files)
        self.records: list[dict[str, Any]] = []
        self.invalid: Counter[str] = Counter()
        """Draws rejected as no meaningful printed change, by reason (re-drawn; reported in the truth)."""
        self.attempts = 0

    def try_apply(self, proposal: Proposal, subtype: SubType | None = None) -> str | None:
        """Apply `proposal` if valid (and, given its `subtype`, the error that sub-type names); the
        rejection reason otherwise."""
        self.attempts += 1
        taken = [(r["file"], r["start"], r["end"]) for r in self.records]
        check = (lambda p: label_mismatch(self.paper, p, subtype)) if subtype is not None else None
        result = validate(self.files, self.paper.compiled, proposal, taken, self.paper.main_file, self.engine,
                          self.same_maths, label_check=check)  # fmt: skip
        if not result.ok:
            if (result.reason or "").startswith(INVALID_PREFIXES):
                self.invalid[re.sub(r"'[^']*'", "…", result.reason.split(": ", 1)[1])[:80]] += 1
            return result.reason
        text = self.files[proposal.file]
        start = text.index(proposal.original)
        delta = len(proposal.injected) - len(proposal.original)
        for r in self.records:
            if r["file"] == proposal.file and r["start"] >= start + len(proposal.original):
                for key in ("start", "end", "changed_start", "changed_end"):
                    r[key] += delta
        self.files[proposal.file] = text[:start] + proposal.injected + text[start + len(proposal.original) :]
        o1, o2, n1, n2 = changed_span(proposal.original, proposal.injected)
        self.records.append({"file": proposal.file, "start": start, "end": start + len(proposal.injected),
                             "original": proposal.original, "injected": proposal.injected,
                             "rationale": proposal.rationale, "changed_start": start + n1, "changed_end": start + n2,
                             "changed_original": proposal.original[o1:o2],
                             "changed_injected": proposal.injected[n1:n2]})  # fmt: skip
        return None


async def _inject_one(builder: _CopyBuilder, subtype: SubType, rng, proposer: LLMProposer | None,
                      candidates_cache: dict[str, list[Proposal]], max_llm_attempts: int) -> tuple[dict | None, str]:  # fmt: skip
    """Try one sub-type; (record, "") on success, (None, reason) otherwise."""
    if subtype.mechanism == "rule":
        if subtype.rule not in candidates_cache:
            candidates_cache[subtype.rule] = RULES[subtype.rule](builder.paper)
        cands = list(candidates_cache[subtype.rule])
        if not cands:
            return None, "no eligible place in the paper"
        order = list(range(len(cands)))
        rng.shuffle(order)
        order.sort(key=lambda i: cands[i].priority)
        reasons: list[str] = []
        for i in order[:MAX_RULE_CANDIDATES]:
            reason = builder.try_apply(cands[i], subtype)
            if reason is None:
                return builder.records[-1], ""
            reasons.append(reason)
        return None, f"all {len(reasons)} candidates rejected (last: {reasons[-1]})"
    if proposer is None:
        return None, "needs the LLM proposer and none was given"
    rejected: list[str] = []
    reg = paper_subtypes()
    for _ in range(max_llm_attempts):
        try:
            proposal = await proposer.propose(builder.files, builder.paper.compiled, subtype, reg.output_schema, rejected)
        except ProposalParseError as exc:
            rejected.append(f"unparseable answer: {exc}")
            continue
        except Exception as exc:  # issue 15: a proposer failure skips this cell (recorded), never the corpus
            return None, f"proposer failed: {type(exc).__name__}: {exc}"
        reason = builder.try_apply(proposal, subtype)
        if reason is None:
            return builder.records[-1], ""
        rejected.append(reason)
    return None, f"{max_llm_attempts} proposals rejected (last: {rejected[-1] if rejected else '-'})"


async def build_paper_copies(paper: LatexPaper, seed: int, proposer: LLMProposer | None = None,
                             variant: str | None = None, engine: str | None = None,
                             max_llm_attempts: int = 3, same_maths: SameMaths | None = None) -> list[PaperCopy]:  # fmt: skip
    """Copy 0 (clean) and copies 1-3 (injected) of one paper."""
    reg = paper_subtypes()
    schedule = severity_schedule(paper.paper_id, seed)
    copies = [PaperCopy(paper.paper_id, 0, dict(paper.files), [], [])]
    cache: dict[str, list[Proposal]] = {}
    for k, severities in schedule.items():
        builder = _CopyBuilder(paper, k, engine, same_maths)
        applied: list[tuple[str, str, SubType, dict[str, Any]]] = []
        skipped: list[dict[str, str]] = []
        substituted: list[dict[str, Any]] = []
        draws = {"attempts": 0, "invalid": 0, "redrawn": 0, "unfilled": 0}
        for error_type in ERROR_TYPES:
            invalid_before = sum(builder.invalid.values())
            severity = severities[error_type]
            rng = paper_rng(seed, paper.paper_id, f"copy-{k}", error_type)
            options = reg.for_combination(error_type, severity, variant)
            first = rng.choice(options)
            rest = [s for s in options if s is not first]
            rng.shuffle(rest)
            rest.sort(key=lambda s: s.mechanism != "rule")
            # issue 21: a cell no sub-type of its combination fills gets a rule stand-in of the same
            # type and severity before it is skipped (an LLM sub-type without a proposer, say)
            stand_ins = reg.stand_ins(error_type, severity)
            rng.shuffle(stand_ins)
            reasons: list[str] = []
            for subtype in [first, *rest, *stand_ins]:
                record, reason = await _inject_one(builder, subtype, rng, proposer, cache, max_llm_attempts)
                if record is not None:
                    applied.append((error_type, severity, subtype, record))
                    draws["redrawn"] += sum(builder.invalid.values()) - invalid_before
                    if subtype is not first:
                        substituted.append({"error_type": error_type, "severity": severity, "drawn": first.name,
                                            "filled_by": subtype.name, "stand_in": subtype.stands_in_for is not None,
                                            "reason": "; ".join(reasons)})  # fmt: skip
                    break
                reasons.append(f"{subtype.name}: {reason}")
            else:
                draws["unfilled"] += sum(builder.invalid.values()) - invalid_before
                skipped.append({"error_type": error_type, "severity": severity, "subtype": first.name,
                                "reason": "; ".join(reasons)})  # fmt: skip
        # records are shifted in place by later edits of the same file, so read them only now
        injections = [
            Injection(injection_id=f"{paper.paper_id}/copy-{k}/{n}", error_type=t, severity=sev, subtype=st.name,
                      mechanism=st.mechanism, **record)
            for n, (t, sev, st, record) in enumerate(applied, start=1)
        ]  # fmt: skip
        draws.update(attempts=builder.attempts, invalid=sum(builder.invalid.values()), substituted=len(substituted),
                     stand_ins=sum(s["stand_in"] for s in substituted))  # fmt: skip
        copies.append(PaperCopy(paper.paper_id, k, builder.files, injections, skipped, dict(builder.invalid), draws,
                                substituted))  # fmt: skip
    return copies


def _payload_name(paper: LatexPaper, rel: str) -> str:
    if rel == paper.main_file and PAYLOAD_MAIN not in paper.files:
        return PAYLOAD_MAIN
    return rel


def copy_rows(paper: LatexPaper, copy: PaperCopy, corpus: str, engine: str | None) -> tuple[dict, dict]:
    """The item row and truth row of one copy (contract of issue 7)."""
    item_id = f"{copy.paper_id}/copy-{copy.copy}"
    files = {_payload_name(paper, rel): text for rel, text in copy.files.items()}
    payload = {"paper_id": copy.paper_id, "copy": copy.copy, "main_file": _payload_name(paper, paper.main_file),
               "files": files}  # fmt: skip
    injections = [{**asdict(i), "file": _payload_name(paper, i.file)} for i in copy.injections]
    extra = {"paper_id": copy.paper_id, "copy": copy.copy, "clean": copy.copy == 0, "injections": injections,
             "skipped": copy.skipped, "tex_engine": engine}  # fmt: skip
    if copy.copy:
        extra["invalid_draws"] = copy.invalid_draws
        extra["draws"] = copy.draws
        extra["substituted"] = copy.substituted
    item = {"item_id": item_id, "kind": "paper_copy", "corpus": corpus, "split": None,
            "payload_json": json.dumps(payload, sort_keys=True, ensure_ascii=False), "source": str(paper.root)}  # fmt: skip
    truth = {"item_id": item_id, "label": None, "extra_json": json.dumps(extra, sort_keys=True, ensure_ascii=False)}
    return item, truth


async def abuild_paper_audit_corpus(paper_dirs: Iterable[str | Path], seed: int, proposer: LLMProposer | None = None,
                                    corpus: str = "paper_audit", variant: str | None = None,
                                    check_compile: bool = True, max_concurrent_papers: int = 8,
                                    same_maths: SameMaths | None = None) -> LoadedCorpus:  # fmt: skip
    """Async form of `build_paper_audit_corpus` (for callers already inside an event loop)."""
    engine = tex_engine() if check_compile else None
    items, truth = [], []
    digest = hashlib.sha256(f"{seed}|{variant}".encode())
    # Issue 15: outputs made by other injector code, validator or proposer are another corpus.
    digest.update(injector_code_version().encode() + proposer_config(proposer).encode()
                  + (b"|maths-sampled" if same_maths is not None else b""))
    papers, errors, failures = _load_papers(paper_dirs)
    engines = [engine if engine and compiles(p.files, p.main_file, engine) else None for p in papers]
    gate = asyncio.Semaphore(max_concurrent_papers)

    async def one(paper: LatexPaper, use_engine: str | None) -> list[PaperCopy]:
        async with gate:  # papers overlap only while waiting on the proposer
            return await build_paper_copies(paper, seed, proposer, variant, use_engine, same_maths=same_maths)

    built = await asyncio.gather(*(one(p, e) for p, e in zip(papers, engines, strict=True)))
    for paper, use_engine, copies in zip(papers, engines, built, strict=True):
        for rel in sorted(paper.files):
            digest.update(rel.encode() + b"\0" + paper.raw_bytes(rel))
        for copy in copies:
            item, t = copy_rows(paper, copy, corpus, use_engine)
            items.append(item)
            truth.append(t)
    digest.update(SUBTYPES_PATH.read_bytes())
    for failed in failures["papers_failed"]:  # a folder fixed later is another corpus
        digest.update(json.dumps(failed, sort_keys=True).encode())
    summary = {"seed": seed, "papers": len(papers) + len(failures["papers_failed"]), **failures}
    return LoadedCorpus(corpus, digest.hexdigest()[:12], None, table_from_rows(items, ITEM_SCHEMA),
                        table_from_rows(truth, TRUTH_SCHEMA), errors, summary)  # fmt: skip


_CODE = ("audit_corpus.py", "label_check.py", "injectors.py", "injectors_core.py", "injectors_math.py", "injectors_numerics.py",
         "injectors_prose.py", "llm_proposer.py", "schedule.py", "subtypes.py", "validator.py", "latex_paper.py")


def injector_code_version() -> str:
    """Hash of the code that makes injections (injectors, proposer prompt, validator, loader)."""
    h = hashlib.sha256()
    here = Path(__file__).parent
    for name in _CODE:
        path = here / name
        h.update(name.encode() + b"\0" + (path.read_bytes() if path.exists() else b""))
    return h.hexdigest()[:12]


def proposer_config(proposer: LLMProposer | None) -> str:
    """The proposer's model and sampling parameters ("none" without one)."""
    if proposer is None:
        return "proposer:none"
    model = getattr(proposer.gateway, "model", type(proposer.gateway).__name__)
    return "proposer:" + json.dumps({"model": model, "params": proposer.params}, sort_keys=True, default=str)


def _load_papers(paper_dirs: Iterable[str | Path]) -> tuple[list[LatexPaper], list[LoadError], dict[str, list]]:
    """One paper per distinct folder; ids are folder names, suffixed `~2`, `~3`... when two folders share one.

    A folder listed twice is loaded once (auditing it twice would pay twice for one paper); paths
    the papers name but that were refused, missing, nested too deep or too large are returned as
    load errors (no item is lost to them). Issue 21: a folder that cannot be loaded (no main file, a
    refused main file, an unreadable folder) is that paper's failure, not the run's: it is left out,
    named in the load errors and in `papers_failed`; each `\\input`/`\\include` file that is missing
    is named (folder, file, line) in `papers_missing_inputs` and the paper is injected from what loaded.
    """
    papers: list[LatexPaper] = []
    errors: list[LoadError] = []
    failures: dict[str, list] = {"papers_failed": [], "papers_missing_inputs": []}
    seen: dict[Path, str] = {}
    taken: set[str] = set()
    for d in paper_dirs:
        real = Path(d).resolve()
        if real in seen:
            errors.append(LoadError(str(d), 0, f"paper folder listed twice (already loaded as '{seen[real]}'): loaded once"))
            continue
        base = paper_id = Path(d).name
        n = 1
        while paper_id in taken:
            n += 1
            paper_id = f"{base}~{n}"
        taken.add(paper_id)
        seen[real] = paper_id
        try:
            paper = load_latex_paper(d, paper_id=paper_id)
        except (OSError, ValueError) as exc:  # FileNotFoundError: no main file; ValueError: main file refused
            errors.append(LoadError(str(d), 0, f"paper '{paper_id}' not loaded: {exc}"))
            failures["papers_failed"].append({"paper": paper_id, "folder": str(d), "reason": str(exc)})
            continue
        papers.append(paper)
        failures["papers_missing_inputs"] += [{"paper": paper_id, "folder": str(d), "file": w.file, "line": w.line,
                                               "missing": w.message} for w in paper.missing_at]  # fmt: skip
        errors.extend(LoadError(str(Path(d) / r.file), r.line, f"'{r.target}' refused: {r.reason}") for r in paper.refused)
        errors.extend(LoadError(str(Path(d) / w.file), w.line, w.message) for w in paper.warnings)
        errors.extend(LoadError(str(Path(d) / rel), 0, why) for rel, why in paper.index.skipped.items())
    return papers, errors, failures


def build_paper_audit_corpus(paper_dirs: Iterable[str | Path], seed: int, proposer: LLMProposer | None = None,
                             corpus: str = "paper_audit", variant: str | None = None,
                             check_compile: bool = True, same_maths: SameMaths | None = None) -> LoadedCorpus:  # fmt: skip
    """Items and truth of a paper-audit corpus: 4 copies per paper (see the module docstring).

    Args:
        paper_dirs: LaTeX project folders, one paper each (folder name = paper id).
        seed: schedule, sub-type and candidate draws depend only on (seed, paper id).
        proposer: an `LLMProposer` for LLM sub-types; None falls back to rule sub-types.
        corpus: corpus name written on every item.
        variant: None, or "ml" to use the ML registry variant (shape non-conformability).
        check_compile: compile edited copies when a TeX engine is on the PATH and the clean copy compiles.
        same_maths: maths-equivalence test for the validator's meaning check
            (`checkers.equivalence.same_at_sample_points`; jobs pass it, corpora cannot import checkers).
    """
    return asyncio.run(abuild_paper_audit_corpus(paper_dirs, seed, proposer, corpus, variant, check_compile,
                                                 same_maths=same_maths))

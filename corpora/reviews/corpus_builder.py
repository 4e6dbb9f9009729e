"""Build a review-hallucination corpus: per source review one clean copy and injected copies.

HalluPeer §4 / appendix I as a seeded schedule. For each source review (its own stream,
`random.Random(f"{seed}:{review_id}")`, so reviews can be built in any order or in parallel):
screening gives the anchors each sentence can take (`screening.screen_sentence`); each injected
copy gets `n` injections (`injections_per_copy`, drawn), each into a different sentence. An
injection attempt draws an anchor among those some unused sentence can take, then a sentence, then
a template: the anchor's rule injector when it has a place to edit (the leaf follows the edit),
else the LLM injector with a leaf drawn from the anchor's leaves, after the feasibility check (a
leaf Check_M refuses leaves the anchor's other leaves open for that sentence). A
result equivalent to the original (`equivalence.EquivalenceVerifier`) is discarded, and so is an
edit an earlier copy of the same review already holds (same sentence, same result): the copies of
a review never repeat an injection, and a copy draws first among sentences no earlier copy edited. Up to
`max_attempts` attempts per injection; a copy that gets no injection is not emitted (recorded).

Truth per copy: the injections with their exact character span in the injected review (changed
tokens only, `changes.change_span`), `sentence_labels` for every sentence, `sentence_types` =
the anchor of each injected sentence. Sentence boundaries of an injected copy are the source's,
shifted, so sentence indices line up across the copies of a review.

Grounding (`BuildConfig.require_grounding`, on by default; `grounding.py`): a rule anchor edits only a
value the paper states (the number with its context noun, the name, the year) in a sentence about
the paper; a (sentence, anchor) pair that screening would open but grounding closes counts as
`ungrounded`. A paper given only by its abstract leaves few places: that is the point. The edit
itself must be one the paper refutes (`grounding.edit_refutable`): its new value is not also what the
paper states there nor written elsewhere in the review; a sentence where six draws find none counts
as `unrefutable`.

Counts per anchor (`InjectionCounts`): screened ((sentence, anchor) pairs that passed screening),
ungrounded (pairs closed by grounding alone),
attempts (edits produced), unrefutable (rule edits the paper could not refute, given up), equivalent (discarded), duplicate (an earlier copy's injection, discarded),
infeasible (no injector, no place, or Check_M said no), parse_failures and rejected (LLM), kept.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from corpora.reviews.changes import change_span
from corpora.reviews.clauses import continues_hedge
from corpora.reviews.equivalence import EquivalenceVerifier
from corpora.reviews.grounding import REPORTING_ASPECTS, edit_refutable
from corpora.reviews.ingest import ReviewSource
from corpora.reviews.llm_injector import InjectionParseError, InjectionRejected, LLMInjector
from corpora.reviews.records import ReviewCopy, ReviewInjection, ReviewSentence, ReviewTruth
from corpora.reviews.rule_injectors import Candidate, RuleEdit, rule_edit
from corpora.reviews.screening import LLMFeasibilityCheck, rule_places, screen_sentence
from corpora.reviews.segmentation import check_offsets
from corpora.reviews.taxonomy import ReviewTaxonomy, review_taxonomy

INJECTION_RULES_VERSION = 13
"""Bumped whenever screening or the rule injectors change what a build produces (2: the validity rules
of issue 22; 3: the fixes found on the held-out PeerRead reviews: identifiers, names, citations the
paper never makes, hypernyms, metrics of another task, articles; 4: subscripts, fellow reviewers,
rating edits, sections in parentheses, self-counts, spelling variants; 5: formula numbers, names in
title case, articles before numbers; 6: grounding, `BuildConfig.require_grounding`; 7: refutable
edits (`grounding.edit_refutable`), small counts of the same thing, swapped-in names the paper never writes;
8: from held-out batch 7: no recency word nor the paper's own names, no name written twice in the sentence,
no number tied to the sentence's others by arithmetic, no count whose items the sentence lists, no
sentence about the field at large; 9: from held-out batch 8 and the ReviewCritique labels: a year
grounded by the paper's citation of a name the sentence gives, no bound or approximation ("over 40"),
no model beside its size, no value the review states again elsewhere, items listed in parentheses), so a corpus built by other rules gets another version and a
run never resumes on it."""

COUNT_KEYS = ("screened", "ungrounded", "attempts", "unrefutable", "equivalent", "duplicate", "infeasible",
              "parse_failures", "rejected", "kept")


@dataclass(frozen=True)
class BuildConfig:
    seed: int = 0
    injected_copies: int = 1
    """Injected copies per source review (each beside the one clean copy)."""
    injections_per_copy: tuple[int, int] = (1, 2)
    """Fewest and most injections in one injected copy (drawn uniformly, inclusive)."""
    max_attempts: int = 8
    """Attempts per injection before it is given up."""
    anchors: tuple[str, ...] | None = None
    """Restrict injection to these anchors (None: all nine)."""
    prefer_rules: bool = True
    """Use an anchor's rule injector when it has a place to edit, even when an LLM is available."""
    concurrency: int = 8
    """Reviews built at once (LLM calls in flight); does not change the result."""
    llm_model: str | None = None
    """The model behind the LLM injector/checks, recorded in the corpus version (None: rules only)."""
    require_grounding: bool = True
    """Rule anchors edit only what the paper states, in sentences about the paper (`grounding.py`)."""

    def __post_init__(self) -> None:
        lo, hi = self.injections_per_copy
        if not 1 <= lo <= hi:
            raise ValueError(f"injections_per_copy {self.injections_per_copy}: need 1 <= min <= max")
        if self.injected_copies < 0 or self.max_attempts < 1:
            raise ValueError("injected_copies must be >= 0 and max_attempts >= 1")


@dataclass
class InjectionCounts:
    per_anchor: dict[str, Counter] = field(default_factory=dict)

    def add(self, anchor: str, key: str, n: int = 1) -> None:
        self.per_anchor.setdefault(anchor, Counter())[key] += n

    def total(self, key: str) -> int:
        return sum(c[key] for c in self.per_anchor.values())

    def merge(self, other: InjectionCounts) -> None:
        for anchor, counter in other.per_anchor.items():
            self.per_anchor.setdefault(anchor, Counter()).update(counter)

    def as_dict(self) -> dict:
        return {
            "total": {k: self.total(k) for k in COUNT_KEYS},
            "per_anchor": {a: {k: c[k] for k in COUNT_KEYS} for a, c in sorted(self.per_anchor.items())},
        }


@dataclass
class ReviewCorpus:
    name: str
    version: str
    copies: list[ReviewCopy]
    truths: list[ReviewTruth]
    counts: InjectionCounts
    skipped: list[dict] = field(default_factory=list)
    """Injected copies not emitted, with the reason."""
    unavailable_anchors: tuple[str, ...] = ()
    """Anchors left out because no injector could make them (no LLM and no rule injector)."""


_ONE_REVIEW_DEFECTS = (ArithmeticError, LookupError, ValueError, TypeError, re.error)
"""What a rule may raise on text no one foresaw (a float power overflowing on "1.7M parameters"); a
provider's or the budget's errors are none of these and still stop the build."""


@dataclass
class _Pending:
    sentence_index: int
    anchor: str
    leaf: str | None
    injected_sentence: str
    injector: str


_LEAF_INFEASIBLE = "leaf infeasible"
_EDIT_DRAWS = 6
"""Rule edits drawn at a sentence before it is given up as unrefutable."""
_FAILED = "failed"


class ReviewInjectionBuilder:
    """Screening, feasibility, injection and verification for one corpus build."""

    def __init__(self, taxonomy: ReviewTaxonomy | None = None, config: BuildConfig | None = None,
                 llm_injector: LLMInjector | None = None, feasibility: LLMFeasibilityCheck | None = None,
                 verifier: EquivalenceVerifier | None = None) -> None:  # fmt: skip
        self.taxonomy = taxonomy or review_taxonomy()
        self.config = config or BuildConfig()
        self.llm = llm_injector
        self.feasibility = feasibility
        self.verifier = verifier or EquivalenceVerifier()
        anchors = self.config.anchors or tuple(a.name for a in self.taxonomy.anchors)
        for a in anchors:
            self.taxonomy.anchor(a)
        # Without an LLM injector only anchors with a rule injector can be injected at all; the
        # others are reported as unavailable rather than counted as infeasible at every attempt.
        self.unavailable = tuple(a for a in anchors if llm_injector is None and not self.taxonomy.anchor(a).rule_injector)
        self.anchors = tuple(a for a in anchors if a not in self.unavailable)

    def screen(self, copy: ReviewCopy, counts: InjectionCounts | None = None) -> dict[int, tuple[str, ...]]:
        """The anchors each sentence can take; with `counts`, the pairs grounding closed are counted."""
        out = {}
        grounding = self.config.require_grounding
        rules_edit = self.config.prefer_rules or self.llm is None  # a rule anchor's edit is the rule's
        for s in copy.sentences:
            allowed = screen_sentence(s.text, s.aspect, self.taxonomy, copy.paper_text, self.anchors, grounding)
            if s.index and continues_hedge(copy.sentences[s.index - 1].text, s.text):
                allowed = tuple(a for a in allowed if self.taxonomy.anchor(a).edits_hedges)
            if grounding and rules_edit and s.aspect is not None and s.aspect not in REPORTING_ASPECTS:
                # the reviewer's critique, related work, other remarks: no rule edit (grounding.REPORTING_ASPECTS)
                allowed = tuple(a for a in allowed if not self.taxonomy.anchor(a).rule_injector)
            if allowed:
                out[s.index] = tuple(allowed)
            if grounding and counts is not None:
                for a in screen_sentence(s.text, s.aspect, self.taxonomy, copy.paper_text, self.anchors):
                    if a not in allowed:
                        counts.add(a, "ungrounded")
        return out

    def _count_screened(self, screened: dict[int, tuple[str, ...]], counts: InjectionCounts) -> None:
        for anchors in screened.values():
            for a in anchors:
                counts.add(a, "screened")

    async def _attempt(self, copy: ReviewCopy, index: int, anchor: str, rng: random.Random, counts: InjectionCounts,
                       leaves_tried: set[str]) -> _Pending | str:  # fmt: skip
        """The edit, or why there is none: `_LEAF_INFEASIBLE` (Check_M refused this leaf; another
        leaf of the anchor may fit the sentence) or `_FAILED`."""
        sentence = copy.sentences[index]
        spec = self.taxonomy.anchor(anchor)
        places = rule_places(spec, sentence.text, copy.paper_text, require_grounding=self.config.require_grounding)
        leaves = [n.name for n in self.taxonomy.leaves(anchor)]
        if places and (self.config.prefer_rules or self.llm is None):
            counts.add(anchor, "attempts")
            edit = self._refutable_rule_edit(copy, sentence, spec.rule_injector, places, rng)
            if edit is None:
                counts.add(anchor, "unrefutable")
                return _FAILED
            leaf = edit.leaf if edit.leaf in leaves else None
            return _Pending(index, anchor, leaf, edit.apply(sentence.text), f"rule:{spec.rule_injector}")
        if self.llm is None:
            counts.add(anchor, "infeasible")
            return _FAILED
        open_leaves = [name for name in leaves if name not in leaves_tried]
        leaf = rng.choice(open_leaves) if open_leaves else None
        if leaf is not None:
            leaves_tried.add(leaf)
        path = self.taxonomy.path_of(anchor, leaf)
        instruction = self.taxonomy.instruction(anchor, leaf)
        if self.feasibility is not None and not await self.feasibility.feasible(sentence.text, sentence.aspect, path, instruction):
            counts.add(anchor, "infeasible")
            return _LEAF_INFEASIBLE
        counts.add(anchor, "attempts")
        try:
            injected = await self.llm.inject(sentence.text, path, spec.description, instruction)
        except InjectionParseError:
            counts.add(anchor, "parse_failures")
            return _FAILED
        except InjectionRejected:
            counts.add(anchor, "rejected")
            return _FAILED
        return _Pending(index, anchor, leaf, injected, "llm")

    def _refutable_rule_edit(self, copy: ReviewCopy, sentence: ReviewSentence, injector: str,
                             places: list[Candidate], rng: random.Random) -> RuleEdit | None:  # fmt: skip
        """A rule edit at one of `places`; with grounding, one the paper refutes (`edit_refutable`:
        the new value is neither what the paper states there nor written elsewhere in the review),
        drawn up to `_EDIT_DRAWS` times; None when no draw is."""
        if not self.config.require_grounding:
            return rule_edit(injector, sentence.text, rng.choice(places), rng, copy.paper_text)
        rest = copy.review_text[: sentence.start] + "\n" + copy.review_text[sentence.end :]
        for _ in range(_EDIT_DRAWS):
            cand = rng.choice(places)
            edit = rule_edit(injector, sentence.text, cand, rng, copy.paper_text)
            original = sentence.text[cand.start : cand.end]
            if edit_refutable(cand.kind, edit.apply(sentence.text), *edit.value_span(), copy.paper_text, rest, original):
                return edit
        return None

    async def inject_copy(self, copy: ReviewCopy, screened: dict[int, tuple[str, ...]], n: int,
                          rng: random.Random, counts: InjectionCounts,
                          earlier: set[tuple[int, str]] | None = None) -> list[_Pending]:  # fmt: skip
        """`earlier`: (sentence index, injected sentence) of the review's earlier copies, never repeated."""
        earlier = earlier if earlier is not None else set()
        edited_before = {i for i, _ in earlier}
        done: list[_Pending] = []
        for _ in range(n):
            used = {p.sentence_index for p in done}
            tried: set[tuple[int, str]] = set()
            leaves_tried: dict[tuple[int, str], set[str]] = {}
            for _attempt in range(self.config.max_attempts):
                open_pairs = [(i, a) for i, anchors in sorted(screened.items()) if i not in used
                              for a in anchors if (i, a) not in tried]  # fmt: skip
                fresh = [(i, a) for i, a in open_pairs if i not in edited_before]
                open_pairs = fresh or open_pairs
                if not open_pairs:
                    break
                anchor = rng.choice(sorted({a for _, a in open_pairs}, key=self.anchors.index))
                index = rng.choice([i for i, a in open_pairs if a == anchor])
                tried_here = leaves_tried.setdefault((index, anchor), set())
                pending = await self._attempt(copy, index, anchor, rng, counts, tried_here)
                # Check_M judges a template (sentence, leaf): when it refuses a leaf, the anchor's
                # other leaves stay open for this sentence (HalluPeer algorithm 2 tries each template)
                other_leaves = any(n.name not in tried_here for n in self.taxonomy.leaves(anchor))
                if not (pending == _LEAF_INFEASIBLE and other_leaves):
                    tried.add((index, anchor))
                if not isinstance(pending, _Pending):
                    continue
                if (index, pending.injected_sentence) in earlier:
                    counts.add(anchor, "duplicate")
                    continue
                if await self.verifier.equivalent(copy.sentences[index].text, pending.injected_sentence):
                    counts.add(anchor, "equivalent")
                    continue
                counts.add(anchor, "kept")
                done.append(pending)
                break
        return sorted(done, key=lambda p: p.sentence_index)

    async def build_review(self, source: ReviewSource) -> tuple[list[ReviewCopy], list[ReviewTruth], InjectionCounts, list[dict]]:
        base = source.copy
        rng = random.Random(f"{self.config.seed}:{base.review_id}")
        counts = InjectionCounts()
        clean = replace(base, review_id=f"{base.review_id}#clean")
        labels = {s.index: False for s in base.sentences}
        copies, truths, skipped = [clean], [ReviewTruth(clean.review_id, base.paper_id, False, (), dict(labels), {})], []
        screened = self.screen(base, counts)
        self._count_screened(screened, counts)
        earlier: set[tuple[int, str]] = set()
        for k in range(1, self.config.injected_copies + 1):
            n = rng.randint(*self.config.injections_per_copy)
            pending = await self.inject_copy(base, screened, n, rng, counts, earlier)
            earlier |= {(p.sentence_index, p.injected_sentence) for p in pending}
            copy_id = f"{base.review_id}#inj{k}"
            if not pending:
                skipped.append({"review_id": copy_id, "reason": "no feasible, non-equivalent injection"
                                + ("" if screened else " (no sentence passed screening)")})  # fmt: skip
                continue
            copy, truth = apply_injections(base, copy_id, pending)
            copies.append(copy)
            truths.append(truth)
        return copies, truths, counts, skipped

    async def build_async(self, sources: Sequence[ReviewSource], name: str = "review_injection") -> ReviewCorpus:
        gate = asyncio.Semaphore(self.config.concurrency)

        async def one(source: ReviewSource):
            async with gate:
                try:
                    return await self.build_review(source)
                except _ONE_REVIEW_DEFECTS as exc:  # a rule's defect on odd text costs this review's copies only
                    return self._failed_review(source, exc)

        results = await asyncio.gather(*(one(s) for s in sources))
        copies, truths, counts, skipped = [], [], InjectionCounts(), []
        for c, t, n, s in results:
            copies += c
            truths += t
            counts.merge(n)
            skipped += s
        version = corpus_version(sources, self.config, self.taxonomy)
        return ReviewCorpus(name, version, copies, truths, counts, skipped, self.unavailable)

    def build(self, sources: Sequence[ReviewSource], name: str = "review_injection") -> ReviewCorpus:
        return asyncio.run(self.build_async(sources, name))

    def _failed_review(self, source: ReviewSource, exc: Exception) -> tuple[list[ReviewCopy], list[ReviewTruth], InjectionCounts, list[dict]]:
        """A review whose injection raised: its clean copy only, and each injected copy skipped with the
        error, named by file and line, so the build goes on and the report says what was lost."""
        base = source.copy
        clean = replace(base, review_id=f"{base.review_id}#clean")
        truth = ReviewTruth(clean.review_id, base.paper_id, False, (), {s.index: False for s in base.sentences}, {})
        reason = f"injection failed ({source.source}:{source.line}): {type(exc).__name__}: {exc}"
        skipped = [{"review_id": f"{base.review_id}#inj{k}", "reason": reason, "error": True}
                   for k in range(1, self.config.injected_copies + 1)]  # fmt: skip
        return [clean], [truth], InjectionCounts(), skipped


def apply_injections(base: ReviewCopy, copy_id: str, pending: Sequence[_Pending]) -> tuple[ReviewCopy, ReviewTruth]:
    """The injected copy (sentences replaced, offsets shifted) and its truth with exact spans."""
    by_index = {p.sentence_index: p for p in pending}
    parts, sentences, injections = [], [], []
    cursor = shift = 0
    for s in base.sentences:
        parts.append(base.review_text[cursor : s.start])
        new_text = by_index[s.index].injected_sentence if s.index in by_index else s.text
        start = s.start + shift
        sentences.append(ReviewSentence(s.index, start, start + len(new_text), new_text, s.aspect))
        if s.index in by_index:
            p = by_index[s.index]
            os_, oe, ns, ne = change_span(s.text, new_text)
            injections.append(ReviewInjection(s.index, start + ns, start + ne, p.anchor, p.leaf,
                                              s.text[os_:oe], new_text[ns:ne], p.injector))  # fmt: skip
        parts.append(new_text)
        shift += len(new_text) - len(s.text)
        cursor = s.end
    parts.append(base.review_text[cursor:])
    text = "".join(parts)
    copy = ReviewCopy(copy_id, base.paper_id, text, tuple(sentences), base.paper_text)
    check_offsets(text, copy.sentences)
    for inj in injections:
        if text[inj.start : inj.end] != inj.injected:
            raise AssertionError(f"{copy_id}: injection span [{inj.start}, {inj.end}) does not hold its text")
    labels = {s.index: s.index in by_index for s in base.sentences}
    types = {p.sentence_index: p.anchor for p in pending}
    return copy, ReviewTruth(copy_id, base.paper_id, True, tuple(injections), labels, types)


def corpus_version(sources: Sequence[ReviewSource], config: BuildConfig, taxonomy: ReviewTaxonomy) -> str:
    """Changes with the source reviews, the build settings that change output, and the taxonomy."""
    h = hashlib.sha256()
    for s in sources:
        h.update(s.copy.review_id.encode())
        h.update(hashlib.sha256(s.copy.review_text.encode()).digest())
    settings = {"seed": config.seed, "copies": config.injected_copies, "n": list(config.injections_per_copy),
                "attempts": config.max_attempts, "anchors": config.anchors, "rules": config.prefer_rules,
                "llm": config.llm_model, "rule_version": INJECTION_RULES_VERSION,
                "grounding": config.require_grounding,
                "taxonomy": [taxonomy.name, taxonomy.version]}  # fmt: skip
    h.update(json.dumps(settings, sort_keys=True).encode())
    return h.hexdigest()[:12]


__all__ = ["COUNT_KEYS", "INJECTION_RULES_VERSION", "BuildConfig", "InjectionCounts", "ReviewCorpus", "ReviewInjectionBuilder", "apply_injections"]

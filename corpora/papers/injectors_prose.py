"""Rule injectors for general and citation errors in prose (appendix C.2.1 and C.2.4).

Word swaps run on the index's masked prose (maths, comments and command arguments blanked) and
keep the capitalisation of the word they replace. Reference edits change only the key of a
`\\ref`-like command. Notation drift changes the case of one symbol in one displayed equation.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from corpora.papers.injectors_core import Proposal, forbidden_regions, inside, proposal
from corpora.papers.latex_paper import LatexPaper, sentence_around
from storage.latex_comments import blank_comments

_METHOD = {"observed": "predicted", "observations": "simulations", "observational": "theoretical",
           "measured": "simulated", "measurements": "simulations", "empirical": "theoretical",
           "empirically": "theoretically", "theoretical": "empirical", "theoretically": "empirically",
           "experiments": "simulations", "experimental": "numerical", "simulations": "observations",
           "simulated": "measured", "numerical": "analytical", "analytical": "numerical",
           "analytic": "numerical", "proved": "conjectured", "derived": "assumed"}  # fmt: skip
_POLAR = {"upper": "lower", "increase": "decrease", "increases": "decreases", "increased": "decreased",
          "increasing": "decreasing", "decrease": "increase", "decreases": "increases",
          "decreased": "increased", "decreasing": "increasing", "higher": "lower", "larger": "smaller",
          "smaller": "larger", "outperform": "underperform",
          "outperforms": "underperforms", "outperformed": "underperformed", "improve": "degrade",
          "improves": "degrades", "improved": "degraded", "better": "worse", "worse": "better",
          "faster": "slower", "slower": "faster", "positive": "negative", "negative": "positive",
          "stronger": "weaker", "weaker": "stronger", "above": "below", "below": "above",
          "maximum": "minimum", "minimum": "maximum", "accurate": "inaccurate", "efficient": "inefficient",
          "robust": "fragile", "significant": "negligible", "reduces": "increases", "reduce": "increase"}  # fmt: skip
_HOMOPHONES = {"effect": "affect", "affect": "effect", "than": "then", "then": "than", "its": "it's",
               "their": "there", "whether": "weather", "principle": "principal", "principal": "principle",
               "lose": "loose", "complement": "compliment", "discrete": "discreet", "precede": "proceed",
               "accept": "except", "affects": "effects", "effects": "affects", "weather": "whether"}  # fmt: skip


def _cased(word: str, new: str) -> str:
    return new.capitalize() if word[:1].isupper() else new


def _word_swaps(paper: LatexPaper, table: dict[str, str], spans, why: str, lower_only: bool = False,
                fit: Callable[[str, int, int, str], str | None] | None = None) -> list[Proposal]:  # fmt: skip
    """Swap words of `table` inside the given (file, start, end) prose spans (`fit(text, start, end,
    word)`: the replacement in that place of the file's text, or None to leave the word)."""
    pattern = re.compile(r"(?<![\\\w'-])(" + "|".join(sorted(table, key=len, reverse=True)) + r")(?![\w'-])", re.I)
    out: list[Proposal] = []
    seen: set[tuple[str, int]] = set()
    for file, start, end in spans:
        masked = paper.index.masked[file]
        for m in pattern.finditer(masked, start, end):
            word = m.group(1)
            if (file, m.start()) in seen or word.lower() not in table or (word != word.lower() and not word.istitle()):
                continue
            if lower_only and word != word.lower():
                continue
            seen.add((file, m.start()))
            new = table[word.lower()]
            if word.lower() == "lower":
                new = "upper" if masked[m.end() : m.end() + 8].strip().startswith(("bound", "limit")) else "higher"
            if fit is not None and (new := fit(paper.files[file], m.start(), m.end(), word.lower())) is None:
                continue
            new = _cased(word, new)
            p = proposal(paper, file, m.start(), m.end(), new, f"{why} ('{word}' -> '{new}')")
            if p is not None:
                out.append(p)
    return out


def _cite_spans(paper: LatexPaper):
    return [(c.sentence.file, c.sentence.start, c.sentence.end) for c in paper.index.citations]


# A method word that is part of a name, not a method ("the 3D analytic signal" is the total gradient
# amplitude; "simulated annealing" is an optimiser): swapping it renames, misattributes nothing.
_TERMS_OF_ART_RE = re.compile(r"(?i)\b(?:analytic(?:al)? (?:signal|continuation|function)s?|simulated annealing|"
                              r"empirical (?:bayes|risk|distribution|covariance|cdf)|numerical (?:recipes|aperture))\b")


def _in_term_of_art(paper: LatexPaper, p: Proposal) -> bool:
    text = paper.files[p.file]
    at = text.find(p.original)
    return any(m.start() <= at + len(p.original) and at <= m.end()
               for m in _TERMS_OF_ART_RE.finditer(text, max(0, at - 40), at + len(p.original) + 40))  # fmt: skip


def cited_method_swap(paper: LatexPaper) -> list[Proposal]:
    return [p for p in _word_swaps(paper, _METHOD, _cite_spans(paper), "methodology of the cited work mis-categorised")
            if not _in_term_of_art(paper, p)]  # fmt: skip


def cited_direction_flip(paper: LatexPaper) -> list[Proposal]:
    return _word_swaps(paper, {**_POLAR, "lower": "higher"}, _cite_spans(paper), "cited conclusion reversed")


def abstract_polarity_flip(paper: LatexPaper) -> list[Proposal]:
    spans = [(a.file, a.start, a.end) for a in paper.index.abstract]
    return _word_swaps(paper, {**_POLAR, "lower": "higher"}, spans, "abstract claim reversed against the body")


def homophone_swap(paper: LatexPaper) -> list[Proposal]:
    spans = [(rel, 0, len(text)) for rel, text in paper.index.masked.items()]
    return _word_swaps(paper, _HOMOPHONES, spans, "homophone swap", lower_only=True)


def ref_label_typo(paper: LatexPaper) -> list[Proposal]:
    labels = paper.index.labels
    out = []
    for ref in paper.index.references:
        if ref.key not in labels:
            continue
        new = ref.key + "s" if ref.key + "s" not in labels else ref.key[:-1]
        if not new or new in labels:
            continue
        p = proposal(paper, ref.key_span.file, ref.key_span.start, ref.key_span.end, new,
                     f"reference key altered ({ref.key} -> {new}): no such label, renders as ??")  # fmt: skip
        if p is not None:
            out.append(p)
    return out


def ref_retarget(paper: LatexPaper) -> list[Proposal]:
    labels = sorted(paper.index.labels)
    out = []
    for ref in paper.index.references:
        if ref.key not in paper.index.labels:
            continue
        prefix = ref.key.split(":")[0] + ":" if ":" in ref.key else None
        same = [k for k in labels if k != ref.key and (prefix is None or k.startswith(prefix))]
        if prefix is None or not same:
            continue
        new = same[(same.index(next((k for k in same if k > ref.key), same[0]))) % len(same)]
        p = proposal(paper, ref.key_span.file, ref.key_span.start, ref.key_span.end, new,
                     f"cross-reference points at the wrong target ({ref.key} -> {new})")  # fmt: skip
        if p is not None:
            out.append(p)
    return out


_SYMBOL_RE = re.compile(r"(?<![\\a-zA-Z])([a-zA-Z])(?![a-zA-Z])")


def notation_drift(paper: LatexPaper) -> list[Proposal]:
    idx = paper.index
    usage: Counter[str] = Counter()
    for span in idx.display_math + idx.inline_math:
        usage.update(set(_SYMBOL_RE.findall(blank_comments(paper.files[span.file][span.start : span.end]))))
    out = []
    for span in idx.display_math:
        content = blank_comments(paper.files[span.file][span.start : span.end])
        regions = forbidden_regions(content) + [(m.start(), m.end()) for m in re.finditer(r"\\(?:begin|end)\{[^}]*\}", content)]
        done: set[str] = set()
        for m in _SYMBOL_RE.finditer(content):
            sym = m.group(1)
            if sym in done or sym in "deiT" or usage[sym] < 3 or usage[sym.swapcase()] > 0 or inside(m.start(), regions):
                continue
            if content[max(0, m.start() - 1)] in "^_" or content[max(0, m.start() - 2) : m.start()] in ("^{", "_{"):
                continue
            done.add(sym)
            p = proposal(paper, span.file, span.start + m.start(), span.start + m.end(), sym.swapcase(),
                         f"symbol {sym} written {sym.swapcase()} in one equation; the text keeps {sym}")  # fmt: skip
            if p is not None:
                out.append(p)
    return out


# Hedge and scope words and their universal forms (issue 21: rule stand-ins for the LLM sub-types
# sweeping_generalisation and conditional_claim_drop). Each swap overstates a claim the text qualifies.
# ("some", "most", "many", "few" are left out: "to some extent", "the most", "as many as", "a few" break.)
_HEDGES = {"often": "always", "usually": "always", "typically": "always", "generally": "always",
           "sometimes": "always", "likely": "certain", "suggests": "proves", "suggest": "prove",
           "indicates": "proves", "indicate": "prove", "approximately": "exactly", "roughly": "exactly",
           "partially": "fully", "partly": "fully", "rarely": "never"}  # fmt: skip
# Methodological qualifiers and their opposites (stand-in for methodological_qualifier_drift).
_QUALIFIERS = {"linear": "nonlinear", "nonlinear": "linear", "parametric": "nonparametric",
               "nonparametric": "parametric", "supervised": "unsupervised", "unsupervised": "supervised",
               "stochastic": "deterministic", "deterministic": "stochastic", "local": "global", "global": "local",
               "discrete": "continuous", "continuous": "discrete", "isotropic": "anisotropic",
               "anisotropic": "isotropic", "explicit": "implicit", "implicit": "explicit", "sparse": "dense",
               "dense": "sparse", "univariate": "multivariate", "multivariate": "univariate", "exact": "approximate",
               "approximate": "exact", "static": "dynamic", "dynamic": "static"}  # fmt: skip
_CONCLUSION_RE = re.compile(r"(?i)conclu|summary|discussion")


# issue 21, second round: a hedge swap must overstate a claim and stay grammatical.
_DETERMINER_BEFORE_RE = re.compile(r"(?i)\b(?:the|a|an|its|their|our|this|that|these|those|most|more|less|very)\s+$")
_MODAL_BEFORE_RE = re.compile(r"(?i)\b(?:will|would|may|might|could|can|should|shall|must|is|are|was|were|be|been)\s+$")
_NUMBER_AFTER_RE = re.compile(r"\s*(?:~|\$)?\s*[-+]?\d")
# "* indicates", "the dashed line indicates", "bold indicates": a legend says what a mark means.
_LEGEND_BEFORE_RE = re.compile(r"(?i)(?:^|[\s{(])(?:\*|\$[^$]{0,20}\$|\\dagger|bold(?:face)?|italics?|underlined?|"
                               r"(?:[a-z]+\s+)?(?:lines?|curves?|markers?|symbols?|colou?rs?|columns?|rows?|arrows?|"
                               r"asterisks?|boxes|box|bars?|regions?|shading|points?|dots?|crosses|circles))\s+$")


def _hedge_fit(text: str, start: int, end: int, word: str) -> str | None:
    """The replacement for hedge `word` at masked[start:end], or None where the swap overstates
    nothing or breaks the sentence: 'the likely structure' (an adjective), 'approximately 1.2
    million' (a rounded number called exact), '* indicates a model' (a legend), a `quoted' phrase."""
    before, after = text[max(0, start - 200) : start], text[end : end + 30]
    if word in ("approximately", "roughly") and _NUMBER_AFTER_RE.match(after):
        return None
    if word in ("indicates", "indicate", "suggests", "suggest") and _LEGEND_BEFORE_RE.search(before[-40:]):
        return None
    line = before[before.rfind("\n") + 1 :]
    if line.count("`") > line.count("'"):
        return None  # inside a `quoted' phrase: the paper reports it, does not claim it
    if word == "likely":
        if _DETERMINER_BEFORE_RE.search(before[-20:]):
            return None
        # "will likely alleviate" -> "will certainly alleviate"; "is likely to" -> "is certain to"
        return "certainly" if _MODAL_BEFORE_RE.search(before[-20:]) and not after.lstrip().startswith("to ") else "certain"
    return _HEDGES[word]


_OWN_CLAIM_RE = re.compile(r"(?i)\b(?:we|our|us|this (?:work|paper|study|article)|(?:the|this) (?:proposed )?(?:method|approach|model|algorithm|procedure)|the proposed)\b")


def cited_hedge_drop(paper: LatexPaper) -> list[Proposal]:
    return _word_swaps(paper, _HEDGES, _cite_spans(paper), "scope of a cited claim dropped", lower_only=True,
                       fit=_hedge_fit)  # fmt: skip


def _qualifier_fit(text: str, start: int, end: int, word: str) -> str | None:
    """None where the qualifier is a verb ("kernels can approximate any covariance"): "can exact" is no qualifier."""
    if re.search(r"(?i)\b(?:to|can|could|may|might|will|would|should|must)\s+$", text[max(0, start - 20) : start]):
        return None
    return _QUALIFIERS[word]


def cited_qualifier_swap(paper: LatexPaper) -> list[Proposal]:
    return _word_swaps(paper, _QUALIFIERS, _cite_spans(paper), "methodological qualifier of the cited work changed",
                       lower_only=True, fit=_qualifier_fit)  # fmt: skip


def hedge_to_certainty(paper: LatexPaper) -> list[Proposal]:
    """Hedge words of the paper's own claims (not in cited sentences); abstract and conclusions first."""
    idx = paper.index
    cited = [(c.sentence.file, c.sentence.start, c.sentence.end) for c in idx.citations]
    starts = sorted((s.file, s.start, title) for s, title in idx.sections)
    spans = [(rel, 0, len(text)) for rel, text in idx.masked.items()]
    out = []
    for p in _word_swaps(paper, _HEDGES, spans, "claim generalised beyond its scope", lower_only=True, fit=_hedge_fit):
        pos = paper.files[p.file].find(p.original)
        if any(f == p.file and a <= pos < b for f, a, b in cited):
            continue  # a cited claim is the citation sub-types' business
        s, e = sentence_around(paper.files[p.file], pos, pos + len(p.original))
        if not _OWN_CLAIM_RE.search(paper.files[p.file], s, e):
            continue  # background ("a CFD solver typically outputs"): no claim of the paper to overstate
        heading = [t for f, a, t in starts if f == p.file and a <= pos]
        in_front = any(a.file == p.file and a.start <= pos < a.end for a in idx.abstract)
        last = heading[-1] if heading else ""
        out.append(Proposal(p.file, p.original, p.injected, p.rationale,
                            0 if in_front or _CONCLUSION_RE.search(last) else 1))  # fmt: skip
    return out


RULES_PROSE = {
    "cited_hedge_drop": cited_hedge_drop,
    "cited_qualifier_swap": cited_qualifier_swap,
    "hedge_to_certainty": hedge_to_certainty,
    "cited_method_swap": cited_method_swap,
    "cited_direction_flip": cited_direction_flip,
    "abstract_polarity_flip": abstract_polarity_flip,
    "homophone_swap": homophone_swap,
    "ref_label_typo": ref_label_typo,
    "ref_retarget": ref_retarget,
    "notation_drift": notation_drift,
}

"""One perturbation per HALLMARK hallucination type: real reference in, hallucinated entry out.

A perturbation is a function `(source, ctx) -> Perturbed | None`, registered under its type name
with `@perturbation("type")`; None means the source does not fit the type (a preprint is needed,
a DOI, three or more authors ...). Each draws every random choice from `ctx.rng`, so a seeded
generator is reproducible. Donor works (whose metadata a perturbation borrows) come from
`ctx.pool` and are recorded, so audits can check what was mixed. The rules follow HALLMARK
appendix A.3 in spirit; the code and word lists are this project's own.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from corpora.citations import vocabulary as vocab
from corpora.citations.fields import join_authors, ordered, reference_fields
from corpora.citations.formatting import same_venue
from corpora.citations.normalization import normalize_text
from corpora.citations.real_reference import Reference
from storage.registry import Registry


@dataclass(frozen=True)
class Perturbed:
    """A hallucinated entry made from a source reference."""

    bibtex_type: str
    fields: dict[str, str]
    explanation: str
    generation_method: str
    """perturbation (single-field edits) or adversarial (template-assembled metadata), as HALLMARK names them."""
    donor_ids: tuple[str, ...] = ()
    """Other real works whose metadata went into the entry."""
    doi_resolves: bool | None = None
    """Whether the entry's DOI resolves (None when it has none)."""


@dataclass
class PerturbationContext:
    """What a perturbation may draw on."""

    rng: random.Random
    pool: tuple[Reference, ...]
    """All real references (donors are drawn from here, never the source itself)."""
    reference_year: int
    """The 'current year' a future date is counted from (fixed, so output is reproducible)."""
    known_titles: frozenset[str] = field(default_factory=frozenset)
    """Normalized titles of real works: fabricated titles must avoid them."""


Perturbation = Callable[[Reference, PerturbationContext], Perturbed | None]
PERTURBATIONS: Registry[Perturbation] = Registry("perturbation")


def perturbation(type_name: str) -> Callable[[Perturbation], Perturbation]:
    """Register a perturbation for a hallucination type (one per type)."""
    return PERTURBATIONS.register(type_name)


def _doi_state(fields: dict[str, str]) -> bool | None:
    return True if fields.get("doi") else None


def _acronym(words: str) -> str:
    letters = [w[0] for w in re.split(r"[\s-]+", words) if w and w[0].isalpha()]
    return "".join(letters).upper()[:6]


def fabricate_title(domain: str, ctx: PerturbationContext) -> str:
    """A plausible title for `domain` that is not the title of any known real work."""
    fillers = vocab.TITLE_FILLERS.get(domain, vocab.TITLE_FILLERS["ml"])
    for _ in range(50):
        parts = {k: ctx.rng.choice(v) for k, v in fillers.items()}
        parts["acronym"] = _acronym(f"{parts['adj']} {parts['noun']}")
        title = ctx.rng.choice(vocab.TITLE_TEMPLATES).format(**parts)
        if normalize_text(title) not in ctx.known_titles:
            return title
    raise RuntimeError("could not fabricate a title distinct from the known ones")


def fabricate_authors(ctx: PerturbationContext, n: int) -> list[str]:
    """n distinct plausible names from the given and family name pools."""
    families = ctx.rng.sample(vocab.FAMILY_NAMES, n)
    return [f"{ctx.rng.choice(vocab.GIVEN_NAMES)} {family}" for family in families]


def _other_venue(current: str | None, candidates: tuple[str, ...], rng: random.Random) -> str:
    options = [v for v in candidates if not same_venue(v, current)]
    return rng.choice(options)


def _real_venue_like(ref: Reference, rng: random.Random, exclude: str | None = None) -> tuple[str, str]:
    """(venue field, a real venue of the same kind) different from `exclude`."""
    if ref.venue_field == "journal":
        return "journal", _other_venue(exclude, vocab.REAL_JOURNALS.get(ref.domain, vocab.REAL_JOURNALS["ml"]), rng)
    return "booktitle", _other_venue(exclude, vocab.REAL_CONFERENCES, rng)


def _donor(source: Reference, ctx: PerturbationContext, accept: Callable[[Reference], bool]) -> Reference | None:
    same_domain = [r for r in ctx.pool if r.ref_id != source.ref_id and r.domain == source.domain and accept(r)]
    others = [r for r in ctx.pool if r.ref_id != source.ref_id and r.domain != source.domain and accept(r)]
    candidates = same_domain or others
    return ctx.rng.choice(candidates) if candidates else None


@lru_cache(maxsize=65536)
def _family_set(ref: Reference) -> frozenset[str]:
    return frozenset(normalize_text(f) for f in ref.family_names)


def _disjoint_authors(a: Reference, b: Reference) -> bool:
    return not _family_set(a) & _family_set(b)


# ---- tier 1 -------------------------------------------------------------------------------------


@perturbation("fabricated_doi")
def fabricated_doi(source: Reference, ctx: PerturbationContext) -> Perturbed | None:
    """Replace (or add) the DOI with one under an unassigned prefix, in one of four suffix styles."""
    rng = ctx.rng
    prefix = rng.choice(vocab.NONEXISTENT_DOI_PREFIXES)
    style = rng.choice(("path", "identifier", "year", "conference"))
    if style == "path":
        suffix = f"{rng.choice(vocab.DOI_PATH_STEMS)}.{source.year}.{rng.randint(1000, 999999)}"
    elif style == "identifier":
        suffix = "".join(rng.choice("abcdefghjkmnpqrstuvwxyz") for _ in range(3)) + f".{rng.randint(10000, 99999)}"
    elif style == "year":
        suffix = f"{source.year}.{rng.randint(10000, 99999)}"
    else:
        suffix = f"{rng.choice(vocab.DOI_CONFERENCE_TAGS)}.{source.year}.{rng.randint(100, 9999)}"
    doi = f"{prefix}/{suffix}"
    fields = ordered({**reference_fields(source), "doi": doi})
    return Perturbed(
        _bibtex_type(source), fields, f"DOI fabricated: {doi} does not resolve", "perturbation", (), doi_resolves=False
    )


@perturbation("nonexistent_venue")
def nonexistent_venue(source: Reference, ctx: PerturbationContext) -> Perturbed | None:
    """Replace the venue with an invented conference or journal of the same kind."""
    if source.preprint_only:
        return None
    pool = vocab.INVENTED_JOURNALS if source.venue_field == "journal" else vocab.INVENTED_CONFERENCES
    venue = ctx.rng.choice(pool)
    fields = {**reference_fields(source), source.venue_field: venue}
    return Perturbed(source.bibtex_type, fields, f"Venue '{venue}' does not exist", "perturbation", (), _doi_state(fields))


@perturbation("placeholder_authors")
def placeholder_authors(source: Reference, ctx: PerturbationContext) -> Perturbed | None:
    """Replace the author list with generic placeholder names."""
    n = min(len(source.authors), ctx.rng.randint(1, 3))
    names = ctx.rng.sample(vocab.PLACEHOLDER_AUTHORS, n)
    fields = {**reference_fields(source), "author": join_authors(names)}
    return Perturbed(
        _bibtex_type(source), fields, f"Authors are placeholders: {join_authors(names)}", "perturbation", (), _doi_state(fields)
    )


@perturbation("future_date")
def future_date(source: Reference, ctx: PerturbationContext) -> Perturbed | None:
    """Set the year to the reference year plus five."""
    year = ctx.reference_year + 5
    fields = {**reference_fields(source), "year": str(year)}
    return Perturbed(_bibtex_type(source), fields, f"Publication year {year} is in the future", "perturbation", (), _doi_state(fields))


# ---- tier 2 -------------------------------------------------------------------------------------


@perturbation("chimeric_title")
def chimeric_title(source: Reference, ctx: PerturbationContext) -> Perturbed | None:
    """Keep the real authors, venue and DOI; replace the title with a fabricated one."""
    title = fabricate_title(source.domain, ctx)
    fields = {**reference_fields(source), "title": title}
    return Perturbed(
        _bibtex_type(source),
        fields,
        f"Fabricated title '{title}' paired with the real authors of '{source.title}'",
        "perturbation",
        (),
        _doi_state(fields),
    )


@perturbation("wrong_venue")
def wrong_venue(source: Reference, ctx: PerturbationContext) -> Perturbed | None:
    """Keep every field but put the paper in a different real venue of the same kind."""
    if source.preprint_only:
        return None
    name, venue = _real_venue_like(source, ctx.rng, exclude=source.venue)
    fields = {**reference_fields(source), name: venue}
    return Perturbed(
        source.bibtex_type, fields, f"Venue changed to '{venue}' (published in '{source.venue}')", "perturbation", (), _doi_state(fields)
    )


@perturbation("swapped_authors")
def swapped_authors(source: Reference, ctx: PerturbationContext) -> Perturbed | None:
    """Keep title and venue; replace the whole author list with that of another real paper."""
    donor = _donor(source, ctx, lambda r: _disjoint_authors(source, r))
    if donor is None:
        return None
    fields = {**reference_fields(source), "author": join_authors(donor.authors)}
    return Perturbed(
        _bibtex_type(source), fields, f"Authors swapped in from '{donor.title}'", "perturbation", (donor.ref_id,), _doi_state(fields)
    )


@perturbation("preprint_as_published")
def preprint_as_published(source: Reference, ctx: PerturbationContext) -> Perturbed | None:
    """Cite an arXiv-only paper as published at a real conference."""
    if not (source.preprint_only and source.arxiv_id):
        return None
    venue = ctx.rng.choice(vocab.REAL_CONFERENCES)
    base = {k: v for k, v in reference_fields(source).items() if k not in ("eprint", "archiveprefix")}
    fields = ordered({**base, "booktitle": venue})
    return Perturbed(
        "inproceedings",
        fields,
        f"Preprint (arXiv:{source.arxiv_id}) falsely cited as published at '{venue}'",
        "perturbation",
        (),
        _doi_state(fields),
    )


@perturbation("hybrid_fabrication")
def hybrid_fabrication(source: Reference, ctx: PerturbationContext) -> Perturbed | None:
    """Keep a real, resolving DOI (and venue, year); fabricate title and authors."""
    if not source.doi:
        return None
    title = fabricate_title(source.domain, ctx)
    authors = fabricate_authors(ctx, ctx.rng.randint(2, 4))
    fields = {**reference_fields(source), "title": title, "author": join_authors(authors)}
    return Perturbed(
        source.bibtex_type,
        fields,
        f"Real DOI {source.doi} (of '{source.title}') with fabricated title and authors",
        "adversarial",
        (),
        True,
    )


@perturbation("merged_citation")
def merged_citation(source: Reference, ctx: PerturbationContext) -> Perturbed | None:
    """Authors of the source, title of a second real paper, venue and year of a third."""
    title_donor = _donor(source, ctx, lambda r: _disjoint_authors(source, r))
    if title_donor is None:
        return None
    venue_donor = _donor(
        source,
        ctx,
        lambda r: r.ref_id != title_donor.ref_id
        and not r.preprint_only
        and not same_venue(r.venue, title_donor.venue)
        and r.year != title_donor.year
        and _disjoint_authors(source, r),
    )
    if venue_donor is None:
        return None
    fields = ordered(
        {
            "title": title_donor.title,
            "author": join_authors(source.authors),
            "year": str(venue_donor.year),
            venue_donor.venue_field: venue_donor.venue,
        }
    )
    return Perturbed(
        venue_donor.bibtex_type,
        fields,
        f"Metadata merged from three real papers: authors from '{source.title}', title from "
        f"'{title_donor.title}', venue and year from '{venue_donor.title}'",
        "perturbation",
        (title_donor.ref_id, venue_donor.ref_id),
        None,
    )


@perturbation("partial_author_list")
def partial_author_list(source: Reference, ctx: PerturbationContext) -> Perturbed | None:
    """Keep fewer than half of the authors (the first ones), with no 'et al.' or 'others'."""
    n = len(source.authors)
    if n < 3:
        return None
    keep = max(1, (n - 1) // 2)
    fields = {**reference_fields(source), "author": join_authors(source.authors[:keep])}
    return Perturbed(
        _bibtex_type(source), fields, f"Partial author list: {n} authors reduced to {keep}", "perturbation", (), _doi_state(fields)
    )


# ---- tier 3 -------------------------------------------------------------------------------------


def _match_case(template: str, word: str) -> str:
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


_PHRASE_END = {"for", "of", "in", "with", "and", "via", "on", "by", "from", "to", "using", "at", "through", "towards"}
_ADJECTIVE_ENDINGS = ("al", "ic", "ous", "ive", "ed", "ing", "ly", "ful", "ary", "ar", "le", "er", "est", "nce")


def _plural_flip(word: str, next_word: str | None) -> str | None:
    """Singular <-> plural of a noun that ends a noun phrase; None when the word is not one."""
    low = word.lower()
    if not low.isalpha() or len(low) < 4:
        return None
    if low.endswith("s"):
        if low.endswith(("ss", "us", "is")) or low in vocab.SINGULAR_ENDING_IN_S:
            return None
        return word[:-1]
    ends_phrase = next_word is None or next_word.lower() in _PHRASE_END
    if not ends_phrase or low.endswith(("y", "x", "ch", "sh") + _ADJECTIVE_ENDINGS) or low in _PHRASE_END:
        return None
    return word + "s"


def _article_agrees(previous: str | None, new_word: str) -> bool:
    if previous is None or previous.lower() not in ("a", "an"):
        return True
    return (previous.lower() == "an") == (new_word[:1].lower() in "aeiou")


def near_miss_edits(title: str) -> list[tuple[int, str, str]]:
    """Candidate one-word edits of a title: (word index, strategy, new word)."""
    words = title.split(" ")
    edits: list[tuple[int, str, str]] = []
    for i, raw in enumerate(words):
        core = raw.strip(":,.?!()")
        low = core.lower()
        if not core:
            continue
        previous = words[i - 1] if i > 0 else None
        following = None if raw.endswith((":", ",", ".")) or i + 1 == len(words) else words[i + 1].strip(":,.?!()")
        candidates = []
        if low in vocab.NEAR_MISS_SYNONYMS:
            candidates.append(("synonym", _match_case(core, vocab.NEAR_MISS_SYNONYMS[low])))
        if low in vocab.NEAR_MISS_FUNCTION_WORDS and i > 0:
            candidates.append(("function_word", _match_case(core, vocab.NEAR_MISS_FUNCTION_WORDS[low])))
        flipped = _plural_flip(core, following) if i > 0 else None
        if flipped:
            candidates.append(("plural_flip", flipped))
        edits += [(i, strategy, raw.replace(core, new)) for strategy, new in candidates if _article_agrees(previous, new)]
    return edits


@perturbation("near_miss_title")
def near_miss_title(source: Reference, ctx: PerturbationContext) -> Perturbed | None:
    """Change one or two title words (synonym, function-word swap, plural/singular flip)."""
    edits = near_miss_edits(source.title)
    preferred = [e for e in edits if e[1] != "plural_flip"] or edits
    if not preferred:
        return None
    first = ctx.rng.choice(preferred)
    chosen = [first]
    others = [e for e in edits if e[0] != first[0]]
    if others and ctx.rng.random() < 0.4:
        chosen.append(ctx.rng.choice(others))
    words = source.title.split(" ")
    for index, _, new in chosen:
        words[index] = new
    title = " ".join(words)
    if normalize_text(title) == normalize_text(source.title) or normalize_text(title) in ctx.known_titles:
        return None
    fields = {**reference_fields(source), "title": title}
    return Perturbed(
        _bibtex_type(source),
        fields,
        f"Title slightly modified ({', '.join(s for _, s, _ in chosen)}): '{title}' (original: '{source.title}')",
        "perturbation",
        (),
        _doi_state(fields),
    )


@perturbation("plausible_fabrication")
def plausible_fabrication(source: Reference, ctx: PerturbationContext) -> Perturbed | None:
    """A complete, realistic, nonexistent entry in the source's field: invented title and authors, real venue."""
    rng = ctx.rng
    title = fabricate_title(source.domain, ctx)
    authors = fabricate_authors(ctx, rng.randint(2, 5))
    year = rng.randint(max(1990, ctx.reference_year - 12), ctx.reference_year - 1)
    if source.domain == "ml" and rng.random() < 0.6:
        bibtex_type, fields = "inproceedings", {"booktitle": rng.choice(vocab.REAL_CONFERENCES)}
    else:
        journals = vocab.REAL_JOURNALS.get(source.domain, vocab.REAL_JOURNALS["ml"])
        first = rng.randint(1, 900)
        bibtex_type = "article"
        fields = {
            "journal": rng.choice(journals),
            "volume": str(rng.randint(5, 120)),
            "number": str(rng.randint(1, 12)),
            "pages": f"{first}--{first + rng.randint(6, 25)}",
        }
    fields = ordered({"title": title, "author": join_authors(authors), "year": str(year), **fields})
    return Perturbed(
        bibtex_type, fields, "Entirely fabricated entry: no paper with this title and these authors exists", "adversarial", (), None
    )


@perturbation("arxiv_version_mismatch")
def arxiv_version_mismatch(source: Reference, ctx: PerturbationContext) -> Perturbed | None:
    """A published paper with an arXiv preprint, cited with another real venue and a shifted year."""
    if source.preprint_only or not source.arxiv_id:
        return None
    year = source.arxiv_year if source.arxiv_year and source.arxiv_year != source.year else source.year + ctx.rng.choice((1, 2))
    name, venue = _real_venue_like(source, ctx.rng, exclude=source.venue)
    base = {k: v for k, v in reference_fields(source).items() if k not in ("doi", "pages", "volume", "number")}
    fields = ordered({**base, name: venue, "year": str(year), "eprint": source.arxiv_id, "archiveprefix": "arXiv"})
    return Perturbed(
        source.bibtex_type,
        fields,
        f"Real paper (arXiv:{source.arxiv_id}) cited with wrong venue '{venue}' and year {year}; "
        f"it appeared in '{source.venue}' in {source.year}",
        "perturbation",
        (),
        None,
    )


def _bibtex_type(source: Reference) -> str:
    return source.bibtex_type


__all__ = ["PERTURBATIONS", "Perturbation", "PerturbationContext", "Perturbed", "fabricate_title", "near_miss_edits", "perturbation"]

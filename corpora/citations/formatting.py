"""Acceptable formatting changes: ways to write a real reference that leave it a VALID citation.

Each change maps a field dict to a new one and keeps the citation's identity: normalized title,
family names in order, year and DOI stay equal (the DOI may be left out), the venue stays the same
venue (possibly under its standard abbreviation), optional fields (volume, number, pages) may be
dropped. Verifiers must not flag these; a corpus keeps its VALID entries under them so that a
tool which matches byte for byte is caught over-flagging.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

from corpora.citations.fields import author_family, ordered, reference_fields, split_authors, venue_of
from corpora.citations.normalization import normalize_text
from corpora.citations.real_reference import Reference, family_name, given_names

FieldChange = Callable[[dict[str, str], Reference], dict[str, str] | None]

#: Standard abbreviations of venue names (ISO 4 style for journals, acronyms for conferences).
VENUE_ABBREVIATIONS: dict[str, str] = {
    "Advances in Neural Information Processing Systems": "NeurIPS",
    "International Conference on Learning Representations (ICLR)": "ICLR",
    "International Conference on Machine Learning (ICML)": "ICML",
    "IEEE Conference on Computer Vision and Pattern Recognition (CVPR)": "CVPR",
    "Medical Image Computing and Computer-Assisted Intervention (MICCAI)": "MICCAI",
    "Journal of Machine Learning Research": "J. Mach. Learn. Res.",
    "Communications of the ACM": "Commun. ACM",
    "Physical Review": "Phys. Rev.",
    "Proceedings of the National Academy of Sciences": "Proc. Natl. Acad. Sci.",
    "Journal of the Royal Statistical Society: Series B (Methodological)": "J. R. Stat. Soc. B",
    "The Annals of Statistics": "Ann. Stat.",
    "Journal of the American Statistical Association": "J. Am. Stat. Assoc.",
    "IEEE Transactions on Pattern Analysis and Machine Intelligence": "IEEE Trans. Pattern Anal. Mach. Intell.",
    "IEEE Transactions on Information Theory": "IEEE Trans. Inf. Theory",
    "IEEE Transactions on Automatic Control": "IEEE Trans. Autom. Control",
    "Journal of Molecular Biology": "J. Mol. Biol.",
    "Journal of Biological Chemistry": "J. Biol. Chem.",
    "Analytical Biochemistry": "Anal. Biochem.",
    "Neural Computation": "Neural Comput.",
    "The Journal of Chemical Physics": "J. Chem. Phys.",
    "Mathematics of Computation": "Math. Comput.",
    "Numerische Mathematik": "Numer. Math.",
    "Annalen der Physik": "Ann. Phys.",
    "Machine Learning": "Mach. Learn.",
    "The Computer Journal": "Comput. J.",
    "Bell System Technical Journal": "Bell Syst. Tech. J.",
}

#: Further names a venue goes by (beyond its abbreviation), for telling two venues apart.
VENUE_ALIASES: dict[str, tuple[str, ...]] = {
    "Advances in Neural Information Processing Systems": ("NIPS", "NeurIPS"),
    "Proceedings of the National Academy of Sciences": ("PNAS",),
    "Journal of Machine Learning Research": ("JMLR",),
    "IEEE Transactions on Pattern Analysis and Machine Intelligence": ("TPAMI", "PAMI"),
    "Journal of the American Statistical Association": ("JASA",),
}


@lru_cache(maxsize=4096)
def venue_names(venue: str | None) -> frozenset[str]:
    """Normalized names a venue is known by: itself, its parenthesized acronym, the name without it,
    its standard abbreviation and aliases. Two venues are the same when these sets meet."""
    if not venue:
        return frozenset()
    names = {venue}
    acronym = re.search(r"\(([^()]+)\)\s*$", venue)
    if acronym:
        names.add(acronym.group(1))
        names.add(venue[: acronym.start()])
    for full, short in VENUE_ABBREVIATIONS.items():
        if normalize_text(venue) in (normalize_text(full), normalize_text(short)):
            names.update((full, short, *VENUE_ALIASES.get(full, ())))
    for full, aliases in VENUE_ALIASES.items():
        if normalize_text(venue) in {normalize_text(a) for a in aliases}:
            names.update((full, *aliases))
    return frozenset(n for n in (normalize_text(x) for x in names) if n)


def same_venue(a: str | None, b: str | None) -> bool:
    """True when the two strings name the same venue (see venue_names)."""
    return bool(venue_names(a) & venue_names(b))


_STROKE = str.maketrans({"Ł": "L", "ł": "l", "Ø": "O", "ø": "o", "ß": "ss", "Æ": "Ae", "æ": "ae"})


def _ascii(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.translate(_STROKE))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _initials(given: str) -> str:
    parts = re.split(r"(\s+|-)", given)
    return "".join(p[0] + "." if p.strip() and p not in ("-",) and not p.endswith(".") else p for p in parts)


def author_last_first(fields: dict[str, str], ref: Reference) -> dict[str, str] | None:
    """Authors written "Family, Given"."""
    names = [f"{family_name(a)}, {given_names(a)}" if given_names(a) else a for a in split_authors(fields["author"])]
    return {**fields, "author": " and ".join(names)}


def author_initials(fields: dict[str, str], ref: Reference) -> dict[str, str] | None:
    """Given names reduced to initials ("G. E. Hinton")."""
    names = [f"{_initials(given_names(a))} {family_name(a)}".strip() for a in split_authors(fields["author"])]
    return {**fields, "author": " and ".join(names)}


def ascii_fold(fields: dict[str, str], ref: Reference) -> dict[str, str] | None:
    """Diacritics dropped in authors and title ("Lukasz", "Korper"); None when nothing changes."""
    new = {**fields, "author": _ascii(fields["author"]), "title": _ascii(fields["title"])}
    return new if new != fields else None


def title_lowercase(fields: dict[str, str], ref: Reference) -> dict[str, str] | None:
    """Title in lower case after its first letter (BibTeX styles do this anyway)."""
    title = fields["title"]
    return {**fields, "title": title[:1] + title[1:].lower()}


def title_braces(fields: dict[str, str], ref: Reference) -> dict[str, str] | None:
    """Title wrapped in braces to protect its capitalisation, as many .bib files have it."""
    return {**fields, "title": "{" + fields["title"] + "}"}


def pages_single_hyphen(fields: dict[str, str], ref: Reference) -> dict[str, str] | None:
    """Page range with a single hyphen."""
    if "--" not in fields.get("pages", ""):
        return None
    return {**fields, "pages": fields["pages"].replace("--", "-")}


def drop_optional(fields: dict[str, str], ref: Reference) -> dict[str, str] | None:
    """Volume, number and pages left out."""
    if not any(k in fields for k in ("volume", "number", "pages")):
        return None
    return {k: v for k, v in fields.items() if k not in ("volume", "number", "pages")}


def venue_abbreviation(fields: dict[str, str], ref: Reference) -> dict[str, str] | None:
    """The venue under its standard abbreviation."""
    venue = venue_of(fields)
    if venue not in VENUE_ABBREVIATIONS:
        return None
    name = "journal" if "journal" in fields else "booktitle"
    return {**fields, name: VENUE_ABBREVIATIONS[venue]}


def doi_omitted(fields: dict[str, str], ref: Reference) -> dict[str, str] | None:
    """The DOI left out."""
    if "doi" not in fields:
        return None
    return {k: v for k, v in fields.items() if k != "doi"}


def with_eprint(fields: dict[str, str], ref: Reference) -> dict[str, str] | None:
    """The arXiv identifier of the work's preprint added beside the published venue."""
    if not ref.arxiv_id or "eprint" in fields:
        return None
    return {**fields, "eprint": ref.arxiv_id, "archiveprefix": "arXiv"}


#: Every acceptable change, by name.
FORMATTING_CHANGES: dict[str, FieldChange] = {
    "author_last_first": author_last_first,
    "author_initials": author_initials,
    "ascii_fold": ascii_fold,
    "title_lowercase": title_lowercase,
    "title_braces": title_braces,
    "pages_single_hyphen": pages_single_hyphen,
    "drop_optional": drop_optional,
    "venue_abbreviation": venue_abbreviation,
    "doi_omitted": doi_omitted,
    "with_eprint": with_eprint,
}
#: Changes to the author field are exclusive: only one of them applies to an entry.
_AUTHOR_CHANGES = {"author_last_first", "author_initials"}
_TITLE_CHANGES = {"title_lowercase", "title_braces"}


def reformat(
    fields: dict[str, str], ref: Reference, rng: random.Random, max_changes: int = 2
) -> tuple[dict[str, str], tuple[str, ...]]:
    """Apply 0..max_changes applicable changes chosen by `rng`; returns the fields and the change names."""
    wanted = rng.randint(0, max_changes)
    names = list(FORMATTING_CHANGES)
    rng.shuffle(names)
    applied: list[str] = []
    for name in names:
        if len(applied) >= wanted:
            break
        if (name in _AUTHOR_CHANGES and _AUTHOR_CHANGES & set(applied)) or (
            name in _TITLE_CHANGES and _TITLE_CHANGES & set(applied)
        ):
            continue
        changed = FORMATTING_CHANGES[name](fields, ref)
        if changed is not None and changed != fields:
            fields = changed
            applied.append(name)
    return ordered(fields), tuple(applied)


def same_citation(fields: dict[str, str], ref: Reference) -> bool:
    """True when `fields` is an acceptable rendering of `ref` (the check behind a VALID label)."""
    base = reference_fields(ref)
    if normalize_text(fields.get("title")) != normalize_text(base["title"]):
        return False
    families = [normalize_text(author_family(a)) for a in split_authors(fields.get("author"))]
    if families != [normalize_text(f) for f in ref.family_names]:
        return False
    if fields.get("year") != base["year"] or fields.get("doi", base.get("doi")) != base.get("doi"):
        return False
    venue, true_venue = venue_of(fields), venue_of(base)
    return venue == true_venue or (true_venue is not None and venue is not None and same_venue(venue, true_venue))


__all__ = [
    "FORMATTING_CHANGES",
    "VENUE_ABBREVIATIONS",
    "VENUE_ALIASES",
    "reformat",
    "same_citation",
    "same_venue",
    "venue_names",
]

"""Citation-field normalization and similarities, the one implementation for corpora and verifiers
(reference 003, CiteIntegrity; verifiers import it from here, since corpora may not import verifiers).

One normalization for both sides of every comparison (`normalize_text`): decode HTML entities,
remove markup (HTML/XML tags; LaTeX accents such as `{\\"O}` mapped to combining marks, LaTeX
letters such as `\\ss` and `\\o`, escaped specials, other commands and braces dropped), NFKD,
casefold, a second NFKD, drop combining marks, fold the letters NFKD leaves whole (ł, ø, đ, ß, æ,
œ, ı), replace everything but Unicode letters and digits with spaces, collapse whitespace. Accent
folding is a pragmatic choice: it can conflate different names.

Similarities follow the paper: titles and venues use difflib's SequenceMatcher (autojunk=False)
ratio `2M/(|u|+|v|)`, 0 when either side is empty; a venue equal to the initials of the candidate
venue scores 1; authors are the Jaccard index of normalized family-name sets, the candidate list
cut to the first k names when the citation's list is explicitly truncated ("and others" /
"et al."); year is exact equality. Venue identity (`venue_key`, `venues_agree`) comes from the alias
table `corpora/data/venue_aliases.toml` over names with "Proceedings of the", ordinals and years
dropped (`venue_name_key`): "NeurIPS" and "Advances in Neural Information Processing Systems 34",
"OSDI" and "USENIX Symposium on Operating Systems Design and Implementation" are one venue. Also here:
`CitationFields`, the structured citation read from BibTeX fields. DOI and arXiv-id canonical
forms, author-list splitting and family names are re-exported from `storage.bib_identifiers`, the
project's one implementation (which strips DBLP's homonym numbers such as "Peters 0001").
"""

from __future__ import annotations

import html
import re
import tomllib
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from pathlib import Path

from storage.bib_identifiers import (
    canonical_arxiv_id,
    canonical_doi,
    family_name,
    family_names,
    split_bibtex_authors,
)

__all__ = [
    "CitationFields",
    "author_similarity",
    "canonical_arxiv_id",
    "canonical_doi",
    "family_name",
    "family_names",
    "normalize_text",
    "sequence_similarity",
    "split_bibtex_authors",
    "title_similarity",
    "VenueAlias",
    "venue_aliases",
    "venue_initials",
    "venue_key",
    "venue_name_key",
    "venue_name_keys",
    "venue_similarity",
    "venues_agree",
    "year_similarity",
]

_TAG = re.compile(r"<[^>]{0,200}>")
_LATEX_ACCENT = re.compile(
    r"\\(?:([`'^\"~=.])\s*(?:\{\s*(\\?[A-Za-z])\s*\}|(\\?[A-Za-z]))"
    r"|([uvHckbdrt])(?:\s*\{\s*(\\?[A-Za-z])\s*\}|\s+(\\?[A-Za-z])))"
)
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+\*?\s*")
_LATEX_SPECIAL = {r"\&": "&", r"\%": "%", r"\$": "$", r"\_": "_", r"\#": "#", "~": " ", "--": "-"}
_LATEX_LETTER = {r"\ss": "ss", r"\o": "o", r"\O": "O", r"\ae": "ae", r"\AE": "AE", r"\oe": "oe", r"\l": "l",
                 r"\L": "L", r"\aa": "a", r"\AA": "A", r"\i": "i", r"\j": "j"}
_COMBINING = {"`": "\u0300", "'": "\u0301", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
              ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b", "c": "\u0327", "k": "\u0328",
              "b": "\u0331", "d": "\u0323", "r": "\u030a", "t": "\u0361"}
_NON_WORD = re.compile(r"[\W_]+")
_LETTER_RUN = re.compile(r"[^\W\d_]+")
#: Letters NFKD leaves whole; folded so "Łukasz" and "Lukasz" compare equal.
_STROKE_LETTERS = str.maketrans({"ł": "l", "ø": "o", "đ": "d", "ß": "ss", "æ": "ae", "œ": "oe", "ı": "i"})


def _latex_to_text(text: str) -> str:
    if "\\" not in text and "{" not in text and "~" not in text:
        return text
    def accent(m: re.Match[str]) -> str:
        letter = m.group(2) or m.group(3) or m.group(5) or m.group(6)
        return _LATEX_LETTER.get(letter, letter.lstrip("\\")) + _COMBINING[m.group(1) or m.group(4)]

    text = _LATEX_ACCENT.sub(accent, text)
    for command, letter in sorted(_LATEX_LETTER.items(), key=lambda kv: -len(kv[0])):
        text = re.sub(re.escape(command) + r"(?![A-Za-z])\s*", letter, text)
    for raw, plain in _LATEX_SPECIAL.items():
        text = text.replace(raw, plain)
    text = _LATEX_COMMAND.sub(" ", text)
    return text.replace("{", "").replace("}", "")


def normalize_text(text: str | None) -> str:
    """The paper's normalization plus markup removal (see the module notes); None or empty gives ''."""
    if not text:
        return ""
    text = html.unescape(str(text))
    text = _TAG.sub(" ", text)
    text = _latex_to_text(text)
    text = unicodedata.normalize("NFKD", text).casefold()
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).translate(_STROKE_LETTERS)
    return " ".join(_NON_WORD.sub(" ", text).split())


def sequence_similarity(a: str, b: str) -> float:
    """SequenceMatcher ratio (autojunk off) of two already-normalized strings; 0 when either is empty."""
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def title_similarity(cited: str | None, reference: str | None) -> float:
    """SequenceMatcher ratio of the normalized titles; 0 when either is missing."""
    return sequence_similarity(normalize_text(cited), normalize_text(reference))


def venue_initials(venue: str | None) -> str:
    """Initial letters of every alphabetic run of the normalized venue, digits skipped
    ("Journal of Machine Learning Research 2" -> "jomlr")."""
    return "".join(word[0] for word in _LETTER_RUN.findall(normalize_text(venue)))


def venue_similarity(cited: str | None, reference: str | None) -> float:
    """SequenceMatcher on normalized venues; 1 when the cited venue is the reference's declared initials."""
    a, b = normalize_text(cited), normalize_text(reference)
    if not a or not b:
        return 0.0
    if a.replace(" ", "") == venue_initials(reference):
        return 1.0
    return sequence_similarity(a, b)


def year_similarity(cited: int | str | None, reference: int | str | None) -> float:
    try:
        return 1.0 if cited is not None and reference is not None and int(cited) == int(reference) else 0.0
    except (TypeError, ValueError):
        return 0.0


def author_similarity(cited: Sequence[str], reference: Sequence[str], truncated: bool = False) -> float:
    """Jaccard index of normalized family-name sets. With an explicitly truncated citation list of
    length k, the reference list is first cut to its first k family names (compound surnames stay
    one element on both sides)."""
    ref = list(reference)[: len(cited)] if truncated else list(reference)
    a = {n for n in (normalize_text(x) for x in cited) if n}
    b = {n for n in (normalize_text(x) for x in ref) if n}
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


@dataclass(frozen=True)
class CitationFields:
    """The structured citation (d, t, A, y, v, e) of the CiteIntegrity paper, from any input."""

    doi: str | None
    title: str | None
    authors: tuple[str, ...]
    """Family names as written in the citation."""
    year: int | None
    venue: str | None
    truncated: bool
    """Explicit author-list truncation ("and others" / "et al.")."""
    arxiv_id: str | None = None

    @classmethod
    def from_bibtex_fields(cls, fields: dict[str, str]) -> CitationFields:
        names, truncated = split_bibtex_authors(fields.get("author"))
        year_text = (fields.get("year") or "").strip()
        venue = next((fields[k] for k in ("booktitle", "journal", "venue") if fields.get(k)), None)
        arxiv = None
        if (fields.get("archiveprefix") or fields.get("eprinttype") or "").lower() == "arxiv":
            arxiv = canonical_arxiv_id(fields.get("eprint"))
        arxiv = arxiv or canonical_arxiv_id(fields.get("doi")) or (
            canonical_arxiv_id(fields.get("url")) if "arxiv.org" in (fields.get("url") or "") else None
        )
        return cls(
            doi=canonical_doi(fields.get("doi")),
            title=fields.get("title"),
            authors=tuple(family_names(names)),
            year=int(year_text) if year_text.isdigit() else None,
            venue=venue,
            truncated=truncated,
            arxiv_id=arxiv,
        )


#: The venue alias table (data, not code): each venue's names, acronyms and ISO 4 abbreviations, for
#: ML, vision, NLP, data mining, IR, web, databases, systems, security, HCI, theory and journals.
VENUE_ALIASES_PATH = Path(__file__).resolve().parents[1] / "data" / "venue_aliases.toml"
_PARENS = re.compile(r"\(([^()]*)\)")
_EDITION = re.compile(
    r"\b(?:\d+(?:st|nd|rd|th)?|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    r"(?:thir|four|fif|six|seven|eigh|nine)teenth|(?:twent|thirt|fort|fift|sixt|sevent|eight|ninet)(?:y|ieth))\b")
_PROCEEDINGS = re.compile(r"^(?:in )?(?:proceedings|proc) (?:of )?(?:the )?|\b(?:volume|vol|part) [ivx\d]+\b")


def venue_name_key(venue: str | None) -> str:
    """A venue's name without what differs between editions: normalised, "proceedings of the",
    edition numbers and ordinals ("34th", "thirty fourth"), years and volume parts dropped."""
    text = normalize_text(venue)
    text = _PROCEEDINGS.sub(" ", text)
    text = _EDITION.sub(" ", text)
    return " ".join(text.split())


def venue_name_keys(venue: str | None) -> set[str]:
    """The keys a venue is known by: its name without parenthesised parts, and each parenthesised
    part ("... Neural Things (NeurThings 2022)" gives the name and "neurthings")."""
    raw = str(venue or "")
    keys = {venue_name_key(_PARENS.sub(" ", raw))} | {venue_name_key(p) for p in _PARENS.findall(raw)}
    return {k for k in keys if k}


@dataclass(frozen=True)
class VenueAlias:
    """One venue of the alias table: its key and its names as `venue_name_key` writes them."""

    key: str
    names: tuple[str, ...]
    """Matched as whole words anywhere in a venue's name."""
    exact: tuple[str, ...] = ()
    """Matched only as the whole name (ordinary words, or part of other venues' names)."""


@lru_cache(maxsize=1)
def venue_aliases() -> tuple[VenueAlias, ...]:
    """The alias table, in file order (the first venue that matches decides)."""
    with open(VENUE_ALIASES_PATH, "rb") as f:
        table = tomllib.load(f)
    return tuple(VenueAlias(key, tuple(venue_name_key(n) for n in entry.get("names", ())),
                            tuple(venue_name_key(n) for n in entry.get("exact", ())))
                 for key, entry in table.items())  # fmt: skip


@lru_cache(maxsize=65_536)
def venue_key(venue: str | None) -> str | None:
    """The identity of a known venue ("NeurIPS 2021", "Advances in Neural Information Processing
    Systems 34" -> "neurips"; "Proceedings of the 14th USENIX Symposium on Operating Systems Design
    and Implementation" -> "osdi"), None for a venue the alias table does not know. The name
    without parenthesised parts decides first, then each part ("... (OSDI 20)")."""
    raw = str(venue or "")
    for name in (venue_name_key(_PARENS.sub(" ", raw)), *(venue_name_key(p) for p in _PARENS.findall(raw))):
        if not name:
            continue
        padded = f" {name} "
        for alias in venue_aliases():
            if name in alias.exact or any(f" {n} " in padded for n in alias.names):
                return alias.key
    return None


_VENUE_FILLER = frozenset({"of", "the", "and", "on", "in", "for", "series", "a"})


def is_venue_abbreviation(short: str | None, full: str | None) -> bool:
    """Whether `short` abbreviates `full` the way journal abbreviations do (ISO 4 style): every word
    of the short form is the start of a word of the long form, in order ("J. Mol. Biol." and
    "Journal of Molecular Biology"), with at most two significant long-form words left over (a
    series or subtitle). The short form needs two or more words and at least one cut word."""
    raw = (short or "").split()
    words, long_words = normalize_text(short).split(), normalize_text(full).split()
    if len(words) < 2 or len(long_words) < len(words) or words == long_words or not any(w.endswith(".") for w in raw):
        return False
    position, skipped = 0, 0
    for word in words:
        while position < len(long_words) and not long_words[position].startswith(word):
            skipped += long_words[position] not in _VENUE_FILLER
            position += 1
        if position == len(long_words):
            return False
        position += 1
    skipped += sum(w not in _VENUE_FILLER for w in long_words[position:])
    return skipped <= 2 and long_words[0].startswith(words[0])


def venues_agree(cited: str | None, reference: str | None, threshold: float = 0.6) -> bool | None:
    """True / False when both venues are given; None when either is missing. Known venues compare by
    alias key, others by journal-style abbreviation, initials or SequenceMatcher similarity >= threshold."""
    if not normalize_text(cited) or not normalize_text(reference):
        return None
    a, b = venue_key(cited), venue_key(reference)
    if a and b:
        return a == b
    if is_venue_abbreviation(cited, reference) or is_venue_abbreviation(reference, cited):
        return True
    return venue_similarity(cited, reference) >= threshold or venue_similarity(reference, cited) >= threshold

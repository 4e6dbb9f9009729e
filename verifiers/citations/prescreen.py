"""HALLMARK's pre-screening rules as one verifier (reference 000, §6 and appendix B.2.1).

Local checks, no network: future year (HALLUCINATED at 0.95), year before 1900 (0.70),
placeholder authors (0.80), capitalised-token authors (0.75), malformed DOI (0.80), and missing
required fields (UNCERTAIN: a gap is not evidence of fabrication). When no rule fires the entry
is VALID at 0.60, HALLMARK's confidence for an in-range year: the rules are weak evidence of
validity. Confidence always means P(label correct).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from storage.bib_identifiers import family_name, is_well_formed_doi, name_parts, split_bibtex_authors
from storage.records import Item, Output
from verifiers.citations.entry import CitationEntry
from verifiers.registry import system
from verifiers.system import RunContext

_PLACEHOLDER = re.compile(
    r"^(anonymous|author\s*\w?|author\d+|john doe|jane doe|a\. author|first author|"
    r"second author|last author|todo|tbd|unknown|n/?a|placeholder)$",
    re.IGNORECASE,
)
DUPLICATE_AUTHOR_CONFIDENCE = 0.60
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "article": ("author", "title", "year", "journal"),
    "inproceedings": ("author", "title", "year", "booktitle"),
    "*": ("author", "title", "year"),
}


@dataclass(frozen=True)
class RuleHit:
    rule: str
    label: str
    confidence: float
    reason: str


def check_year(entry: CitationEntry, reference_year: int) -> RuleHit | None:
    raw = entry.fields.get("year", "").strip()
    if not raw.isdigit():
        return None  # missing or non-numeric: the required-fields rule speaks for it
    year = int(raw)
    if year > reference_year:
        return RuleHit("future_year", "HALLUCINATED", 0.95, f"publication year {year} is after {reference_year}")
    if year < 1900:
        return RuleHit("year_before_1900", "HALLUCINATED", 0.70, f"implausibly old publication year {year}")
    return None


def check_authors(entry: CitationEntry) -> RuleHit | None:
    """Placeholder-author heuristics. The truncation marker ("and others", "et al.") ends a real
    author list and is not an author. Two identical names count as "listed twice" only when the
    given name is spelled out: "C. Zhang and C. Zhang" is two real people as often as not (initials
    collide), and DBLP's homonym numbers ("Wei Wang 0001" / "Wei Wang 0002") mark distinct people."""
    raw = entry.fields.get("author", "").strip()
    authors, _ = split_bibtex_authors(raw)
    if not raw:
        return None
    if len(raw) < 3 or not authors or any(_PLACEHOLDER.match(a.strip(" {}")) for a in authors):
        return RuleHit("placeholder_authors", "HALLUCINATED", 0.80, f"placeholder author pattern in '{raw}'")
    spelled = [" ".join(a.lower().split()) for a in authors if _given_spelled_out(a)]
    if len(set(spelled)) < len(spelled):
        # weak (0.60, under the cascade's deferral bar): real citations repeat a name by copy error
        # (dev_public's VALID PaLM entry lists Noam Shazeer twice); a later index stage should decide
        return RuleHit("placeholder_authors", "HALLUCINATED", DUPLICATE_AUTHOR_CONFIDENCE, "the same author is listed twice")
    families = [family_name(a) for a in authors]
    if len(authors) > 1 and all(f and len(f) == 1 for f in families):
        return RuleHit("placeholder_authors", "HALLUCINATED", 0.80, "every author has a one-letter family name")
    capitalised = [a for a in authors if _is_capitalised_token(a)]
    if capitalised and len(capitalised) == len(authors):
        return RuleHit(
            "capitalised_token_authors", "HALLUCINATED", 0.75, f"author names are bare capitalised tokens: {capitalised}"
        )
    return None


def _given_spelled_out(author: str) -> bool:
    """Whether the given name has a word of two or more letters (not initials only)."""
    given = name_parts(author)[1]
    return any(len(w.strip(".-")) >= 2 for w in given.replace("-", " ").split())


def check_doi(entry: CitationEntry) -> RuleHit | None:
    raw = entry.fields.get("doi")
    if not raw:
        return None
    if not is_well_formed_doi(raw):  # judged as written (case kept), only the resolver prefix removed
        return RuleHit("malformed_doi", "HALLUCINATED", 0.80, f"DOI '{raw}' does not match 10.NNNN/suffix")
    return None


def check_required_fields(entry: CitationEntry) -> RuleHit | None:
    required = REQUIRED_FIELDS.get(entry.bibtex_type, REQUIRED_FIELDS["*"])
    missing = [f for f in required if not entry.fields.get(f, "").strip()]
    if entry.fields.get("year") and not entry.fields["year"].strip().isdigit():
        missing.append("year (not a number)")
    if missing:
        return RuleHit("missing_fields", "UNCERTAIN", 0.50, f"missing required fields: {', '.join(missing)}")
    return None


def _is_capitalised_token(author: str) -> bool:
    """A one-word name ('Smith', 'SMITH') or an all-capitals token list ('JOHN SMITH')."""
    name = author.strip(" {}")
    tokens = name.replace(",", " ").split()
    if len(tokens) == 1:
        return tokens[0][:1].isupper()
    return all(t.isupper() and len(t) > 1 for t in tokens)


def prescreen(entry: CitationEntry, reference_year: int) -> tuple[str, float, str, dict[str, bool], list[RuleHit]]:
    """Run every rule; the strongest HALLUCINATED hit decides, else missing fields -> UNCERTAIN, else VALID."""
    hits = [
        h
        for h in (
            check_year(entry, reference_year),
            check_authors(entry),
            check_doi(entry),
            check_required_fields(entry),
        )
        if h
    ]
    subtests = {
        "year_plausible": not any(h.rule in ("future_year", "year_before_1900") for h in hits),
        "authors_plausible": not any(h.rule.endswith("authors") for h in hits),
        "doi_well_formed": not any(h.rule == "malformed_doi" for h in hits),
        "fields_complete": not any(h.rule == "missing_fields" for h in hits),
    }
    flagged = [h for h in hits if h.label == "HALLUCINATED"]
    if flagged:
        top = max(flagged, key=lambda h: h.confidence)
        return "HALLUCINATED", top.confidence, "; ".join(h.reason for h in flagged), subtests, hits
    if hits:
        return "UNCERTAIN", hits[0].confidence, hits[0].reason, subtests, hits
    return "VALID", 0.60, "no pre-screening rule fired", subtests, hits


_PREDICTED_TYPE = {
    "future_year": "future_date",
    "year_before_1900": "future_date",
    "placeholder_authors": "placeholder_authors",
    "capitalised_token_authors": "placeholder_authors",
    "malformed_doi": "fabricated_doi",
}


class PrescreenVerifier:
    """Local pre-screening rules; no network."""

    def __init__(self, reference_year: int | None = None) -> None:
        self.name = "prescreen"
        self.reference_year = reference_year

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        year = self.reference_year or int(ctx.snapshot[:4])
        outputs = []
        for item in items:
            if item.load_error:
                outputs.append(Output.failed(item.item_id, item.load_error, "input"))
                continue
            entry = CitationEntry.from_item(item)
            label, confidence, reason, subtests, hits = prescreen(entry, year)
            top = max((h for h in hits if h.label == "HALLUCINATED"), key=lambda h: h.confidence, default=None)
            outputs.append(
                Output(
                    item_id=item.item_id,
                    label=label,
                    confidence=confidence,
                    reason=reason,
                    predicted_type=_PREDICTED_TYPE.get(top.rule) if top else None,
                    subtests=subtests,
                    detail={"rules_fired": [h.rule for h in hits], "reference_year": year},
                )
            )
        return outputs


@system("prescreen", accepts=("citation",), description="HALLMARK pre-screening rules (year bounds, author heuristics, DOI format, fields)")
def build_prescreen(reference_year: int | None = None) -> PrescreenVerifier:
    return PrescreenVerifier(reference_year)

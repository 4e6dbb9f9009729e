"""The one citation normalization (corpora/citations/normalization.py, used by corpora and verifiers)
and its field similarities (reference 003, eqs. 2-3)."""

from __future__ import annotations

import pytest

from corpora.citations.normalization import (
    CitationFields,
    author_similarity,
    canonical_arxiv_id,
    canonical_doi,
    family_names,
    normalize_text,
    sequence_similarity,
    split_bibtex_authors,
    title_similarity,
    venue_initials,
    venue_key,
    venue_similarity,
    venues_agree,
)


def test_normalize_follows_the_paper_steps() -> None:
    assert normalize_text("Caf&eacute; &amp; <i>Cr&egrave;me</i>  Br\u00fbl\u00e9e!") == "cafe creme brulee"
    assert normalize_text(r"{\"O}zt{\"u}rk and M\"uller: \textit{Deep} {Learning}") == "ozturk and muller deep learning"
    assert normalize_text("\ufb01ne-tuning \u2160") == "fine tuning i"  # NFKD folds ligatures and numerals
    assert normalize_text("STRASSE") == normalize_text("Stra\u00dfe".replace("\u00df", "ss"))
    assert normalize_text(None) == "" and normalize_text("  ") == ""


def test_normalize_folds_stroke_letters_and_keeps_non_latin_letters() -> None:
    assert normalize_text("\u0141ukasz Kaiser") == normalize_text("Lukasz Kaiser") == "lukasz kaiser"
    assert normalize_text("S\u00f8ren \u00c6sir") == "soren aesir"
    assert normalize_text("\u03b2-VAE: \u6df1\u5ea6\u5b66\u4e60") == "\u03b2 vae \u6df1\u5ea6\u5b66\u4e60"  # not dropped to ''
    assert normalize_text(r"\L{}ukasz and G\"{o}del \& Escher") == "lukasz and godel escher"
    assert normalize_text("snake_case \\emph{word}") == "snake case word"
    assert venue_initials("\u0420\u043e\u0441\u0441\u0438\u0439\u0441\u043a\u0438\u0439 \u0436\u0443\u0440\u043d\u0430\u043b 3") == "\u0440\u0436"


def test_title_similarity_of_missing_titles_is_zero() -> None:
    assert title_similarity(None, None) == 0.0 and title_similarity("", "A") == 0.0
    assert title_similarity("Attention Is All You Need", "attention is all you need.") == 1.0


def test_sequence_similarity_is_difflib_ratio() -> None:
    assert sequence_similarity("abcd", "abcd") == 1.0
    assert sequence_similarity("abcd", "abxd") == pytest.approx(0.75)  # 2*3/8
    assert sequence_similarity("", "abc") == 0.0


def test_author_similarity_with_explicit_truncation() -> None:
    reference = ["Vaswani", "Shazeer", "Parmar", "Uszkoreit"]
    assert author_similarity(["Vaswani"], reference, truncated=True) == 1.0
    assert author_similarity(["Vaswani"], reference, truncated=False) == pytest.approx(0.25)
    assert author_similarity(["Parmar", "Jones"], reference) == pytest.approx(1 / 5)
    assert author_similarity(["M\u00fcller"], ["Muller"]) == 1.0  # accent folding


def test_venue_initials_and_aliases() -> None:
    venue = "Journal of Interventional Epidemiology and Public Health"
    assert venue_initials(venue) == "joieaph"
    assert venue_initials("Journal of Physics: Conference Series 2") == "jopcs"
    assert venue_similarity("JOIEAPH", venue) == 1.0
    assert venue_similarity("Nature", "Nature Communications") == pytest.approx(2 * 6 / (6 + 21))
    assert venue_key("Advances in Neural Information Processing Systems 34") == "neurips"
    assert venue_key("NIPS") == "neurips" and venue_key("J. Mach. Learn. Res.") == "jmlr"
    assert venue_key("International Conference on Quantum Machine Learning") is None
    assert venues_agree("ICML", "International Conference on Machine Learning") is True
    assert venues_agree("ICML", "CVPR") is False
    assert venues_agree(None, "CVPR") is None


def test_bibtex_authors_family_names_and_truncation() -> None:
    names, truncated = split_bibtex_authors("Smith, John and Ludwig van Beethoven and {World Health Organization} and others")
    assert truncated and names[-1] == "{World Health Organization}"
    assert family_names(names) == ["Smith", "van Beethoven", "World Health Organization"]
    assert split_bibtex_authors("A. Turing") == (["A. Turing"], False)
    assert split_bibtex_authors("") == ([], False)


def test_identifiers() -> None:
    assert canonical_doi("https://doi.org/10.1109/CVPR52688.2022.01981") == "10.1109/cvpr52688.2022.01981"
    assert canonical_doi("doi: 10.18653/v1/2022.acl-long.1.") == "10.18653/v1/2022.acl-long.1"
    assert canonical_doi("not a doi") is None
    assert canonical_arxiv_id("https://arxiv.org/abs/1706.03762v5") == "1706.03762"
    assert canonical_arxiv_id("10.48550/arXiv.2310.01362") == "2310.01362"
    assert canonical_arxiv_id("arXiv:hep-th/9901001v2") == "hep-th/9901001"


def test_citation_fields_from_bibtex() -> None:
    fields = CitationFields.from_bibtex_fields(
        {"title": "Attention Is All You Need", "author": "Ashish Vaswani and others", "year": "2017",
         "booktitle": "NeurIPS", "url": "https://arxiv.org/abs/1706.03762"}
    )
    assert fields.authors == ("Vaswani",) and fields.truncated and fields.year == 2017
    assert fields.venue == "NeurIPS" and fields.arxiv_id == "1706.03762" and fields.doi is None

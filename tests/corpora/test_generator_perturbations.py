"""Each hallucination type is made by its own perturbation, and VALID entries survive formatting."""

from __future__ import annotations

import random

import pytest

from corpora.citations.fields import (
    author_family,
    citation_identity,
    reference_fields,
    split_authors,
    venue_of,
)
from corpora.citations.formatting import FORMATTING_CHANGES, VENUE_ABBREVIATIONS, reformat, same_citation
from corpora.citations.normalization import normalize_text, title_similarity
from corpora.citations.perturbation import PERTURBATIONS, PerturbationContext, near_miss_edits
from corpora.citations.real_reference import load_references
from corpora.citations.taxonomy import hallmark_taxonomy
from corpora.citations.vocabulary import (
    INVENTED_CONFERENCES,
    INVENTED_JOURNALS,
    NONEXISTENT_DOI_PREFIXES,
    PLACEHOLDER_AUTHORS,
)

REFS = load_references()
BY_ID = {r.ref_id: r for r in REFS}
KNOWN_TITLES = frozenset(normalize_text(r.title) for r in REFS)


def _ctx(seed: int = 7) -> PerturbationContext:
    return PerturbationContext(random.Random(seed), REFS, 2026, KNOWN_TITLES)


def _families(fields: dict) -> list[str]:
    return [normalize_text(author_family(a)) for a in split_authors(fields["author"])]


def test_one_perturbation_per_taxonomy_type():
    assert set(PERTURBATIONS) == set(hallmark_taxonomy().names)
    assert len({fn.__name__ for fn in PERTURBATIONS.values()}) == 14


def test_fabricated_doi_uses_unassigned_prefix_and_keeps_the_rest():
    src = BY_ID["he2016deep"]
    p = PERTURBATIONS["fabricated_doi"](src, _ctx())
    assert p.fields["doi"].split("/")[0] in NONEXISTENT_DOI_PREFIXES
    assert p.fields["doi"] != src.doi and p.doi_resolves is False
    assert {k: v for k, v in p.fields.items() if k != "doi"} == {k: v for k, v in reference_fields(src).items() if k != "doi"}


def test_fabricated_doi_suffix_styles_vary():
    src = BY_ID["he2016deep"]
    suffixes = {PERTURBATIONS["fabricated_doi"](src, _ctx(s)).fields["doi"].split("/", 1)[1] for s in range(40)}
    assert len(suffixes) == 40
    assert any(s.startswith("2016.") for s in suffixes)  # year-indexed
    assert any(s.split(".")[0] in {"NIPS", "ICML", "ICLR", "CVPR", "AAAI", "KDD", "ACL", "UAI"} for s in suffixes)


@pytest.mark.parametrize("ref_id", ["lecun2015deep", "he2016deep"])
def test_nonexistent_venue(ref_id):
    src = BY_ID[ref_id]
    p = PERTURBATIONS["nonexistent_venue"](src, _ctx())
    venue = venue_of(p.fields)
    assert venue in (INVENTED_JOURNALS if src.bibtex_type == "article" else INVENTED_CONFERENCES)
    assert p.fields["title"] == src.title and p.bibtex_type == src.bibtex_type
    assert PERTURBATIONS["nonexistent_venue"](BY_ID["ba2016layer"], _ctx()) is None  # a preprint has no venue to replace


def test_placeholder_authors_and_future_date():
    src = BY_ID["mnih2015human"]
    p = PERTURBATIONS["placeholder_authors"](src, _ctx())
    assert set(split_authors(p.fields["author"])) <= set(PLACEHOLDER_AUTHORS)
    assert 1 <= len(split_authors(p.fields["author"])) <= 3
    f = PERTURBATIONS["future_date"](src, _ctx())
    assert f.fields["year"] == "2031"
    assert {k: v for k, v in f.fields.items() if k != "year"} == {k: v for k, v in reference_fields(src).items() if k != "year"}


def test_chimeric_and_hybrid_titles_are_not_real_titles():
    for seed in range(20):
        src = REFS[seed]
        c = PERTURBATIONS["chimeric_title"](src, _ctx(seed))
        assert normalize_text(c.fields["title"]) not in KNOWN_TITLES
        assert c.fields["author"] == reference_fields(src)["author"]
    src = BY_ID["jinek2012programmable"]
    h = PERTURBATIONS["hybrid_fabrication"](src, _ctx())
    assert h.fields["doi"] == src.doi and h.doi_resolves is True and h.generation_method == "adversarial"
    assert not set(_families(h.fields)) & {normalize_text(f) for f in src.family_names}
    assert PERTURBATIONS["hybrid_fabrication"](BY_ID["vaswani2017attention"], _ctx()) is None  # needs a real DOI


def test_wrong_venue_is_a_different_real_venue_of_the_same_kind():
    for ref in REFS:
        p = PERTURBATIONS["wrong_venue"](ref, _ctx())
        if ref.preprint_only:
            assert p is None
            continue
        assert ref.venue_field in p.fields
        assert normalize_text(p.fields[ref.venue_field]) != normalize_text(ref.venue)
        assert p.fields[ref.venue_field] not in INVENTED_CONFERENCES + INVENTED_JOURNALS


def test_swapped_authors_come_whole_from_a_disjoint_donor():
    src = BY_ID["cooley1965algorithm"]
    p = PERTURBATIONS["swapped_authors"](src, _ctx())
    donor = BY_ID[p.donor_ids[0]]
    assert split_authors(p.fields["author"]) == list(donor.authors)
    assert not set(_families(p.fields)) & {normalize_text(f) for f in src.family_names}
    assert p.fields["title"] == src.title


def test_preprint_as_published_only_for_arxiv_only_work():
    p = PERTURBATIONS["preprint_as_published"](BY_ID["schulman2017proximal"], _ctx())
    assert p.bibtex_type == "inproceedings" and "booktitle" in p.fields and "eprint" not in p.fields
    assert PERTURBATIONS["preprint_as_published"](BY_ID["he2016deep"], _ctx()) is None


def test_merged_citation_takes_three_works():
    src = BY_ID["hinton2006reducing"]
    p = PERTURBATIONS["merged_citation"](src, _ctx())
    title_donor, venue_donor = (BY_ID[i] for i in p.donor_ids)
    assert len({src.ref_id, title_donor.ref_id, venue_donor.ref_id}) == 3
    assert p.fields["title"] == title_donor.title
    assert split_authors(p.fields["author"]) == list(src.authors)
    assert venue_of(p.fields) == venue_donor.venue and p.fields["year"] == str(venue_donor.year)
    assert normalize_text(venue_donor.venue) != normalize_text(title_donor.venue)
    assert "doi" not in p.fields


@pytest.mark.parametrize(("ref_id", "kept"), [("vaswani2017attention", 3), ("he2016deep", 1), ("watson1953molecular", None)])
def test_partial_author_list_keeps_less_than_half(ref_id, kept):
    p = PERTURBATIONS["partial_author_list"](BY_ID[ref_id], _ctx())
    if kept is None:
        assert p is None  # two authors: no strict subset under half that is not "one author dropped"
        return
    names = split_authors(p.fields["author"])
    assert len(names) == kept and len(names) < len(BY_ID[ref_id].authors) / 2
    assert names == list(BY_ID[ref_id].authors[:kept])
    assert "others" not in p.fields["author"] and "et al" not in p.fields["author"]


def test_near_miss_title_changes_one_or_two_words():
    made = 0
    for ref in REFS:
        p = PERTURBATIONS["near_miss_title"](ref, _ctx())
        if p is None:
            continue
        made += 1
        old, new = ref.title.split(" "), p.fields["title"].split(" ")
        assert len(old) == len(new)
        changed = sum(a != b for a, b in zip(old, new, strict=True))
        assert 1 <= changed <= 2, (ref.title, p.fields["title"])
        assert normalize_text(p.fields["title"]) != normalize_text(ref.title)
        assert title_similarity(p.fields["title"], ref.title) > 0.7
    assert made >= 60
    assert ("synonym" in {s for _, s, _ in near_miss_edits("Attention Is All You Need")})
    assert any(new == "Require" for _, _, new in near_miss_edits("Attention Is All You Need"))


def test_plausible_fabrication_is_complete_and_new():
    for seed in range(20):
        p = PERTURBATIONS["plausible_fabrication"](REFS[seed], _ctx(seed))
        assert normalize_text(p.fields["title"]) not in KNOWN_TITLES
        assert {"title", "author", "year"} <= set(p.fields) and venue_of(p.fields)
        assert 2014 <= int(p.fields["year"]) <= 2025
        assert len(split_authors(p.fields["author"])) >= 2


def test_arxiv_version_mismatch_shifts_year_and_venue():
    src = BY_ID["kingma2015adam"]  # arXiv 2014, ICLR 2015
    p = PERTURBATIONS["arxiv_version_mismatch"](src, _ctx())
    assert p.fields["year"] == "2014" and p.fields["eprint"] == "1412.6980"
    assert normalize_text(p.fields["booktitle"]) != normalize_text(src.venue)
    same_year = PERTURBATIONS["arxiv_version_mismatch"](BY_ID["vaswani2017attention"], _ctx())
    assert same_year.fields["year"] in {"2018", "2019"}
    assert PERTURBATIONS["arxiv_version_mismatch"](BY_ID["lecun2015deep"], _ctx()) is None  # no preprint


def test_every_hallucinated_perturbation_changes_the_citation():
    for name, fn in PERTURBATIONS.items():
        for ref in REFS:
            p = fn(ref, _ctx(3))
            if p is None:
                continue
            assert citation_identity(p.fields) != citation_identity(reference_fields(ref)), (name, ref.ref_id)
            assert not same_citation(p.fields, ref), (name, ref.ref_id)


def test_every_formatting_change_keeps_the_citation_valid():
    changed = 0
    for ref in REFS:
        base = reference_fields(ref)
        for name, change in FORMATTING_CHANGES.items():
            out = change(base, ref)
            if out is None:
                continue
            changed += 1
            assert same_citation(out, ref), (name, ref.ref_id, out)
        rng = random.Random(ref.ref_id)
        for _ in range(5):
            fields, names = reformat(base, ref, rng, max_changes=3)
            assert same_citation(fields, ref), (names, ref.ref_id)
    assert changed > 400


def test_formatting_examples():
    ref = BY_ID["vaswani2017attention"]
    base = reference_fields(ref)
    assert FORMATTING_CHANGES["author_last_first"](base, ref)["author"].startswith("Vaswani, Ashish and Shazeer, Noam")
    assert "Ł. Kaiser" in FORMATTING_CHANGES["author_initials"](base, ref)["author"]
    assert "Lukasz Kaiser" in FORMATTING_CHANGES["ascii_fold"](base, ref)["author"]
    assert FORMATTING_CHANGES["venue_abbreviation"](base, ref)["booktitle"] == "NeurIPS"
    assert FORMATTING_CHANGES["with_eprint"](base, ref)["eprint"] == "1706.03762"
    vdm = BY_ID["vandermaaten2008visualizing"]
    assert FORMATTING_CHANGES["author_last_first"](reference_fields(vdm), vdm)["author"].startswith("van der Maaten, Laurens")
    assert set(VENUE_ABBREVIATIONS) & {r.venue for r in REFS}


def test_same_citation_rejects_real_differences():
    ref = BY_ID["he2016deep"]
    base = reference_fields(ref)
    assert same_citation(base, ref)
    assert not same_citation({**base, "year": "2015"}, ref)
    assert not same_citation({**base, "title": base["title"] + " Revisited"}, ref)
    assert not same_citation({**base, "author": "Kaiming He and Xiangyu Zhang"}, ref)
    assert not same_citation({**base, "booktitle": "ICCV"}, ref)
    assert not same_citation({**base, "doi": "10.1109/CVPR.2016.91"}, ref)

"""CiteIntegrity-style suite: pairing, splitting, variants, and the three construction audits."""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict

import pytest

from corpora.citations.citeintegrity_suite import (
    ACCEPTABLE_VARIANTS,
    INCONSISTENT_VARIANTS,
    SAMPLE_SUITE_PATH,
    StructuredCitation,
    SuiteConfig,
    audit_suite,
    build_suite,
    hallmark_entries,
    load_suite_instances,
    split_pairs,
    suite_from_instances,
    suite_jsonl,
    title_typo,
    variants,
    venue_initials,
)
from corpora.citations.normalization import normalize_text, title_similarity
from corpora.citations.real_reference import Reference, load_references

REFS = load_references()


@pytest.fixture(scope="module")
def suite():
    return build_suite(REFS)


def test_bundled_suite_is_what_the_builder_makes(suite):
    assert SAMPLE_SUITE_PATH.read_text(encoding="utf-8") == suite_jsonl(suite)


def test_audits_pass_on_bundled_suite_file():
    stored = suite_from_instances(load_suite_instances(SAMPLE_SUITE_PATH))
    report = audit_suite(stored)
    assert report.ok, report.failures
    assert set(report.checks) == {"negatives_differ", "no_conflicting_labels", "pair_partition", "formatting_preserved",
                                  "export_round_trip", "acceptable_fields_agree"}


def test_eligibility_and_pairs(suite):
    excluded = dict(suite.excluded)
    assert excluded["vaswani2017attention"] == "missing DOI, title, authors, venue or year"  # no DOI
    assert excluded["schulman2017proximal"] == "missing DOI, title, authors, venue or year"  # preprint
    members = [m for p in suite.pairs for m in (p.first, p.second)]
    assert len(members) == len(set(members))  # disjoint pairs
    assert set(members) == set(suite.records)
    for p in suite.pairs:
        assert suite.strata[p.first] == suite.strata[p.second] == p.stratum
        a, b = suite.records[p.first], suite.records[p.second]
        assert {normalize_text(x) for x in a.authors} != {normalize_text(x) for x in b.authors}
    with_doi = [r for r in REFS if r.doi]
    per_domain = Counter(r.domain for r in with_doi)
    assert len(suite.pairs) == sum(n // 2 for n in per_domain.values())  # every stratum pairs all but one at most


def test_greedy_pairing_takes_the_most_similar_titles_first():
    refs = [
        Reference("a", "article", "Deep learning for protein folding", ("Ann Lee",), 2020, "J1", "x", doi="10.1/a"),
        Reference("b", "article", "Deep learning for protein folding tasks", ("Bo Chan",), 2021, "J2", "x", doi="10.1/b"),
        Reference("c", "article", "Glacier melt in alpine valleys", ("Cy Dunn",), 2019, "J3", "x", doi="10.1/c"),
        Reference("d", "article", "Glacier melt in alpine valleys revisited", ("Cy Dunn",), 2022, "J4", "x", doi="10.1/d"),
        Reference("e", "article", "Urban heat islands and mortality", ("Eve Fox",), 2020, "J5", "x", doi="10.1/e"),
    ]
    s = build_suite(refs, SuiteConfig(near_title_cutoff=None))
    pairs = {(p.first, p.second) for p in s.pairs}
    # a-b are closest; c-d share an author set so cannot pair; c or d pairs with e
    assert ("a", "b") in pairs and len(pairs) == 2
    assert ("c", "e") in pairs or ("d", "e") in pairs
    assert title_similarity(refs[0].title, refs[1].title) > 0.9
    # near-title cutoff drops b (0.95 similar to a) before pairing
    s95 = build_suite(refs, SuiteConfig(near_title_cutoff=0.9))
    assert dict(s95.excluded)["b"].startswith("title similarity >= 0.9")


def test_ten_variants_per_source_five_each(suite):
    per_source = defaultdict(list)
    for inst in suite.instances:
        per_source[inst.source_id].append(inst)
    assert len(per_source) == len(suite.records) == 2 * len(suite.pairs)
    for insts in per_source.values():
        assert [i.variant for i in insts] == list(ACCEPTABLE_VARIANTS + INCONSISTENT_VARIANTS)
        assert Counter(i.label for i in insts) == {"acceptable": 5, "inconsistent": 5}
        assert Counter(i.z for i in insts) == {1: 5, 0: 5}
    assert len(suite.instances) == 10 * len(suite.records)


def test_split_by_pair_with_floor_rule(suite):
    by_stratum = defaultdict(Counter)
    for p in suite.pairs:
        by_stratum[p.stratum][p.partition] += 1
    for counts in by_stratum.values():
        m = sum(counts.values())
        assert counts["train"] == int(0.6 * m)
        assert counts["validation"] == int(0.2 * m)
        assert counts["test"] == m - int(0.6 * m) - int(0.2 * m)
    other = split_pairs([(p.stratum, p.first, p.second, p.title_similarity) for p in suite.pairs], SuiteConfig(seed=1))
    assert {p.pair_id: p.partition for p in other} != {p.pair_id: p.partition for p in suite.pairs}  # the seed decides


def test_variant_constructions():
    s = StructuredCitation("10.1/src", "Self-Consistent Equations Including Exchange", ("Kohn", "Sham"), 1965, "Physical Review")
    d = StructuredCitation("10.1/don", "Inhomogeneous Electron Gas", ("Hohenberg", "Kohn2"), 1964, "Phys Rev B")
    v = {name: c for name, _, c in variants(s, d)}
    assert v["exact"] == s
    assert v["formatting"].normalized() == s.normalized() and v["formatting"] != s
    assert v["short"].authors == ("Kohn",) and v["short"].truncated and v["short"].venue == "PR"
    assert v["doi_omitted"].doi is None and v["doi_omitted"].title == "self consistent equations including exchange"
    assert v["title_typo"].doi is None and v["title_typo"].title == "Self-Consitent Equations Including Exchange"  # "Consistent" is the longest word
    assert v["doi_swap"] == dataclasses.replace(s, doi="10.1/don")
    assert v["author_swap"] == dataclasses.replace(s, authors=d.authors)
    assert v["year_shift"].year == 1968
    assert v["title_substitution"] == dataclasses.replace(s, title=d.title)
    assert v["composite_splice"] == StructuredCitation("10.1/don", s.title, d.authors, 1964, "Phys Rev B")


def test_title_typo_and_initials_rules():
    assert title_typo("Random Forests") == "Random Forsts"  # both 6+; "Forests" (7) is the longest
    assert title_typo("Abcdef Ghijkl") == "Abcef Ghijkl"  # tie: earliest word
    with pytest.raises(ValueError):
        title_typo("Short words only")
    assert venue_initials("Journal of Machine Learning Research") == "JOMLR"


def test_formatting_never_breaks_normalization_on_tricky_letters():
    s = StructuredCitation(None, "ıstanbul straße ǆungla: Ωmega", ("Dığıl", "Straße"), 2020, "Revue ıı")
    v = {name: c for name, _, c in variants(s, s)}
    assert v["formatting"].normalized() == s.normalized()


def _planted(suite, **changes):
    return dataclasses.replace(suite, **changes)


def test_audits_catch_each_planted_fault(suite):
    insts = list(suite.instances)
    # 1. a negative identical to its source
    i = next(k for k, x in enumerate(insts) if x.variant == "year_shift")
    src = suite.records[insts[i].source_id]
    bad1 = insts.copy()
    bad1[i] = dataclasses.replace(insts[i], citation=src)
    r1 = audit_suite(_planted(suite, instances=tuple(bad1)))
    assert any(insts[i].instance_id in f for f in r1.checks["negatives_differ"])
    assert r1.checks["no_conflicting_labels"]  # and now it shares the exact variant's input with the other label
    # 2. an instance moved to another partition than its pair
    j = next(k for k, x in enumerate(insts) if x.partition == "train")
    bad2 = insts.copy()
    bad2[j] = dataclasses.replace(insts[j], partition="test")
    r2 = audit_suite(_planted(suite, instances=tuple(bad2)))
    assert any(insts[j].instance_id in f for f in r2.checks["pair_partition"])
    # 3. a donor from outside the pair
    k = next(k for k, x in enumerate(insts) if x.variant == "doi_swap")
    outsider = next(r for r in suite.records if r not in (insts[k].source_id, insts[k].donor_id))
    bad3 = insts.copy()
    bad3[k] = dataclasses.replace(insts[k], donor_id=outsider)
    assert audit_suite(_planted(suite, instances=tuple(bad3))).checks["pair_partition"]
    # 4. a formatting variant that changed a field
    f = next(k for k, x in enumerate(insts) if x.variant == "formatting")
    bad4 = insts.copy()
    bad4[f] = dataclasses.replace(insts[f], citation=dataclasses.replace(insts[f].citation, year=1900))
    assert audit_suite(_planted(suite, instances=tuple(bad4))).checks["formatting_preserved"]
    assert audit_suite(suite).ok


def test_hallmark_export(suite):
    entries = hallmark_entries(suite)
    assert len(entries) == len(suite.instances)
    assert Counter(e["label"] for e in entries) == {"VALID": len(entries) // 2, "HALLUCINATED": len(entries) // 2}
    types = Counter(e["hallucination_type"] for e in entries if e["label"] == "HALLUCINATED")
    assert types == {"hybrid_fabrication": len(suite.records), "swapped_authors": len(suite.records),
                     None: len(suite.records), "chimeric_title": len(suite.records), "merged_citation": len(suite.records)}
    assert len({e["bibtex_key"] for e in entries}) == len(entries)
    short = next(e for e in entries if e["explanation"].startswith("CiteIntegrity short"))
    assert short["fields"]["author"].endswith(" and others")

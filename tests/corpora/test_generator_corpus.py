"""The seeded corpus generator: reproducible, balanced over types, audited, and its audits can fail."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from corpora.citations.audit import audit_corpus
from corpora.citations.fields import reference_fields
from corpora.citations.formatting import same_venue
from corpora.citations.generator import CorpusConfig, GeneratedEntry, corpus_jsonl, generate_corpus
from corpora.citations.real_reference import load_references, references_from_hallmark
from corpora.citations.taxonomy import SUBTEST_KEYS, hallmark_taxonomy

REFS = load_references()
TAX = hallmark_taxonomy()


@pytest.fixture(scope="module")
def corpus() -> list[GeneratedEntry]:
    return generate_corpus(REFS, CorpusConfig())


def test_same_seed_same_bytes_other_seed_other_bytes(corpus):
    assert corpus_jsonl(generate_corpus(REFS, CorpusConfig())) == corpus_jsonl(corpus)
    # the input order of the references does not matter either
    assert corpus_jsonl(generate_corpus(tuple(reversed(REFS)), CorpusConfig())) == corpus_jsonl(corpus)
    other = corpus_jsonl(generate_corpus(REFS, CorpusConfig(seed=1)))
    assert other != corpus_jsonl(corpus)


def test_counts_and_even_spread_over_all_types(corpus):
    labels = Counter(g.label for g in corpus)
    assert labels == {"VALID": 50, "HALLUCINATED": 50}
    per_type = Counter(g.entry["hallucination_type"] for g in corpus if g.label == "HALLUCINATED")
    assert set(per_type) == set(TAX.names)
    assert max(per_type.values()) - min(per_type.values()) <= 1
    assert sum(per_type.values()) == 50


def test_entries_have_hallmark_shape(corpus, hallmark_data):
    with open(hallmark_data / "dev_public.jsonl", encoding="utf-8") as f:
        released = json.loads(f.readline())
    base_keys = [k for k in released if k not in ("relabeled_from", "relabel_reason", "relabeled_by", "matched_source", "matched_id", "match_scores")]
    keys = set()
    for g in corpus:
        e = g.entry
        assert list(e) == base_keys
        assert re.fullmatch(r"[0-9a-f]{12}", e["bibtex_key"])
        keys.add(e["bibtex_key"])
        assert tuple(e["subtests"]) == SUBTEST_KEYS
        assert all(isinstance(v, str) for v in e["fields"].values())
        assert e["raw_bibtex"].startswith(f"@{e['bibtex_type']}{{") and e["fields"]["title"] in e["raw_bibtex"]
        assert e["schema_version"] == "1.0"
        if e["label"] == "HALLUCINATED":
            assert e["difficulty_tier"] == TAX.tier_of(e["hallucination_type"])
            assert e["subtests"]["cross_db_agreement"] is False
        else:
            assert e["hallucination_type"] is None and e["difficulty_tier"] is None
            assert all(v in (True, None) for v in e["subtests"].values())
    assert len(keys) == len(corpus)


def test_doi_subtest_follows_the_entry(corpus):
    for g in corpus:
        e = g.entry
        if "doi" not in e["fields"]:
            assert e["subtests"]["doi_resolves"] is None
        elif e["hallucination_type"] == "fabricated_doi":
            assert e["subtests"]["doi_resolves"] is False
        else:
            assert e["subtests"]["doi_resolves"] is True


def test_valid_entries_carry_formatting_changes(corpus):
    valid = [g for g in corpus if g.label == "VALID"]
    assert len({g.source_id for g in valid}) == 50
    changed = [g for g in valid if g.formatting]
    assert 20 <= len(changed) < 50  # most reformatted, some verbatim
    assert len({name for g in changed for name in g.formatting}) >= 7


def test_audits_pass_on_generated_corpus(corpus):
    report = audit_corpus(corpus, REFS, TAX)
    assert report.ok, report.failures
    assert set(report.checks) == {"negatives_differ", "no_conflicting_labels", "valid_is_acceptable", "taxonomy_consistent"}


def _with_entry(entry: GeneratedEntry, **changes) -> GeneratedEntry:
    return GeneratedEntry({**entry.entry, **changes}, entry.source_id, entry.donor_ids, entry.formatting)


def test_audits_catch_planted_faults(corpus):
    valid = next(g for g in corpus if g.label == "VALID")
    source = next(r for r in REFS if r.ref_id == valid.source_id)
    fabricated = next(g for g in corpus if g.entry["hallucination_type"] == "fabricated_doi")
    bad = [
        # a hallucinated entry that is its source verbatim
        _with_entry(fabricated, fields=reference_fields(next(r for r in REFS if r.ref_id == fabricated.source_id))),
        # the same input as a VALID entry, labelled HALLUCINATED
        _with_entry(valid, label="HALLUCINATED", hallucination_type="wrong_venue", difficulty_tier=2, bibtex_key="ffffffffffff"),
        # a VALID entry whose year is wrong
        _with_entry(valid, fields={**valid.entry["fields"], "year": str(source.year + 1)}, bibtex_key="eeeeeeeeeeee"),
        # a wrong tier and a sub-test against the signature
        _with_entry(fabricated, difficulty_tier=3, subtests={**fabricated.entry["subtests"], "doi_resolves": True}),
    ]
    report = audit_corpus([valid, *bad], REFS, TAX)
    assert not report.ok
    assert len(report.checks["negatives_differ"]) == 2  # the verbatim copy and the relabelled VALID
    assert report.checks["no_conflicting_labels"]
    assert len(report.checks["valid_is_acceptable"]) == 1
    assert any("tier 3" in f for f in report.checks["taxonomy_consistent"])
    assert any("doi_resolves" in f for f in report.checks["taxonomy_consistent"])


def test_subset_of_types_and_sizes():
    entries = generate_corpus(REFS, CorpusConfig(seed=5, n_valid=10, n_hallucinated=9, types=("near_miss_title", "future_date", "swapped_authors")))
    assert Counter(g.entry["hallucination_type"] for g in entries if g.label == "HALLUCINATED") == {
        "near_miss_title": 3, "future_date": 3, "swapped_authors": 3,
    }
    assert audit_corpus(entries, REFS, TAX).ok


def test_impossible_requests_fail_clearly():
    with pytest.raises(ValueError, match="n_valid=500"):
        generate_corpus(REFS, CorpusConfig(n_valid=500))
    with pytest.raises(ValueError, match="preprint_as_published"):
        generate_corpus(REFS, CorpusConfig(n_valid=0, n_hallucinated=40, types=("preprint_as_published",)))
    with pytest.raises(ValueError, match="no perturbation registered for type 'bogus'"):
        generate_corpus(REFS, CorpusConfig(types=("bogus",)))


def test_larger_corpus_reuses_sources_without_duplicates():
    entries = generate_corpus(REFS, CorpusConfig(seed=9, n_valid=81, n_hallucinated=400, types=tuple(t for t in TAX.names if t != "preprint_as_published")))
    assert len(entries) == 481
    assert audit_corpus(entries, REFS, TAX).ok


def test_generates_from_hallmark_valid_records(hallmark_data):
    refs = references_from_hallmark(hallmark_data / "dev_public.jsonl")
    assert len(refs) > 450 and all(r.ref_id and r.authors for r in refs)
    types = tuple(t for t in TAX.names if t not in ("preprint_as_published", "arxiv_version_mismatch"))
    entries = generate_corpus(refs, CorpusConfig(seed=2, n_valid=200, n_hallucinated=240, types=types))
    report = audit_corpus(entries, refs, TAX)
    assert report.ok, report.failures[:5]
    by_id = {r.ref_id: r for r in refs}
    for g in entries:
        if g.entry["hallucination_type"] == "wrong_venue":  # "ICML" and its long form are one venue
            assert not same_venue(by_id[g.source_id].venue, g.entry["fields"]["booktitle"])
    with pytest.raises(ValueError, match="preprint_as_published"):  # HALLMARK records carry no arXiv ids
        generate_corpus(refs, CorpusConfig(n_valid=10, n_hallucinated=14))


def test_venue_equivalence():
    assert same_venue("ICML", "International Conference on Machine Learning (ICML)")
    assert same_venue("NeurIPS", "Advances in Neural Information Processing Systems")
    assert same_venue("J. Mach. Learn. Res.", "JMLR")
    assert not same_venue("ICLR", "International Conference on Machine Learning (ICML)")
    assert not same_venue("Nature", "Nature Communications")

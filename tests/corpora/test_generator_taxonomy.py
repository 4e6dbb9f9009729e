"""The taxonomy data file against HALLMARK's paper table and its released data."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest

from corpora.citations.taxonomy import SUBTEST_KEYS, TAXONOMY_PATH, hallmark_taxonomy, load_taxonomy

PAPER_TIERS = {
    "fabricated_doi": 1, "nonexistent_venue": 1, "placeholder_authors": 1, "future_date": 1,
    "chimeric_title": 2, "wrong_venue": 2, "swapped_authors": 2, "preprint_as_published": 2,
    "hybrid_fabrication": 2, "merged_citation": 2, "partial_author_list": 2,
    "near_miss_title": 3, "plausible_fabrication": 3, "arxiv_version_mismatch": 3,
}


def test_fourteen_types_with_paper_tiers_and_stress_flags():
    tax = hallmark_taxonomy()
    assert dict((t.name, t.tier) for t in tax.types) == PAPER_TIERS
    assert {t.name for t in tax.types if t.stress_test} == {"merged_citation", "partial_author_list", "arxiv_version_mismatch"}
    assert [t.name for t in tax.by_tier(1)] == ["fabricated_doi", "nonexistent_venue", "placeholder_authors", "future_date"]
    assert tax["author_mismatch"].name == "swapped_authors"  # the paper's name for the type
    assert "author_mismatch" in tax and "made_up" not in tax
    with pytest.raises(KeyError, match="unknown hallucination type 'made_up'"):
        tax["made_up"]


def test_signatures_follow_table_1():
    tax = hallmark_taxonomy()
    for t in tax.types:
        assert tuple(t.signature) == SUBTEST_KEYS
        assert t.signature["cross_db_agreement"] is False  # X fails for every type
    # spot rows of table 1 (D T A V F X)
    assert dict(tax["fabricated_doi"].signature) == {
        "doi_resolves": False, "title_exists": True, "authors_match": True,
        "fields_complete": True, "cross_db_agreement": False, "venue_correct": True,
    }
    assert tax["future_date"].signature["fields_complete"] is False
    assert tax["chimeric_title"].signature["venue_correct"] is None
    assert tax["plausible_fabrication"].signature["fields_complete"] is None
    assert tax["near_miss_title"].signature["title_exists"] is False


def test_folds():
    tax = hallmark_taxonomy()
    assert set(tax.fold("real_work")) == {"wrong_venue", "preprint_as_published", "partial_author_list", "arxiv_version_mismatch"}
    assert len(tax.fold("neurips_2026")) == 7
    with pytest.raises(KeyError, match="unknown fold"):
        tax.fold("nope")


def test_bad_taxonomy_file_is_rejected(tmp_path):
    raw = json.loads(TAXONOMY_PATH.read_text(encoding="utf-8"))
    raw["types"][0]["tier"] = 4
    bad = tmp_path / "tax.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="tier 4"):
        load_taxonomy(bad)


def test_taxonomy_matches_released_hallmark_data(hallmark_data):
    """Every type in dev_public and stress_test has the taxonomy's tier, and the majority sub-test
    value per type agrees with each expectation the signature fixes (D aside: it depends on the DOI)."""
    tax = hallmark_taxonomy()
    patterns: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    seen = set()
    for split in ("dev_public.jsonl", "stress_test.jsonl"):
        for line in (hallmark_data / split).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            name = row.get("hallucination_type")
            if row.get("label") != "HALLUCINATED" or not name:
                continue
            seen.add(name)
            assert row["difficulty_tier"] == tax.tier_of(name), (name, row["difficulty_tier"])
            for k, v in row["subtests"].items():
                patterns[name][k][v] += 1
    assert seen == set(tax.names)
    for name, by_key in patterns.items():
        for key, expected in tax[name].signature.items():
            if expected is None or key == "doi_resolves":
                continue
            majority = by_key[key].most_common(1)[0][0]
            assert majority is expected, (name, key, dict(by_key[key]))

"""The review-hallucination taxonomy as data: bundled anchors and leaves, extension, validation."""

from __future__ import annotations

import pytest

from corpora.reviews.records import ANCHORS
from corpora.reviews.taxonomy import TAXONOMY_PATH, TaxonomyError, load_review_taxonomy, review_taxonomy


def test_bundled_taxonomy_has_the_nine_anchors_and_the_papers_leaves():
    tx = review_taxonomy()
    assert tuple(a.name for a in tx.anchors) == ANCHORS
    assert tx.anchor("Number").description.startswith("A claim has a different number")
    assert tx.anchor("Number").rule_injector == "number" and "clarity" in tx.anchor("Number").avoid_aspects
    assert [n.name for n in tx.leaves("Number")] == [
        "Event Year Fabrication", "Citation Year Substitution", "Grant or Funding Year Mismatch",
        "P-Value Mismatch", "Reported Score Mismatch", "Scale Parameter Error", "Count Mismatch",
    ]  # fmt: skip
    assert tx.path_of("Number", "Citation Year Substitution") == ("Number", "Year Discrepancy", "Citation Year Substitution")
    assert tx.path_of("Hyperbole", None) == ("Hyperbole",)
    assert tx.node("Inflated Comparison Advantage").name == "Inflated Comparative Advantage"  # the paper's 2nd spelling
    named = {"Attribute Substitution", "Method Misattribution", "Mischaracterized Paper Result", "Acronym Misinterpretation",
             "Jargon Term Substitution", "Mischaracterized Algorithm", "Domain Extrapolation",
             "Baseline Performance Fabrication", "Mischaracterized Comparative Setting"}  # fmt: skip
    leaves = {n.name for a in ANCHORS for n in tx.leaves(a)}
    assert named <= leaves
    assert all(tx.leaves(a) for a in ANCHORS)
    with pytest.raises(KeyError, match="under 'Number', not 'Entity'"):
        tx.path_of("Entity", "Count Mismatch")


def test_extension_file_adds_leaves_and_hints(tmp_path):
    extra = tmp_path / "mine.toml"
    extra.write_text(
        '[[anchor]]\nname = "Hyperbole"\nrule_injector = "number"\n\n'
        '[[node]]\npath = ["Hyperbole", "Inflated Comparative Advantage", "Effect Size Inflation"]\n'
        'description = "Doubles the reported effect."\nsource = "ours"\n\n'
        '[[node]]\npath = ["Temporal", "Tense Change"]\ndescription = "Past becomes future."\n'
    )
    tx = load_review_taxonomy(TAXONOMY_PATH, [extra])
    assert "Effect Size Inflation" in [n.name for n in tx.leaves("Hyperbole")]
    assert tx.anchor("Hyperbole").rule_injector == "number"
    assert tx.anchor("Hyperbole").description.startswith("A claim is based on accurate information")  # kept
    assert tx.instruction("Temporal", "Tense Change") == "Past becomes future."
    assert tx.version == "1+mine" and tx.sources[-1] == str(extra)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[node]]\npath = ["Numbers", "X"]\ndescription = "d"\n', "path starts with 'Numbers', not one of the nine"),
        ('[[node]]\npath = ["Number", "Nope", "X"]\ndescription = "d"\n', "parent Number > Nope is not defined"),
        ('[[node]]\npath = ["Number", "Count Mismatch"]\ndescription = "d"\n', "node name 'Count Mismatch' already used"),
        ('[[node]]\npath = ["Number", "X"]\ndescription = "  "\n', "node 'X' has an empty description"),
        ('[[node]]\npath = ["Number", "X"]\ndescription = "d"\ncolour = "red"\n', "unknown keys ['colour']"),
        ('[[anchor]]\nname = "Other"\n', "anchor 'Other' is not one of the nine"),
        ('[[anchor]]\nname = "Entity"\nrule_injector = "magic"\n', "rule_injector 'magic' unknown"),
        ('[[anchor]]\nname = "Entity"\navoid_aspects = ["vibes"]\n', "avoid_aspects ['vibes'] unknown"),
        ('[[node]\n', "not valid TOML"),
    ],
)
def test_invalid_extension_files_name_file_and_entry(tmp_path, text, message):
    extra = tmp_path / "bad.toml"
    extra.write_text(text)
    with pytest.raises(TaxonomyError) as err:
        load_review_taxonomy(TAXONOMY_PATH, [extra])
    assert str(err.value).startswith(str(extra)) and message in str(err.value)


def test_a_base_file_missing_anchors_is_refused(tmp_path):
    base = tmp_path / "base.toml"
    base.write_text('name = "x"\n[[anchor]]\nname = "Number"\ndescription = "d"\n')
    with pytest.raises(TaxonomyError, match="anchors .*'Entity'.* are not defined"):
        load_review_taxonomy(base)
    with pytest.raises(TaxonomyError, match="taxonomy file not found"):
        load_review_taxonomy(tmp_path / "missing.toml")

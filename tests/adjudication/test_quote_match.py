"""Mechanical detection matching: offsets first, then normalised fuzzy containment."""

from __future__ import annotations

from adjudication.papers.quote_match import quote_matches
from tests.adjudication.paper_copies import injected_copy


def files_and_injections():
    text, injections = injected_copy()
    return {"main.tex": text}, injections


def test_quote_overlapping_the_injected_span_matches_and_one_elsewhere_does_not():
    files, (sign, total, drift) = files_and_injections()
    assert quote_matches({"quote": "F = (a+b)^2 = a^2 - 2ab"}, sign, files)
    assert quote_matches({"quote": "Total  &\n130"}, total, files)  # whitespace differs from the source
    assert quote_matches({"quote": "30 of the 120 galaxies"}, total, files) is None
    assert quote_matches({"quote": "Total & 130"}, sign, files) is None
    assert quote_matches({"quote": None, "description": "a^2 - 2ab"}, sign, files) is None


def test_mechanical_check_quotes_count_as_quotes():
    files, (_, _, drift) = files_and_injections()
    flag = {"quote": "ratio is 0.34", "check": {"quotes": [{"text": "ratio is 0.36"}]}}
    assert "overlaps" in quote_matches(flag, drift, files)


def test_paraphrased_quote_of_the_injected_text_matches_only_when_closer_to_injected_than_original():
    injection = {"file": "other.tex", "start": 0, "end": 10, "original": r"$\alpha \approx -1.5$ in the abstract",
                 "injected": r"$\alpha \approx -5.1$ in the abstract"}
    assert quote_matches({"quote": "the abstract says alpha approx -5.1 in the abstract"}, injection, {})
    assert quote_matches({"quote": "alpha approx -1.5 in the abstract"}, injection, {}) is None
    short = {"file": "x", "start": -1, "end": -1, "original": "0.34", "injected": "0.35"}
    assert quote_matches({"quote": "the value 0.35 is odd"}, short, {}) is None  # too short to match by text


def test_a_quote_must_cover_the_changed_characters_not_just_the_placement_window():
    """Issue 15: a flag quoting "has more" counted as detecting "than -> then"."""
    from corpora.papers.audit_corpus import changed_span

    clean = "Our network has more than ten layers and fits the data well."
    original, injected = "has more than", "has more then"
    text = clean.replace(original, injected)
    start = text.index(injected)
    o1, o2, n1, n2 = changed_span(original, injected)
    assert (original[o1:o2], injected[n1:n2]) == ("a", "e")
    inj = {"file": "main.tex", "start": start, "end": start + len(injected), "original": original,
           "injected": injected, "changed_start": start + n1, "changed_end": start + n2}
    files = {"main.tex": text}
    assert quote_matches({"quote": "has more"}, inj, files) is None
    assert quote_matches({"quote": "Our network has"}, inj, files) is None
    assert "changed span" in quote_matches({"quote": "more then ten"}, inj, files)
    # Paraphrased (not in the file): must still reach the changed word, and be closer to the injected text.
    assert quote_matches({"quote": "network has more then"}, inj, {}) is not None
    assert quote_matches({"quote": "network has more"}, inj, {}) is None

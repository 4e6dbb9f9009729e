"""field_match's explicit strictness (issue 23 item 5): `title_strictness` and `year_tolerance`,
their HALLMARK-compatible defaults, correctly re-formatted real citations that stay VALID under
every setting, and run ids unchanged for configs that do not set them (or write the default)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from storage.records import Item
from verifiers.citations.field_match import _title_edited
from verifiers.registry import SystemSpec, build_system, get_entry
from verifiers.system import RunContext

CTX = RunContext(run_id="test", snapshot="2026-05-05")
ADAPLER = {"title": "AdapLeR: Speeding up Inference by Adaptive Length Reduction",
           "author": "Ali Modarressi and Hosein Mohebbi and Mohammad Taher Pilehvar", "year": "2022",
           "booktitle": "ACL"}
#: correctly re-formatted citations of the same paper (name orders, initials, "and others", the
#: venue in full and abbreviated, a lower-case title): never a hallucination under any setting
REFORMATTED = {
    "family_first": {"author": "Modarressi, Ali and Mohebbi, Hosein and Pilehvar, Mohammad Taher"},
    "initials": {"author": "A. Modarressi and H. Mohebbi and M. T. Pilehvar"},
    "and_others": {"author": "Ali Modarressi and others"},
    "venue_full": {"booktitle": "Proceedings of the 60th Annual Meeting of the Association for Computational Linguistics"},
    "venue_abbreviated": {"booktitle": "ACL 2022"},
    "lower_case_title": {"title": ADAPLER["title"].lower()},
}
#: HALLMARK near_miss_title edits of the title: caught by the default, accepted by "lenient"
NEAR_MISSES = {
    "plural": "AdapLeR: Speeding up Inference by Adaptive Length Reductions",
    "one_letter": "AdapLeR: Speeding up Inference by Adaptive Lenght Reduction",
    "word_dropped": "AdapLeR: Speeding Inference by Adaptive Length Reduction",
}


def item(item_id: str, **fields: str) -> Item:
    return Item(item_id, "citation", "test", "dev", {"bibtex_type": "inproceedings", "fields": fields})


def run(index_path: Path, items: list[Item], **args: object) -> dict[str, object]:
    spec = SystemSpec("field_match", {"sources": ["offline_index"], "index_path": str(index_path),
                                      "closed_world": True, **args})
    return {o.item_id: o for o in asyncio.run(build_system(spec).run(items, CTX))}


@pytest.mark.parametrize("strictness", ["hallmark", "lenient", "exact"])
def test_reformatted_real_citations_stay_valid_under_every_strictness(real_index_path: Path, strictness: str) -> None:
    items = [item(kind, **{**ADAPLER, **change}) for kind, change in REFORMATTED.items()]
    out = run(real_index_path, items, title_strictness=strictness, year_tolerance=0)
    assert {k: o.label for k, o in out.items()} == dict.fromkeys(REFORMATTED, "VALID"), \
        {k: o.reason for k, o in out.items() if o.label != "VALID"}


def test_near_miss_titles_are_hallucinated_by_default_and_accepted_when_lenient(real_index_path: Path) -> None:
    items = [item(kind, **{**ADAPLER, "title": title}) for kind, title in NEAR_MISSES.items()]
    default = run(real_index_path, items)
    assert {k: (o.label, o.predicted_type) for k, o in default.items()} == \
        dict.fromkeys(NEAR_MISSES, ("HALLUCINATED", "near_miss_title"))
    lenient = run(real_index_path, items, title_strictness="lenient")
    assert {k: o.label for k, o in lenient.items()} == dict.fromkeys(NEAR_MISSES, "VALID")


def test_year_tolerance(real_index_path: Path) -> None:
    shifted = [item("year_minus_1", **{**ADAPLER, "year": "2021"}), item("year_minus_2", **{**ADAPLER, "year": "2020"})]
    default = run(real_index_path, shifted)  # one year: a preprint's year against the proceedings'
    assert default["year_minus_1"].label == "VALID"
    assert (default["year_minus_2"].label, default["year_minus_2"].predicted_type) == \
        ("HALLUCINATED", "arxiv_version_mismatch")
    exact = run(real_index_path, shifted, year_tolerance=0)
    assert (exact["year_minus_1"].label, exact["year_minus_1"].predicted_type) == \
        ("HALLUCINATED", "arxiv_version_mismatch")


def test_title_edits_hyphens_and_subtitles() -> None:
    record = "ExStrucTiny: A Benchmark for Schema-Variable Structured Information Extraction"
    assert _title_edited("ExStrucTiny: A Benchmark for Schema Variable Structured Information Extraction", record, True)
    assert _title_edited("UniT: Chain of-Thought Scaling", "UniT: Chain-of-Thought Scaling", True)
    assert not _title_edited("BEiT: BERT Pretraining of Image Transformers", "BEiT: BERT Pre-Training of Image Transformers", True)
    assert not _title_edited("{BEiT}: {BERT} pre-training of image transformers", "BEiT: BERT Pre-Training of Image Transformers", True)
    assert not _title_edited("AdapLeR", ADAPLER["title"], True)  # the subtitle dropped: "hallmark" accepts it
    assert _title_edited("AdapLeR", ADAPLER["title"], False)  # "exact" does not
    assert _title_edited("Adversarial Balancing-based Representation Learning for Causal Effect Inference",
                         "Adversarial Balancing-based Representation Learning for Causal Effect Inference with "
                         "Observational Data", True)  # no subtitle mark: words dropped from the title


def test_strictness_values_are_checked_before_a_run() -> None:
    entry = get_entry("field_match")
    assert any("title_strictness" in p for p in entry.argument_problems({"title_strictness": "strict"}))
    assert any("year_tolerance" in p for p in entry.argument_problems({"year_tolerance": "1"}))
    assert entry.argument_problems({"title_strictness": "lenient", "year_tolerance": 0}) == []


def test_run_ids_unchanged_when_the_new_arguments_are_unset_or_default() -> None:
    args = {"sources": ["offline_index"], "index_path": "idx.parquet", "closed_world": True}
    before = "7e0beb9b9119"  # SystemSpec("field_match", args).config_hash() before the arguments existed
    assert SystemSpec("field_match", args).config_hash() == before
    assert SystemSpec("field_match", {**args, "title_strictness": "hallmark", "year_tolerance": 1}).config_hash() == before
    assert SystemSpec("field_match", {**args, "title_strictness": "lenient"}).config_hash() != before
    assert SystemSpec("field_match", {**args, "year_tolerance": 0}).config_hash() != before


class TwoYears:
    """A source holding one paper twice, a year apart (an arXiv year and the proceedings' year)."""

    name = "two_years"

    def __init__(self) -> None:
        from clients.bib_record import Author, BibRecord

        authors = (Author("Zhao", "Chen"), Author("Liu", "Shuming"), Author("Mangalam", "Karttikeya"))
        title = "Re2TAL: Rewiring Pretrained Video Backbones for Reversible Temporal Action Localization"
        self.records = [BibRecord(self.name, title, authors, year, "CVPR") for year in (2022, 2023)]

    async def lookup_doi(self, doi: str) -> None:
        return None

    async def search_title(self, title: str, limit: int = 5) -> list[object]:
        return self.records[:limit]


@pytest.mark.parametrize("year", ["2022", "2023"])
def test_of_two_equal_titles_the_record_of_the_cited_year_is_compared(year: str) -> None:
    cited = item("re2tal", title=TwoYears().records[0].title, author="Chen Zhao and Shuming Liu and Karttikeya Mangalam",
                 year=year, booktitle="CVPR")
    spec = SystemSpec("field_match", {"sources": [TwoYears()], "closed_world": True, "year_tolerance": 0})
    out = asyncio.run(build_system(spec).run([cited], CTX))[0]
    assert out.label == "VALID", out.reason

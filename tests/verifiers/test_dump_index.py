"""An offline index opened straight from a small dump, and journal-abbreviation venue agreement:
together they let the bundled sample run show real detection with no network."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest

from corpora.citations.normalization import is_venue_abbreviation, venues_agree
from index.offline_index import open_index
from index.readers import sniff_format


@pytest.mark.parametrize(
    ("short", "full"),
    [
        ("J. Mol. Biol.", "Journal of Molecular Biology"),
        ("J. R. Stat. Soc. B", "Journal of the Royal Statistical Society: Series B (Methodological)"),
        ("Nat. Mach. Intell.", "Nature Machine Intelligence"),
        ("Phys. Rev. Lett.", "Physical Review Letters"),
    ],
)
def test_journal_abbreviations_agree(short, full):
    assert is_venue_abbreviation(short, full)
    assert venues_agree(short, full) is True
    assert venues_agree(full, short) is True


@pytest.mark.parametrize(
    ("short", "full"),
    [
        ("Phys. Rev. Lett.", "Physical Review B"),  # another journal of the same family
        ("J. Mol. Biol.", "Journal of Machine Learning Research"),
        ("Mol. Biol.", "Journal of Molecular Biology"),  # must start where the long name starts
        ("Journal of Molecular Biology", "Journal of Molecular Biology"),  # not an abbreviation
        ("J. Mol. Biol.", "Journal of Molecular Biology and Genetics of Insects and Plants"),  # too much left over
    ],
)
def test_other_venues_are_not_abbreviations(short, full):
    assert not is_venue_abbreviation(short, full)


def _reference(ref_id: str, title: str, authors: list[str], venue: str) -> dict:
    return {"ref_id": ref_id, "bibtex_type": "article", "title": title, "authors": authors, "year": 2001,
            "journal": venue, "domain": "bio"}


def test_index_opens_from_a_reference_list(tmp_path):
    dump = tmp_path / "refs.jsonl"
    rows = [_reference("a", "Folding of small proteins", ["Ada Lovelace", "Alan Turing"], "J. Mol. Biol."),
            _reference("b", "Sparse coding in cortex", ["Grace Hopper"], "Neural Computation")]
    dump.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert sniff_format(dump) == "references"
    index = open_index(dump)
    assert index.table.num_rows == 2
    hits = asyncio.run(index.search_title("Folding of Small Proteins"))
    assert hits[0].title == "Folding of small proteins"
    assert [a.family for a in hits[0].authors] == ["Lovelace", "Turing"]
    assert hits[0].venue == "J. Mol. Biol."


def test_bundled_sample_index_resolves_from_the_repository(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # a worker whose cwd is not the repository
    index = open_index("corpora/samples/real_references.jsonl")
    assert index.table.num_rows == 81


def test_unknown_dump_format_is_a_clear_error(tmp_path):
    dump = tmp_path / "mystery.jsonl"
    dump.write_text('{"x": 1}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="cannot tell the dump format"):
        sniff_format(dump)


def test_a_run_can_say_which_index_answered_it(tmp_path):
    from index.build import IndexSource, build_index
    from index.offline_index import index_provenance
    from verifiers import SystemSpec

    dump = tmp_path / "refs.jsonl"
    dump.write_text(json.dumps(_reference("a", "Folding of small proteins", ["Ada Lovelace"], "J. Mol. Biol.")) + "\n",
                    encoding="utf-8")
    built = tmp_path / "index.parquet"
    build_index([IndexSource("references", str(dump))], built)
    provenance = index_provenance(built)
    assert provenance["records"] == 1 and len(provenance["sha256"]) == 64
    assert provenance["sources"] == [{"format": "references", "file": "refs.jsonl", "parts": 1,
                                      "bytes": dump.stat().st_size, "modified": provenance["sources"][0]["modified"],
                                      "sha256": hashlib.sha256(dump.read_bytes()).hexdigest(),
                                      "records_read": 1, "records_skipped": 0, "dump_date": None}]
    assert provenance["built_at"] and provenance["per_origin"] == {"references": 1}
    in_memory = index_provenance(dump)  # a dump indexed at load time
    assert in_memory["records"] == 1 and in_memory["sources"][0]["format"] == "references"
    spec = SystemSpec("field_match", {"sources": ["offline_index"], "index_path": str(built)})
    assert spec.provenance()["index"]["sha256"] == provenance["sha256"]
    assert SystemSpec("prescreen", {}).provenance() == {}

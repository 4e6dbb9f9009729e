"""Streaming readers of the real dump formats (Crossref data file parts, OpenAlex snapshot, arXiv
snapshot, ACL Anthology), format detection, the build's provenance and the evidence registries.

Every dump here is made in the test, in the shapes the real dumps and recorded responses have."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from index.build import IndexSource, build_index
from index.evidence import (
    EVIDENCE_METADATA_KEY,
    IncompleteRegistries,
    IndexEvidence,
    registry_gaps,
    venue_name_key,
)
from index.readers import DumpLog, SkippedRecord, dump_files, read_source, sniff_format
from jobs.build_index import main as build_main


def crossref_work(doi: str, title: str, family: str, year: int, venue: str, short: str | None = None,
                  indexed: str = "2025-03-01T10:00:00Z") -> dict:
    """A work as Crossref's REST API and public data file write it."""
    return {"DOI": doi, "URL": f"https://doi.org/{doi}", "title": [title], "subtitle": [],
            "author": [{"given": "Ada", "family": family, "sequence": "first", "affiliation": []}],
            "container-title": [venue], "short-container-title": [short] if short else [],
            "issued": {"date-parts": [[year, 5]]}, "type": "proceedings-article", "prefix": doi.split("/")[0],
            "indexed": {"date-parts": [[2025, 3, 1]], "date-time": indexed, "timestamp": 1}}


def openalex_work(n: int, title: str, doi: str | None, venue: str, updated: str, arxiv: str | None = None) -> dict:
    """An OpenAlex Work as the snapshot's part files hold it (one per line)."""
    locations = [{"landing_page_url": f"https://arxiv.org/abs/{arxiv}", "source": None}] if arxiv else []
    return {"id": f"https://openalex.org/W{n}", "doi": f"https://doi.org/{doi}" if doi else None, "title": title,
            "display_name": title, "publication_year": 2021, "type": "article",
            "authorships": [{"author_position": "first", "author": {"id": "https://openalex.org/A1",
                                                                    "display_name": "Grace B. Hopper"}}],
            "primary_location": {"source": {"id": "https://openalex.org/S1", "display_name": venue,
                                            "abbreviated_title": "J. Test. Res."}},
            "locations": locations, "ids": {"openalex": f"https://openalex.org/W{n}"}, "updated_date": updated}


def arxiv_paper(arxiv_id: str, title: str, journal: str | None = None, doi: str | None = None) -> dict:
    """A line of arXiv's metadata snapshot (Kaggle `arxiv-metadata-oai-snapshot.json`)."""
    return {"id": arxiv_id, "submitter": "Ada Lovelace", "authors": "Ada Lovelace and Charles Babbage",
            "title": f"  {title}\n", "comments": "10 pages", "journal-ref": journal, "doi": doi,
            "categories": "cs.LG", "abstract": "...",
            "versions": [{"version": "v1", "created": "Mon, 2 Apr 2018 19:18:42 GMT"}],
            "update_date": "2019-01-15", "authors_parsed": [["Lovelace", "Ada", ""], ["Babbage", "Charles", ""]]}


def write_jsonl_gz(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return path


@pytest.fixture
def crossref_dump(tmp_path: Path) -> Path:
    folder = tmp_path / "crossref-2025"
    write_jsonl_gz(folder / "0.jsonl.gz", [crossref_work("10.1109/CVPR.2019.1", "Deep Things: A Study", "Lovelace",
                                                         2019, "Proceedings of the 32nd IEEE Conference on Things",
                                                         "Proc. IEEE Things")])  # fmt: skip
    write_jsonl_gz(folder / "1.jsonl.gz", [crossref_work("10.18653/v1/2022.acl-long.1", "AdapLeR", "Modarressi", 2022,
                                                         "Annual Meeting of the ACL", indexed="2025-04-02T00:00:00Z")])  # fmt: skip
    return folder


def test_crossref_data_file_parts_stream_into_rows(crossref_dump: Path) -> None:
    assert [p.name for p in dump_files(crossref_dump)] == ["0.jsonl.gz", "1.jsonl.gz"]
    assert sniff_format(crossref_dump) == "crossref"
    rows = list(read_source("crossref", crossref_dump))
    assert [r["doi"] for r in rows] == ["10.1109/cvpr.2019.1", "10.18653/v1/2022.acl-long.1"]
    assert rows[0]["title"] == "Deep Things: A Study" and rows[0]["year"] == 2019
    assert rows[0]["authors"] == [{"family": "Lovelace", "given": "Ada"}]
    assert rows[0]["venue_short"] == "Proc. IEEE Things" and rows[1]["updated"] == "2025-04-02T00:00:00Z"


def test_a_broken_json_line_is_skipped_and_named_by_file_and_line(tmp_path: Path) -> None:
    part = tmp_path / "0.jsonl.gz"
    with gzip.open(part, "wt", encoding="utf-8") as f:
        f.write(json.dumps(crossref_work("10.1000/a", "A", "X", 2020, "V")) + "\n{not json\n"
                + json.dumps(crossref_work("10.1000/c", "C", "X", 2020, "V")) + "\n")
    skipped: list[SkippedRecord] = []
    rows = list(read_source("crossref", part, log=DumpLog(on_skip=skipped.append)))
    assert [r["doi"] for r in rows] == ["10.1000/a", "10.1000/c"]
    assert [str(s) for s in skipped] == [f"{part}:2: not JSON (Expecting property name enclosed in double quotes "
                                         "at column 2)"]


def test_openalex_snapshot_folder_streams_every_part(tmp_path: Path) -> None:
    works = tmp_path / "openalex" / "data" / "works"
    write_jsonl_gz(works / "updated_date=2025-01-01" / "part_000.gz",
                   [openalex_work(1, "Graph Things", "10.5555/g.1", "Journal of Testing", "2025-01-01")])
    write_jsonl_gz(works / "updated_date=2025-02-03" / "part_000.gz",
                   [openalex_work(2, "Preprint Things", None, "arXiv (Cornell University)", "2025-02-03", "2101.00042")])
    (works / "manifest").write_text("{}", encoding="utf-8")  # the snapshot's manifest is not data
    assert sniff_format(works) == "openalex"
    rows = list(read_source("openalex", works))
    assert len(rows) == 2 and rows[0]["doi"] == "10.5555/g.1" and rows[1]["arxiv_id"] == "2101.00042"
    assert rows[0]["authors"] == [{"family": "Hopper", "given": "Grace B."}]
    assert rows[0]["venue_short"] == "J. Test. Res." and rows[1]["updated"] == "2025-02-03"


def test_arxiv_snapshot_lines_become_rows(tmp_path: Path) -> None:
    snapshot = tmp_path / "arxiv-metadata-oai-snapshot.json"
    snapshot.write_text(json.dumps(arxiv_paper("1804.01234", "Learning Things")) + "\n"
                        + json.dumps(arxiv_paper("hep-th/9901001", "Old Strings", "Nucl. Phys. B 500 (1999) 1",
                                                 "10.1016/S0550-3213(99)00001-1")) + "\n", encoding="utf-8")
    assert sniff_format(snapshot) == "arxiv"
    rows = list(read_source("arxiv", snapshot))
    assert rows[0]["title"] == "Learning Things" and rows[0]["arxiv_id"] == "1804.01234"
    assert rows[0]["year"] == 2018 and rows[0]["venue"] == "arXiv" and rows[0]["type"] == "preprint"
    assert [a["family"] for a in rows[0]["authors"]] == ["Lovelace", "Babbage"]
    assert rows[1]["arxiv_id"] == "hep-th/9901001" and rows[1]["venue"] == "Nucl. Phys. B 500 (1999) 1"
    assert rows[1]["doi"] == "10.1016/s0550-3213(99)00001-1" and rows[1]["updated"] == "2019-01-15"


def test_acl_anthology_collection_streams_with_venue_ids(tmp_path: Path) -> None:
    xml = tmp_path / "anthology" / "2099.acl.xml"
    xml.parent.mkdir()
    xml.write_text("""<?xml version='1.0' encoding='UTF-8'?>
<collection id="2099.acl">
  <volume id="long" ingest-date="2099-05-01" type="proceedings">
    <meta><booktitle>Proceedings of the 97th Annual Meeting of the <fixed-case>ACL</fixed-case></booktitle>
      <year>2099</year><venue>acl</venue></meta>
    <paper id="1"><title><fixed-case>A</fixed-case>dap: Things</title>
      <author><first>Ali</first><last>Modarressi</last></author><doi>10.18653/v1/2099.acl-long.1</doi>
      <bibkey>modarressi-2099-adap</bibkey></paper>
    <paper id="2"><title>Second Things</title><author><first>B.</first><last>Two</last></author></paper>
  </volume>
</collection>""", encoding="utf-8")
    assert sniff_format(xml) == "acl_anthology"
    rows = list(read_source("acl_anthology", xml))
    assert [r["key"] for r in rows] == ["modarressi-2099-adap", "2099.acl-long.2"]
    assert rows[0]["title"] == "Adap: Things" and rows[0]["venue_short"] == "ACL" and rows[0]["year"] == 2099


def test_build_records_each_dumps_provenance_and_the_evidence(crossref_dump: Path, tmp_path: Path) -> None:
    snapshot = tmp_path / "arxiv-metadata-oai-snapshot.json"
    snapshot.write_text("\n".join(json.dumps(arxiv_paper(i, f"Paper {i}")) for i in ("1804.01234", "1804.00007")),
                        encoding="utf-8")
    out = tmp_path / "index.parquet"
    stats = build_index([IndexSource("crossref", str(crossref_dump)), IndexSource("arxiv", str(snapshot))], out,
                        covers=("doi_prefixes", "arxiv_ids"), force_covers=True)  # two-record dumps: not whole
    assert stats.records == 4
    meta = pq.read_metadata(out).metadata
    build = json.loads(meta[b"scrutineer_build"])
    crossref, arxiv = build["sources"]
    parts = dump_files(crossref_dump)
    combined = hashlib.sha256(b"".join(f"{p.name}\0{hashlib.sha256(p.read_bytes()).hexdigest()}\n".encode()
                                       for p in parts)).hexdigest()
    assert crossref["parts"] == 2 and crossref["sha256"] == combined and crossref["records_read"] == 2
    assert crossref["dump_date"] == "2025-04-02T00:00:00Z"
    assert arxiv["sha256"] == hashlib.sha256(snapshot.read_bytes()).hexdigest() and arxiv["dump_date"] == "2019-01-15"
    assert build["evidence"] == {"covers": ["doi_prefixes", "arxiv_ids"], "doi_prefixes": 3, "venues": 4,
                                 "arxiv_months": 1, "forced": stats.forced}
    assert set(stats.forced) == {"doi_prefixes", "arxiv_ids"} and "crossref (2 records)" in stats.forced["doi_prefixes"]
    evidence = IndexEvidence.from_json(meta[EVIDENCE_METADATA_KEY.encode()])
    assert evidence.doi_prefixes == {"10.1109", "10.18653", "10.48550"}  # arXiv's DataCite prefix comes with its snapshot
    assert evidence.arxiv_max == {"1804": 1234} and evidence.last_month == 201804
    assert venue_name_key("Proceedings of the 32nd IEEE Conference on Things") in evidence.venues
    assert venue_name_key("Proc. IEEE Things") in evidence.venues


def test_cli_detects_formats_and_declares_coverage(crossref_dump: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "i.parquet"
    assert build_main(["--out", str(out), "--input", str(crossref_dump), "--covers", "doi_prefixes",
                       "--force-covers"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert line["records"] == 2 and line["formats"] == ["crossref"] and line["covers"] == ["doi_prefixes"]
    assert "a whole crossref dump" in line["forced"]["doi_prefixes"]
    assert line["peak_rss_mb"] > 0
    with pytest.raises(SystemExit):
        build_main(["--out", str(out), "--input", str(crossref_dump), "--covers", "everything"])


def test_a_registry_is_declared_only_from_inputs_that_hold_it_whole(crossref_dump: Path, tmp_path: Path,
                                                                    capsys) -> None:
    """Issue 23 item 4: `--covers doi_prefixes venues` on a few BibTeX-like records made real DOI
    prefixes unregistered and real venues nonexistent."""
    bib = tmp_path / "refs.bib"
    bib.write_text("@inproceedings{a, title={Deep Things}, author={Ada Lovelace}, year={2019}, "
                   "booktitle={NeurIPS}, doi={10.1109/x.1}}\n", encoding="utf-8")
    out = tmp_path / "i.parquet"
    assert build_main(["--out", str(out), "--bibtex", str(bib), "--covers", "doi_prefixes", "venues"]) == 2
    err = capsys.readouterr().err
    assert "doi_prefixes complete: needs a whole crossref dump (>= 50,000,000 records) or a whole openalex dump" in err
    assert "venues complete: needs a whole dblp dump" in err and "the inputs are bibtex" in err
    assert not out.exists()
    # the right format is not enough: a 2-record Crossref sample is found out once read, and nothing is written
    with pytest.raises(IncompleteRegistries, match=r"inputs are crossref \(2 records\)"):
        build_index([IndexSource("crossref", str(crossref_dump))], out, covers=("doi_prefixes",))
    assert not out.exists() and not list(tmp_path.glob("i.parquet*"))
    # a whole dump passes; records of one format in several folders add up; undeclared kinds are never checked
    assert registry_gaps(("doi_prefixes", "arxiv_ids"), [{"format": "crossref", "records_read": 30_000_000},
                                                         {"format": "crossref", "records_read": 30_000_000},
                                                         {"format": "arxiv", "records_read": 2_400_000}]) == {}
    assert set(registry_gaps(("venues",), [{"format": "openalex", "records_read": 250_000_000}])) == {"venues"}
    assert registry_gaps((), [{"format": "bibtex"}]) == {}


def test_evidence_verdicts_need_a_declaration() -> None:
    evidence = IndexEvidence()
    for row in ({"doi": "10.1109/x.1", "venue": "Proceedings of the 36th Conference on Neural Things (NeurThings 2022)"},
                {"origin": "arxiv", "arxiv_id": "2301.00100"}, {"arxiv_id": "2301.04321"}, {"arxiv_id": "1005.1234"}):
        evidence.observe(row)
    assert evidence.unregistered_doi("10.9999/fake.1") is None  # nothing declared: no verdict
    assert evidence.unknown_venue("Symposium on Made-Up Things") is None
    evidence.covers = ("doi_prefixes", "venues", "arxiv_ids")
    assert evidence.unregistered_doi("10.9999/fake.1") == "doi prefix 10.9999 has no registrant in the index's sources"
    assert evidence.unregistered_doi("https://doi.org/10.1109/other.2") is None
    assert evidence.unregistered_doi("10.48550/arXiv.2301.04321") is None
    assert "beyond month 2301" in evidence.unregistered_doi("10.48550/arXiv.2301.09999")
    assert evidence.impossible_arxiv_id("2301.04321") is None and evidence.impossible_arxiv_id("2302.99999") is None
    assert "predates" in evidence.impossible_arxiv_id("0612.1234")
    assert "names month 13" in evidence.impossible_arxiv_id("2313.00001")
    assert "has 5 digits" in evidence.impossible_arxiv_id("1005.12345")
    assert "old scheme" in evidence.impossible_arxiv_id("hep-th/0801001")
    assert evidence.unknown_venue("Proc. of the 38th Conference on Neural Things") is None  # another edition
    assert evidence.unknown_venue("NeurIPS") is None  # the project's alias table knows it
    assert "Symposium on Made-Up Things" in evidence.unknown_venue("Symposium on Made-Up Things")
    restored = IndexEvidence.from_json(evidence.to_json())
    assert restored == evidence


# -- the registries in field_match and doi_only ---------------------------------------------------

def _run(spec_args: dict, items: list) -> dict:
    import asyncio

    from verifiers.registry import SystemSpec, build_system
    from verifiers.system import RunContext

    system = build_system(SystemSpec(spec_args.pop("system"), spec_args))
    outputs = asyncio.run(system.run(items, RunContext(run_id="t", snapshot="2026-05-05")))
    return {o.item_id: o for o in outputs}


def _item(item_id: str, **fields: str):  # noqa: ANN202
    from storage.records import Item

    return Item(item_id, "citation", "test", "dev", {"bibtex_type": "inproceedings", "fields": fields})


EVIDENCE_ITEMS = [
    _item("real", title="Deep Things: A Study", author="Ada Lovelace", year="2019",
          booktitle="Proceedings of the 33rd IEEE Conference on Things", doi="10.1109/CVPR.2019.1"),
    _item("fake_prefix", title="Deep Things: A Study", author="Ada Lovelace", year="2019",
          booktitle="IEEE Conference on Things", doi="10.99999/things.2019.1"),
    _item("real_prefix_unknown_doi", title="Other Things", author="Bo Li", year="2019",
          booktitle="IEEE Conference on Things", doi="10.1109/CVPR.2019.777"),
    _item("fake_venue", title="Unseen Things", author="Bo Li", year="2021", booktitle="Symposium on Imaginary Things"),
    _item("fake_arxiv", title="Unseen Things Again", author="Bo Li", year="2018", eprint="1804.99999",
          archiveprefix="arXiv", journal="arXiv preprint"),
]


@pytest.fixture
def evidence_indexes(crossref_dump: Path, tmp_path: Path) -> tuple[Path, Path]:
    snapshot = tmp_path / "arxiv-metadata-oai-snapshot.json"
    snapshot.write_text(json.dumps(arxiv_paper("1804.01234", "Learning Things")) + "\n", encoding="utf-8")
    sources = [IndexSource("crossref", str(crossref_dump)), IndexSource("arxiv", str(snapshot))]
    declared, undeclared = tmp_path / "declared.parquet", tmp_path / "undeclared.parquet"
    build_index(sources, declared, covers=("doi_prefixes", "venues", "arxiv_ids"), force_covers=True)
    build_index(sources, undeclared)
    return declared, undeclared


def test_field_match_names_the_registry_that_refutes_an_entry(evidence_indexes: tuple[Path, Path]) -> None:
    declared, undeclared = evidence_indexes
    out = _run({"system": "field_match", "sources": ["offline_index"], "index_path": str(declared)}, EVIDENCE_ITEMS)
    assert out["real"].label == "VALID"
    assert out["fake_prefix"].label == "HALLUCINATED" and out["fake_prefix"].predicted_type == "fabricated_doi"
    assert "doi prefix 10.99999 has no registrant in the index's sources" in out["fake_prefix"].reason
    assert out["fake_prefix"].subtests["doi_resolves"] is False
    assert out["real_prefix_unknown_doi"].label == "UNCERTAIN"  # a registered prefix: the DOI may exist
    assert out["fake_venue"].label == "HALLUCINATED" and out["fake_venue"].predicted_type == "nonexistent_venue"
    assert out["fake_venue"].detail["decision_path"] == "index_evidence"
    assert out["fake_arxiv"].label == "HALLUCINATED" and "beyond month 1804" in out["fake_arxiv"].reason
    assert out["fake_arxiv"].detail["index_evidence"]["covers"] == ["doi_prefixes", "venues", "arxiv_ids"]
    # the declaration was forced past the completeness check: every verdict it gives says so
    for key in ("fake_prefix", "fake_venue", "fake_arxiv"):
        assert "declared complete by --force-covers" in out[key].reason
    assert set(out["real"].detail["index_evidence"]["forced"]) == {"doi_prefixes", "venues", "arxiv_ids"}
    plain = _run({"system": "field_match", "sources": ["offline_index"], "index_path": str(undeclared)}, EVIDENCE_ITEMS)
    assert {k: o.label for k, o in plain.items()} == {"real": "VALID", "fake_prefix": "UNCERTAIN",  # an unverified DOI is never VALID
                                                      "real_prefix_unknown_doi": "UNCERTAIN", "fake_venue": "UNCERTAIN",
                                                      "fake_arxiv": "UNCERTAIN"}


def test_doi_only_calls_an_unregistered_prefix_fabricated_offline(evidence_indexes: tuple[Path, Path]) -> None:
    declared, undeclared = evidence_indexes
    out = _run({"system": "doi_only", "sources": ["offline_index"], "index_path": str(declared)}, EVIDENCE_ITEMS)
    assert out["real"].label == "VALID"
    assert out["fake_prefix"].label == "HALLUCINATED" and out["fake_prefix"].predicted_type == "fabricated_doi"
    assert out["fake_prefix"].reason.startswith("DOI 10.99999/things.2019.1: doi prefix 10.99999 has no registrant "
                                                "in the index's sources [doi_prefixes declared complete by --force-covers")
    assert out["real_prefix_unknown_doi"].label == "UNCERTAIN"
    plain = _run({"system": "doi_only", "sources": ["offline_index"], "index_path": str(undeclared)}, EVIDENCE_ITEMS)
    assert plain["fake_prefix"].label == "UNCERTAIN"


def test_dblp_gzip_dump_streams_with_its_dtd(tmp_path: Path) -> None:
    """dblp.org serves `dblp.xml.gz` beside `dblp.dtd`; entities decode (from the project's table, never the dtd) through the compressed file."""
    (tmp_path / "dblp.dtd").write_text('<!ELEMENT dblp ANY>\n<!ENTITY ouml "&#246;">\n', encoding="utf-8")
    with gzip.open(tmp_path / "dblp.xml.gz", "wt", encoding="ISO-8859-1") as f:
        f.write('<?xml version="1.0" encoding="ISO-8859-1"?>\n<!DOCTYPE dblp SYSTEM "dblp.dtd">\n<dblp>\n'
                '<article key="journals/x/M1" mdate="2024-11-02"><author>J&ouml;rg M&ouml;ller 0002</author>'
                "<title>Gzipped Things.</title><year>2021</year><journal>J. Things</journal>"
                "<ee>https://doi.org/10.1000/T.1</ee></article>\n</dblp>\n")
    assert sniff_format(tmp_path / "dblp.xml.gz") == "dblp"
    (row,) = read_source("dblp", tmp_path / "dblp.xml.gz")
    assert row["authors"] == [{"family": "Möller", "given": "Jörg"}] and row["title"] == "Gzipped Things"
    assert row["doi"] == "10.1000/t.1" and row["updated"] == "2024-11-02"


def test_dedupe_keeps_two_dois_of_one_title_and_merges_a_doi_less_repeat(tmp_path: Path) -> None:
    from index.build import write_index

    def row(key: str, doi: str | None) -> dict:
        return {"origin": "t", "key": key, "title": "Same Title Here", "authors": [{"family": "Lovelace", "given": "A"}],
                "year": 2020, "venue": "V", "doi": doi, "arxiv_id": None, "type": "article", "file": None}

    stats = write_index([row("a", "10.1000/one"), row("b", "10.1000/two"), row("c", None), row("d", "10.1000/ONE")],
                        tmp_path / "i.parquet", merged_path=tmp_path / "merged.jsonl")
    assert stats.records == 2 and stats.merged_by_reason == {"title_year_first_author": 1, "doi": 1}
    merged = [json.loads(line) for line in (tmp_path / "merged.jsonl").read_text().splitlines()]
    assert [(m["key"], m["merged_into"]) for m in merged] == [("c", 0), ("d", 0)]


@pytest.mark.requires_shared_data
def test_recorded_crossref_works_read_the_same_from_a_data_file_part(tmp_path: Path) -> None:
    """RefChecker's recorded Crossref works (real REST-API objects), written one per line as a
    data-file part, give the rows the single-response reader gives."""
    from tests.verifiers.conftest import CROSSREF_CACHE

    singles = [p for p in sorted(CROSSREF_CACHE.glob("*.json"))
               if isinstance(json.loads(p.read_text(encoding="utf-8")), dict)]
    assert len(singles) >= 10
    part = write_jsonl_gz(tmp_path / "0.jsonl.gz", [json.loads(p.read_text(encoding="utf-8")) for p in singles])
    streamed = list(read_source("crossref", part))
    one_by_one = [r for p in singles for r in read_source("crossref", p)]

    def strip(row: dict) -> dict:
        return {k: v for k, v in row.items() if k != "file"}

    assert [strip(r) for r in streamed] == [strip(r) for r in one_by_one] and len(streamed) == len(singles)
    assert all(r["updated"] for r in streamed)  # every real work carries its `indexed` date

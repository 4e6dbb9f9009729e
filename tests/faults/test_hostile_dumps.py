"""Bibliographic dumps written by an adversary: entity tricks in DBLP and ACL Anthology XML (a
SYSTEM entity naming a local file, a DTD named by absolute path, billion laughs), records far
larger than any real one, and records that are broken (wrong types, cut gzip, XML errors).

Every dump is made in the test. A hostile record is skipped and named by file and line (or byte
offset), and the records after it are still read; no file the dump names is ever read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from index.build import IndexSource, build_index
from index.readers import DumpLog, SkippedRecord, read_source
from jobs.build_index import main as build_main

MARKER = "SECRET-MARKER-7f3a"
SMALL_CAP = 64 * 1024  # the tests' record cap: a 1 MB record is far over it, and the tests stay fast


def read(fmt: str, path: Path, cap: int = SMALL_CAP) -> tuple[list[dict], list[SkippedRecord]]:
    skipped: list[SkippedRecord] = []
    rows = list(read_source(fmt, path, log=DumpLog(max_record_bytes=cap, on_skip=skipped.append)))
    return rows, skipped


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text(MARKER + "\n", encoding="utf-8")
    return path


def dblp_record(key: str, title: str, author: str = "Ada Lovelace", line_end: str = "\n") -> str:
    return (f'<article key="{key}" mdate="2024-01-01"><author>{author}</author><title>{title}</title>'
            f"<year>2020</year><journal>J. Things</journal></article>{line_end}")


def write_dblp(folder: Path, records: list[str], doctype: str = '<!DOCTYPE dblp SYSTEM "dblp.dtd">',
               dtd: str | None = '<!ELEMENT dblp ANY>\n<!ENTITY ouml "&#246;">\n', name: str = "dblp.xml") -> Path:
    """A dump in the documented layout: `dblp.xml` with `dblp.dtd` beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    if dtd is not None:
        (folder / "dblp.dtd").write_text(dtd, encoding="utf-8")
    path = folder / name
    text = f'<?xml version="1.0" encoding="ISO-8859-1"?>\n{doctype}\n<dblp>\n' + "".join(records) + "</dblp>\n"
    if name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="iso-8859-1") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="iso-8859-1")
    return path


# -- 1. entities: never a file or URL the dump names ------------------------------------------


def test_a_system_entity_in_the_internal_subset_never_reaches_the_index(tmp_path: Path, secret: Path) -> None:
    subset = f'<!DOCTYPE dblp SYSTEM "dblp.dtd" [\n<!ENTITY leak SYSTEM "file://{secret}">\n]>'
    dump = write_dblp(tmp_path / "d", [dblp_record("a/1", "Before Things"),
                                       dblp_record("a/2", "Stolen &leak; Things"),
                                       dblp_record("a/3", "After Things")], doctype=subset)
    rows, skipped = read("dblp", dump)
    assert [r["key"] for r in rows] == ["a/1", "a/3"]
    assert MARKER not in json.dumps(rows)
    (skip,) = skipped
    assert (skip.file, skip.line) == (str(dump), 7) and "&leak;" in skip.reason and "a/2" in skip.reason
    assert str(skip).startswith(f"{dump}:7: ")
    out = tmp_path / "index.parquet"  # the whole build: nothing of the file in the index or its footer
    stats = build_index([IndexSource("dblp", str(dump))], out)
    assert stats.records == 2 and stats.skipped == 1
    assert MARKER.encode() not in out.read_bytes()
    assert MARKER not in json.dumps(pq.read_table(out).to_pylist())


def test_a_system_entity_in_the_dtd_beside_the_dump_is_never_loaded(tmp_path: Path, secret: Path) -> None:
    dtd = f'<!ELEMENT dblp ANY>\n<!ENTITY ouml "&#246;">\n<!ENTITY leak SYSTEM "file://{secret}">\n'
    dump = write_dblp(tmp_path / "d", [dblp_record("a/1", "J&ouml;rg &leak;"), dblp_record("a/2", "Kept")], dtd=dtd)
    rows, skipped = read("dblp", dump)
    assert [r["key"] for r in rows] == ["a/2"] and MARKER not in json.dumps(rows)
    assert len(skipped) == 1 and skipped[0].line == 4 and "&leak;" in skipped[0].reason


def test_a_dtd_named_by_absolute_path_is_never_read(tmp_path: Path, secret: Path) -> None:
    """The dump names a DTD elsewhere that redefines a DBLP entity as a local file's text:
    DBLP's entities come from the project's fixed table, never from a DTD the dump names."""
    evil = tmp_path / "elsewhere" / "evil.dtd"
    evil.parent.mkdir()
    evil.write_text(f'<!ENTITY ouml SYSTEM "file://{secret}">\n<!ENTITY uuml "{MARKER}">\n', encoding="utf-8")
    dump = write_dblp(tmp_path / "d", [dblp_record("a/1", "M&uuml;ller Things", author="J&ouml;rg M&uuml;ller")],
                      doctype=f'<!DOCTYPE dblp SYSTEM "{evil}">')
    rows, skipped = read("dblp", dump)
    assert skipped == []
    assert rows[0]["title"] == "M\u00fcller Things" and rows[0]["authors"] == [{"family": "M\u00fcller", "given": "J\u00f6rg"}]
    assert MARKER not in json.dumps(rows)


def test_billion_laughs_is_a_named_skip_and_the_dump_goes_on(tmp_path: Path) -> None:
    laughs = '<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 10))
    dump = write_dblp(tmp_path / "d", [dblp_record("a/1", "First"), dblp_record("a/2", "&lol9;"),
                                       dblp_record("a/3", "Third")], doctype=f"<!DOCTYPE dblp [{laughs}]>")
    rows, skipped = read("dblp", dump)
    assert [r["key"] for r in rows] == ["a/1", "a/3"]
    assert len(skipped) == 1 and skipped[0].line == 5 and "&lol9;" in skipped[0].reason


def test_billion_laughs_in_an_attribute_is_a_named_skip(tmp_path: Path) -> None:
    laughs = '<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 10))
    records = [dblp_record("a/1", "First"), '<article key="&lol9;"><title>Laughs</title></article>\n',
               dblp_record("a/3", "Third")]
    dump = write_dblp(tmp_path / "d", records, doctype=f"<!DOCTYPE dblp [{laughs}]>")
    rows, skipped = read("dblp", dump)
    assert [r["key"] for r in rows] == ["a/1", "a/3"] and len(skipped) == 1 and skipped[0].line == 5


def test_dblp_character_entities_decode_without_any_dtd(tmp_path: Path) -> None:
    """DBLP's named entities (ISO Latin-1, as DBLP's own dblp.dtd defines them) decode from the
    project's table, with no dblp.dtd beside the dump, gzip-compressed too."""
    dump = write_dblp(tmp_path / "d", [dblp_record("a/1", "&Uuml;ber &reg; Gr&ouml;&szlig;e 3&times;3 &amp; Co.",
                                                   author="Ren&eacute; &Aring;str&ouml;m")],
                      dtd=None, name="dblp.xml.gz")
    rows, skipped = read("dblp", dump)
    assert skipped == []
    assert rows[0]["title"] == "\u00dcber \u00ae Gr\u00f6\u00dfe 3\u00d73 & Co"
    assert rows[0]["authors"] == [{"family": "\u00c5str\u00f6m", "given": "Ren\u00e9"}]


def test_acl_anthology_file_entities_are_never_resolved(tmp_path: Path, secret: Path) -> None:
    laughs = '<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 10))
    xml = tmp_path / "anthology" / "2099.acl.xml"
    xml.parent.mkdir()
    xml.write_text(f"""<?xml version='1.0' encoding='UTF-8'?>
<!DOCTYPE collection [<!ENTITY leak SYSTEM "file://{secret}">{laughs}]>
<collection id="2099.acl">
  <volume id="long"><meta><booktitle>Proceedings of Things</booktitle><year>2099</year><venue>acl</venue></meta>
    <paper id="1"><title>Leaky &leak;</title><author><first>A</first><last>One</last></author></paper>
    <paper id="2"><title>Laughing &lol9;</title><author><first>B</first><last>Two</last></author></paper>
    <paper id="3"><title>Plain Things</title><author><first>C</first><last>Three</last></author></paper>
  </volume>
</collection>""", encoding="utf-8")
    rows, skipped = read("acl_anthology", xml)
    assert [r["key"] for r in rows] == ["2099.acl-long.3"] and rows[0]["venue"] == "Proceedings of Things"
    assert MARKER not in json.dumps(rows)
    assert [(s.line, "&leak;" in s.reason, "&lol9;" in s.reason) for s in skipped] == [(5, True, False), (6, False, True)]


# -- 2. records far over the cap, and broken records --------------------------------------------


def crossref_work(doi: str, title: str) -> dict:
    return {"DOI": doi, "title": [title], "author": [{"given": "Ada", "family": "Lovelace"}],
            "container-title": ["J. Things"], "issued": {"date-parts": [[2020]]}, "type": "journal-article"}


def test_an_over_long_crossref_line_is_skipped_and_named(tmp_path: Path) -> None:
    part = tmp_path / "0.jsonl.gz"
    huge = crossref_work("10.1000/huge", "x" * 1_000_000)
    with gzip.open(part, "wt", encoding="utf-8") as f:
        for work in (crossref_work("10.1000/a", "A"), huge, crossref_work("10.1000/c", "C")):
            f.write(json.dumps(work) + "\n")
    rows, skipped = read("crossref", part)
    assert [r["doi"] for r in rows] == ["10.1000/a", "10.1000/c"]
    (skip,) = skipped
    assert skip.line == 2 and str(skip).startswith(f"{part}:2: ")
    assert f"{len(json.dumps(huge)) + 1} bytes" in skip.reason and f"{SMALL_CAP}" in skip.reason


def test_an_over_long_dblp_title_is_skipped_and_named(tmp_path: Path) -> None:
    dump = write_dblp(tmp_path / "d", [dblp_record("a/1", "First"), dblp_record("a/2", "y" * 1_000_000),
                                       dblp_record("a/3", "Third")], name="dblp.xml.gz")
    rows, skipped = read("dblp", dump)
    assert [r["key"] for r in rows] == ["a/1", "a/3"]
    assert len(skipped) == 1 and skipped[0].line == 5 and "a/2" in skipped[0].reason
    assert "exceeds" in skipped[0].reason and str(SMALL_CAP) in skipped[0].reason


def test_many_children_over_the_cap_are_one_skipped_record(tmp_path: Path) -> None:
    """The cap is on the record's bytes, not on one text node: 200 authors of 8 KB each are caught too."""
    authors = "".join(f"<author>{'z' * 8000}</author>" for _ in range(200))
    big = f'<article key="a/2"><title>Many</title>{authors}</article>\n'
    dump = write_dblp(tmp_path / "d", [dblp_record("a/1", "First"), big, dblp_record("a/3", "Third")])
    rows, skipped = read("dblp", dump)
    assert [r["key"] for r in rows] == ["a/1", "a/3"] and [s.line for s in skipped] == [5]


@pytest.mark.parametrize("shape", ["envelope", "items", "list"])
def test_a_crossref_json_array_streams_and_skips_an_over_large_work(tmp_path: Path, shape: str) -> None:
    works = [crossref_work("10.1000/a", "A"), crossref_work("10.1000/b", "b" * 1_000_000), "not a work",
             crossref_work("10.1000/d", "D")]
    document = {"envelope": {"status": "ok", "message": {"items": works, "total-results": 4}},
                "items": {"items": works}, "list": works}[shape]
    part = tmp_path / "0.json.gz"
    with gzip.open(part, "wt", encoding="utf-8") as f:
        f.write(json.dumps(document, indent=1))
    rows, skipped = read("crossref", part)
    assert [r["doi"] for r in rows] == ["10.1000/a", "10.1000/d"]
    assert len(skipped) == 2 and "exceeds" in skipped[0].reason and "not a JSON object" in skipped[1].reason
    text = gzip.decompress(part.read_bytes()).decode()
    assert skipped[0].line == text[: text.index('"10.1000/b"')].count("\n")  # the line the work opens on


def test_a_single_crossref_work_and_its_envelope_still_read(tmp_path: Path) -> None:
    (tmp_path / "w.json").write_text(json.dumps(crossref_work("10.1000/a", "A")), encoding="utf-8")
    (tmp_path / "e.json").write_text(json.dumps({"status": "ok", "message": crossref_work("10.1000/b", "B")}))
    assert [r["doi"] for r in read("crossref", tmp_path / "w.json")[0]] == ["10.1000/a"]
    assert [r["doi"] for r in read("crossref", tmp_path / "e.json")[0]] == ["10.1000/b"]


def test_broken_records_cost_only_themselves(tmp_path: Path) -> None:
    folder = tmp_path / "crossref"
    folder.mkdir()
    lines = [json.dumps(crossref_work("10.1000/a", "A")), "{not json", json.dumps({**crossref_work("10.1000/c", "C"),
             "author": "not a list"}), '"a string"', b"\xff\xfe".decode("latin-1"), json.dumps(crossref_work("10.1000/f", "F"))]
    with gzip.open(folder / "0.jsonl.gz", "wb") as f:
        f.write("\n".join(lines).encode("utf-8").replace("\u00ff\u00fe".encode(), b"\xff\xfe") + b"\n")
    whole = gzip.compress(b"".join((json.dumps(crossref_work(f"10.2000/{i}", f"T{i}")) + "\n").encode() for i in range(200)))
    (folder / "1.jsonl.gz").write_bytes(whole[: len(whole) // 2])  # cut: a download that stopped halfway
    with gzip.open(folder / "2.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(json.dumps(crossref_work("10.1000/z", "Z")) + "\n")
    rows, skipped = read("crossref", folder)
    dois = [r["doi"] for r in rows]
    assert dois[:2] == ["10.1000/a", "10.1000/f"] and dois[-1] == "10.1000/z"
    assert 0 < len(dois) - 3 < 200 and dois[2:-1] == [f"10.2000/{i}" for i in range(len(dois) - 3)]
    named = [(Path(s.file).name, s.line) for s in skipped]
    assert named == [("0.jsonl.gz", 2), ("0.jsonl.gz", 3), ("0.jsonl.gz", 4), ("0.jsonl.gz", 5),
                     ("1.jsonl.gz", len(dois) - 2)]
    reasons = [s.reason for s in skipped]
    assert "not JSON" in reasons[0] and "'str' object" in reasons[1] and "not a JSON object" in reasons[2]
    assert "UTF-8" in reasons[3] and "gzip" in reasons[4] and "rest of the file" in reasons[4]


def test_an_xml_error_costs_one_record(tmp_path: Path) -> None:
    records = [dblp_record("a/1", "First"), dblp_record("a/2", "Bad</titl>"), dblp_record("a/3", "&nosuch; Third"),
               dblp_record("a/4", "Fourth")]
    dump = write_dblp(tmp_path / "d", records)
    rows, skipped = read("dblp", dump)
    assert [r["key"] for r in rows] == ["a/1", "a/4"]
    assert [s.line for s in skipped] == [5, 6]
    assert "mismatch: title line 5 and titl, line 5," in skipped[0].reason and "&nosuch;" in skipped[1].reason


def test_a_cut_dblp_gzip_keeps_what_was_read_and_names_the_cut(tmp_path: Path) -> None:
    dump = write_dblp(tmp_path / "d", [dblp_record(f"a/{i}", f"Title {i} " + "q" * (i % 50)) for i in range(3000)],
                      name="dblp.xml.gz")
    data = dump.read_bytes()
    dump.write_bytes(data[: len(data) // 2])
    rows, skipped = read("dblp", dump)
    assert 0 < len(rows) < 3000 and [r["key"] for r in rows] == [f"a/{i}" for i in range(len(rows))]
    assert len(skipped) == 1 and "gzip" in skipped[0].reason


def test_the_build_counts_skipped_records_and_the_cli_names_them(tmp_path: Path, capsys) -> None:
    part = tmp_path / "crossref" / "0.jsonl.gz"
    part.parent.mkdir()
    with gzip.open(part, "wt", encoding="utf-8") as f:
        f.write(json.dumps(crossref_work("10.1000/a", "A")) + "\n{broken\n" + json.dumps(crossref_work("10.1000/c", "x" * 100_000))
                + "\n" + json.dumps(crossref_work("10.1000/d", "D")) + "\n")
    out = tmp_path / "i.parquet"
    assert build_main(["--out", str(out), "--crossref", str(part.parent), "--max-record-bytes", str(SMALL_CAP)]) == 0
    captured = capsys.readouterr()
    line = json.loads(captured.out)
    assert line["records"] == 2 and line["records_skipped"] == 2
    assert f"{part}:2: " in captured.err and f"{part}:3: " in captured.err
    (source,) = json.loads(pq.read_metadata(out).metadata[b"scrutineer_build"])["sources"]
    assert source["records_read"] == 2 and source["records_skipped"] == 2


@pytest.mark.parametrize("framing", ["jsonl", "json_array", "dblp"])
def test_the_cap_is_exact_in_every_framing(tmp_path: Path, framing: str) -> None:
    """A record a little under the cap is read whole; one a little over it is skipped, even when
    the reader's window has already grown past the cap for an earlier record."""
    cap = 100_000  # between one and two of the readers' 64 KiB chunks: a window that doubles passes it
    under, over = "u" * (cap - 2_000), "o" * (cap + 10_000)
    if framing == "dblp":
        dump = write_dblp(tmp_path / "d", [dblp_record("a/1", under), dblp_record("a/2", over), dblp_record("a/3", "T")])
        fmt = "dblp"
    else:
        works = [crossref_work("10.1000/u", under), crossref_work("10.1000/o", over), crossref_work("10.1000/t", "T")]
        dump = tmp_path / ("0.jsonl" if framing == "jsonl" else "0.json")
        text = "".join(json.dumps(w) + "\n" for w in works) if framing == "jsonl" else json.dumps(works)
        dump.write_text(text, encoding="utf-8")
        fmt = "crossref"
    rows, skipped = read(fmt, dump, cap)
    assert [len(r["title"]) for r in rows] == [len(under), 1]
    assert len(skipped) == 1 and "exceeds" in skipped[0].reason


def test_an_over_large_work_full_of_escapes_and_brackets_is_one_skipped_record(tmp_path: Path) -> None:
    """The skipped work's strings hold escaped quotes, backslashes and brackets across chunk edges:
    the reader finds the work's end by JSON's rules, and the next work is read."""
    tricky = '\\"]},[{' * 40_000 + "\\"
    works = [crossref_work("10.1000/a", "A"), {**crossref_work("10.1000/b", tricky), "x": [[{"y": "]"}]] * 5000},
             crossref_work("10.1000/c", "C")]
    dump = tmp_path / "0.json"
    dump.write_text(json.dumps({"message": {"items": works}}), encoding="utf-8")
    rows, skipped = read("crossref", dump)
    assert [r["doi"] for r in rows] == ["10.1000/a", "10.1000/c"]
    assert len(skipped) == 1 and f"{len(json.dumps(works[1]))} characters" in skipped[0].reason

"""Index readers and the Parquet writer, on the real shared data plus small format samples."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from index.build import INDEX_SCHEMA, IndexSource, build_index
from index.readers import read_source
from tests.verifiers.conftest import ACL_XML, CROSSREF_CACHE, DEV_PUBLIC, REFCHECKER, real_sources

DBLP_DTD = '<!ELEMENT dblp ANY>\n<!ENTITY ouml "&#246;">\n<!ENTITY eacute "&#233;">\n'
DBLP_XML = """<?xml version="1.0" encoding="ISO-8859-1"?>
<!DOCTYPE dblp SYSTEM "dblp.dtd">
<dblp>
<inproceedings key="conf/nips/VaswaniSPUJGKP17" mdate="2020-01-01">
<author>Ashish Vaswani</author><author>Noam Shazeer</author><author>J&ouml;rg M&uuml;ller</author>
<title>Attention is All you Need.</title><pages>5998-6008</pages><year>2017</year>
<booktitle>NIPS</booktitle><ee>https://arxiv.org/abs/1706.03762</ee>
</inproceedings>
<www key="homepages/v/AshishVaswani"><author>Ashish Vaswani</author><title>Home Page</title></www>
<article key="journals/jmlr/Test20"><author>Ren&eacute; Descartes</author><title>A <i>Method</i> Paper.</title>
<year>2020</year><journal>J. Mach. Learn. Res.</journal><ee>https://doi.org/10.5555/ABC.123</ee></article>
</dblp>
"""


@pytest.mark.requires_shared_data
def test_acl_anthology_reader_reads_every_paper_of_the_toy_anthology() -> None:
    rows = [r for p in sorted(ACL_XML.glob("*.xml")) for r in read_source("acl_anthology", p)]
    assert len(rows) == 841
    first = next(r for r in rows if r["doi"] == "10.18653/v1/2022.acl-long.1")
    assert first["title"] == "AdapLeR: Speeding up Inference by Adaptive Length Reduction"
    assert [a["family"] for a in first["authors"]] == ["Modarressi", "Mohebbi", "Pilehvar"]
    assert first["year"] == 2022 and first["venue"].startswith("Proceedings of the 60th Annual Meeting")
    assert sum(1 for r in rows if r["doi"]) == 773


@pytest.mark.requires_shared_data
def test_crossref_reader_on_recorded_responses() -> None:
    rows = [r for p in sorted(CROSSREF_CACHE.glob("*.json")) for r in read_source("crossref", p)]
    assert len(rows) > 2000
    assert all(r["doi"] == r["doi"].lower() for r in rows)
    with_year = [r for r in rows if r["year"]]
    assert len(with_year) / len(rows) > 0.95


def test_crossref_envelope_dblp_and_openalex_samples(tmp_path: Path) -> None:
    (tmp_path / "works.json").write_text(json.dumps({"message": {"items": [
        {"DOI": "10.1234/X", "title": ["A Title"], "author": [{"family": "Family", "given": "Given"}],
         "issued": {"date-parts": [[2019, 3]]}, "container-title": ["Venue"], "type": "journal-article"}]}}))
    (row,) = read_source("crossref", tmp_path / "works.json")
    assert (row["doi"], row["year"], row["venue"], row["authors"]) == ("10.1234/x", 2019, "Venue", [{"family": "Family", "given": "Given"}])

    (tmp_path / "dblp.dtd").write_text(DBLP_DTD.replace('"&#233;">', '"&#233;">\n<!ENTITY uuml "&#252;">'))
    (tmp_path / "dblp.xml").write_text(DBLP_XML, encoding="iso-8859-1")
    rows = list(read_source("dblp", tmp_path / "dblp.xml"))
    assert [r["key"] for r in rows] == ["conf/nips/VaswaniSPUJGKP17", "journals/jmlr/Test20"]  # www skipped
    assert rows[0]["title"] == "Attention is All you Need" and rows[0]["arxiv_id"] == "1706.03762"
    assert rows[0]["authors"][2] == {"family": "M\u00fcller", "given": "J\u00f6rg"}
    assert rows[1]["title"] == "A Method Paper" and rows[1]["doi"] == "10.5555/abc.123"

    work = {"id": "https://openalex.org/W1", "doi": "https://doi.org/10.48550/arXiv.1706.03762", "title": "Attention",
            "publication_year": 2017, "type": "article",
            "authorships": [{"author": {"display_name": "Ashish Vaswani"}}],
            "primary_location": {"source": {"display_name": "arXiv (Cornell University)"}},
            "locations": [{"landing_page_url": "https://arxiv.org/abs/1706.03762"}]}
    (tmp_path / "works.jsonl").write_text(json.dumps(work) + "\n\n" + json.dumps({**work, "id": "W2", "title": None, "doi": None}) + "\n")
    (row,) = read_source("openalex", tmp_path / "works.jsonl")  # the record with neither title nor DOI is skipped
    assert row["doi"] == "10.48550/arxiv.1706.03762" and row["arxiv_id"] == "1706.03762"
    assert row["authors"] == [{"family": "Vaswani", "given": "Ashish"}] and row["venue"].startswith("arXiv")


@pytest.mark.requires_shared_data
def test_bibtex_and_hallmark_readers() -> None:
    rows = list(read_source("bibtex", REFCHECKER / "hallucination_mixed_sample.bib"))
    assert [r["key"] for r in rows] == ["vaswani2017attention", "devlin2018bert", "priem2022openalex", "totally_fake_2025"]
    assert rows[0]["arxiv_id"] == "1706.03762" and rows[0]["authors"][0] == {"family": "Vaswani", "given": "Ashish"}
    valid = list(read_source("hallmark", DEV_PUBLIC))
    every = list(read_source("hallmark", DEV_PUBLIC, labels=None))
    assert len(valid) == 513 and len(every) == 1119


@pytest.mark.requires_shared_data
def test_build_index_writes_schema_dedupes_and_counts(tmp_path: Path) -> None:
    sources = real_sources() + [IndexSource("acl_anthology", str(ACL_XML / "2022.acl.xml"))]  # listed twice
    stats = build_index(sources, tmp_path / "idx.parquet")
    table = pq.read_table(tmp_path / "idx.parquet")
    assert table.schema.equals(INDEX_SCHEMA, check_metadata=False)
    assert table.num_rows == stats.records and stats.per_origin["acl_anthology"] == 841
    assert stats.duplicates_dropped >= 773  # the second copy of 2022.acl.xml adds nothing with a DOI
    dois = [d for d in table.column("doi").to_pylist() if d]
    assert len(dois) == len(set(dois))
    assert table.column("record_id").to_pylist() == list(range(table.num_rows))


@pytest.mark.requires_shared_data
@pytest.mark.integration
def test_build_index_job_writes_a_loadable_index(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.helpers.paths import REPO_ROOT

    out = tmp_path / "job.parquet"
    done = subprocess.run([sys.executable, str(REPO_ROOT / "jobs" / "build_index.py"), "--out", str(out),
                           "--acl-anthology", *map(str, sorted(ACL_XML.glob("*.xml"))), "--hallmark", str(DEV_PUBLIC)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert stats["per_origin"] == {"acl_anthology": 841, "hallmark": pq.read_table(out).num_rows - 841}
    assert stats["per_origin"]["hallmark"] >= 500
    bad = subprocess.run([sys.executable, str(REPO_ROOT / "jobs" / "build_index.py"), "--out", str(out)],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "no input files" in bad.stderr

"""Building the offline index from real-format dumps: time and peak memory per format and size.

    python bench/bench_index_formats.py                                   # 1,000,000 records, every format
    python bench/bench_index_formats.py --sizes 200000 1000000 --formats crossref arxiv
    python bench/bench_index_formats.py --sizes 20000 --keep /tmp/dumps    # small, keep the dumps

For each format and size it writes a dump in that format's real layout (Crossref: a folder of
`*.jsonl.gz` parts of REST-API works; OpenAlex: `works/updated_date=*/part_000.gz` of Work
objects; arXiv: `arxiv-metadata-oai-snapshot.json` lines; DBLP: `dblp.xml.gz` with its
`dblp.dtd`; ACL Anthology: a folder of collection XML files), with titles from
`bench/venue_data.py`'s bigram model fitted on the real titles in ../shared/data, then runs two
subprocesses on it, each reporting its own peak RSS (ru_maxrss):

* `read`: the format's reader alone, every record parsed and dropped: memory must not grow with
  the dump (streaming);
* `build`: `index.build.build_index` (dedupe, evidence registries, SHA-256 of the dump,
  Parquet) with `tracemalloc` off; memory grows only by the dedupe digests (two 8-byte ints per
  record in Python dicts) and the evidence registries.

Prints one JSON line per (format, size): dump bytes, generate / read / build seconds, records/s,
peak RSS of read and build, and the build's peak RSS growth per record against the smallest size
(`--sizes` with two sizes shows it).

Measured 2026-12-01 on the shared 2-core machine under heavy load (load average 12-50, so wall
seconds are mostly waiting; CPU seconds are the build's own cost). Build = read + dedupe +
registries + Parquet + SHA-256, one process:

| format | records | dump MB | build wall s | build CPU s | peak RSS MB |
|---|---|---|---|---|---|
| crossref (10 `*.jsonl.gz` parts) | 1,000,000 | 123 | 163 | 98 | 774 |
| dblp (`dblp.xml.gz` + dtd) | 1,000,000 | 92 | 324 | 165 | 758 |
| arxiv (snapshot JSON lines) | 1,000,000 | 548 | 380 | 91 | 727 |
| acl_anthology (50 collection XMLs) | 1,000,000 | 421 | 454 | 117 | 737 |
| openalex (`updated_date=*/part_*.gz`) | 1,000,000 | 139 | 182 | 148 | 761 |
| crossref | 200,000 | 25 | 464 | n/a (*) | 552 (*) |
| openalex | 200,000 | 28 | 294 | 29 | 539 |
| arxiv | 200,000 | 110 | 554 | 22 | 501 |
| dblp | 200,000 | 18 | 723 | 40 | 528 |
| acl_anthology | 200,000 | 84 | 120 | 23 | 552 |

(*) run before the dedupe state went from three dicts to two and CPU seconds were recorded.

Reader alone at 200,000 records: peak RSS 75 MB (Crossref, OpenAlex, arXiv), 80 MB (DBLP), 84 MB
(ACL): the interpreter and its imports, flat in the dump's size. Build memory: ~500 MB at the
first batch (100,000 rows as Python dicts, the Parquet writer, imports), then it grows only with
the dedupe digests: sampled during the 1M Crossref build, RSS rose linearly from 497 MB (first
batch) to 753 MB (1M rows), ~260 bytes per record. The full DBLP dump (~7.5 M records) therefore
needs ~2.4 GB on one node.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from xml.sax.saxutils import escape

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.venue_data import VENUES, TitleModel, real_titles  # noqa: E402

FORMATS = ("crossref", "openalex", "arxiv", "dblp", "acl_anthology")
PART_RECORDS = 100_000  # Crossref's parts hold ~5,000 works each; fewer, larger parts keep the folder small
PREFIXES = ["10.1109", "10.1145", "10.1007", "10.1016", "10.18653", "10.1609", "10.1038", "10.1103", "10.48550"]
ABBREVIATIONS = {v: "".join(w[0] for w in v.split() if w[0].isupper()) for v in VENUES}


def records(n: int, seed: int = 20261201) -> Iterator[dict]:
    """`n` papers (title, authors, year, venue, DOI for 70 %, arXiv id for 30 %), format-neutral."""
    model = TitleModel(real_titles(), seed)
    rng = model.rng
    per_month: dict[str, int] = {}
    for i in range(n):
        year = 2008 + rng.randrange(17)
        month = f"{year % 100:02d}{rng.randint(1, 12):02d}"
        arxiv = None
        if rng.random() < 0.3:
            per_month[month] = per_month.get(month, 0) + 1
            arxiv = f"{month}.{per_month[month]:05d}" if year >= 2015 else f"{month}.{per_month[month]:04d}"
        venue = rng.choice(VENUES)
        yield {"i": i, "title": model.title(), "authors": [model.author() for _ in range(rng.randint(1, 6))],
               "year": year, "venue": venue, "short": ABBREVIATIONS[venue], "arxiv": arxiv,
               "doi": f"{rng.choice(PREFIXES[:-1])}/bench.{year}.{i}" if rng.random() < 0.7 else None}  # fmt: skip


def _crossref(r: dict) -> dict:
    date = {"date-parts": [[r["year"], 6, 1]], "date-time": f"{r['year']}-06-01T00:00:00Z", "timestamp": 0}
    return {"DOI": r["doi"] or f"10.5555/nodoi.{r['i']}", "URL": f"https://doi.org/{r['doi']}", "type": "proceedings-article",
            "title": [r["title"]], "subtitle": [], "container-title": [r["venue"]], "short-container-title": [r["short"]],
            "author": [{"given": a["given"], "family": a["family"], "sequence": "additional", "affiliation": []}
                       for a in r["authors"]],
            "issued": {"date-parts": [[r["year"]]]}, "published": {"date-parts": [[r["year"], 6]]},
            "publisher": "Bench Press", "member": "263", "prefix": (r["doi"] or "10.5555").split("/")[0],
            "reference-count": 30, "is-referenced-by-count": 3, "indexed": date, "deposited": date,
            "created": date, "source": "Crossref", "score": 1, "language": "en"}  # fmt: skip


def _openalex(r: dict) -> dict:
    work = f"https://openalex.org/W{r['i'] + 1000}"
    landing = [{"landing_page_url": f"https://arxiv.org/abs/{r['arxiv']}", "is_oa": True, "source": None}] if r["arxiv"] else []
    return {"id": work, "doi": f"https://doi.org/{r['doi']}" if r["doi"] else None, "title": r["title"],
            "display_name": r["title"], "publication_year": r["year"], "publication_date": f"{r['year']}-06-01",
            "type": "article", "language": "en", "ids": {"openalex": work},
            "authorships": [{"author_position": "middle", "author": {"id": f"https://openalex.org/A{k}",
                                                                     "display_name": f"{a['given']} {a['family']}"},
                             "institutions": [], "raw_author_name": f"{a['given']} {a['family']}"}
                            for k, a in enumerate(r["authors"])],
            "primary_location": {"is_oa": False, "landing_page_url": None, "source": {
                "id": "https://openalex.org/S1", "display_name": r["venue"], "type": "conference"}},
            "locations": landing, "cited_by_count": 3, "updated_date": f"2025-0{1 + r['i'] % 9}-01T00:00:00",
            "created_date": "2023-01-01"}  # fmt: skip


def _arxiv(r: dict) -> dict:
    return {"id": r["arxiv"] or f"{r['year'] % 100:02d}01.{90000 + r['i'] % 9999}", "submitter": "Bench",
            "authors": ", ".join(f"{a['given']} {a['family']}" for a in r["authors"]), "title": r["title"],
            "comments": "12 pages", "journal-ref": None if r["i"] % 3 else f"{r['venue']} {r['year']}",
            "doi": r["doi"], "report-no": None, "categories": "cs.LG", "license": None, "abstract": "An abstract.",
            "versions": [{"version": "v1", "created": f"Mon, 1 Jun {r['year']} 10:00:00 GMT"}],
            "update_date": f"{r['year']}-06-02", "authors_parsed": [[a["family"], a["given"], ""] for a in r["authors"]]}


def _dblp(r: dict) -> str:
    authors = "".join(f"<author>{escape(a['given'])} {escape(a['family'])}</author>" for a in r["authors"])
    ee = f"<ee>https://doi.org/{r['doi']}</ee>" if r["doi"] else ""
    ee += f"<ee>https://arxiv.org/abs/{r['arxiv']}</ee>" if r["arxiv"] else ""
    return (f'<inproceedings key="conf/bench/P{r["i"]}" mdate="2025-01-0{1 + r["i"] % 9}">{authors}'
            f"<title>{escape(r['title'])}.</title><pages>1-10</pages><year>{r['year']}</year>"
            f"<booktitle>{escape(r['short'])}</booktitle>{ee}<crossref>conf/bench/{r['year']}</crossref></inproceedings>\n")


def _acl_paper(r: dict, pid: int) -> str:
    authors = "".join(f"<author><first>{escape(a['given'])}</first><last>{escape(a['family'])}</last></author>"
                      for a in r["authors"])
    doi = f"<doi>{r['doi']}</doi>" if r["doi"] else ""
    return (f'<paper id="{pid}"><title>{escape(r["title"])}</title>{authors}<pages>1-10</pages>'
            f"<url hash=\"0\">X{r['i']}</url>{doi}<bibkey>bench-{r['i']}</bibkey><abstract>An abstract.</abstract></paper>\n")


def write_dump(fmt: str, n: int, root: Path) -> Path:
    """A dump of `n` records in `fmt`'s real layout under `root`; returns its path (file or folder)."""
    rows = records(n)
    if fmt in ("crossref", "openalex"):
        folder = root / ("crossref" if fmt == "crossref" else "openalex/data/works")
        part, out = 0, None
        for k, r in enumerate(rows):
            if k % PART_RECORDS == 0:
                if out:
                    out.close()
                name = f"{part}.jsonl.gz" if fmt == "crossref" else f"updated_date=2025-0{1 + part % 9}-01/part_{part:03d}.gz"
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                out = gzip.open(folder / name, "wt", encoding="utf-8", compresslevel=3)  # noqa: SIM115
                part += 1
            out.write(json.dumps(_crossref(r) if fmt == "crossref" else _openalex(r)) + "\n")
        if out:
            out.close()
        return folder
    if fmt == "arxiv":
        path = root / "arxiv-metadata-oai-snapshot.json"
        with path.open("w", encoding="utf-8") as out:
            for r in rows:
                out.write(json.dumps(_arxiv(r)) + "\n")
        return path
    if fmt == "dblp":
        path = root / "dblp.xml.gz"
        (root / "dblp.dtd").write_text('<!ELEMENT dblp ANY>\n<!ENTITY ouml "&#246;">\n', encoding="utf-8")
        with gzip.open(path, "wt", encoding="ISO-8859-1", errors="xmlcharrefreplace", compresslevel=3) as out:
            out.write('<?xml version="1.0" encoding="ISO-8859-1"?>\n<!DOCTYPE dblp SYSTEM "dblp.dtd">\n<dblp>\n')
            for r in rows:
                out.write(_dblp(r))
            out.write("</dblp>\n")
        return path
    folder = root / "acl-anthology" / "data" / "xml"
    folder.mkdir(parents=True)
    per_file, per_volume = 20_000, 1_000
    out = None
    for k, r in enumerate(rows):
        if k % per_file == 0:
            if out:
                out.write("</volume></collection>\n")
                out.close()
            out = (folder / f"{2000 + k // per_file}.bench.xml").open("w", encoding="utf-8")
            out.write(f"<?xml version='1.0' encoding='UTF-8'?>\n<collection id=\"{2000 + k // per_file}.bench\">\n")
        if k % per_volume == 0:
            if k % per_file:
                out.write("</volume>\n")
            out.write(f'<volume id="v{k // per_volume}" type="proceedings"><meta><booktitle>{escape(r["venue"])}</booktitle>'
                      f"<year>{r['year']}</year><venue>{r['short'].lower()}</venue></meta>\n")
        out.write(_acl_paper(r, k % per_volume + 1))
    if out:
        out.write("</volume></collection>\n")
        out.close()
    return folder


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def child(mode: str, fmt: str, path: str, out: str) -> dict:
    """One measured step in this process: `read` (reader only) or `build` (the whole index build)."""
    from index.build import IndexSource, build_index
    from index.readers import read_source

    start = time.perf_counter()
    if mode == "read":
        count = sum(1 for _ in read_source(fmt, Path(path)))
        result = {"records_read": count}
    else:
        stats = build_index([IndexSource(fmt, path)], out, covers=("doi_prefixes", "venues", "arxiv_ids"),
                            force_covers=True)  # synthetic dumps: the cost of collecting every registry
        meta = json.loads(__import__("pyarrow.parquet").parquet.read_metadata(out).metadata[b"scrutineer_build"])
        result = {"records": stats.records, "merged": stats.duplicates_dropped, "evidence": meta["evidence"],
                  "parquet_mb": round(Path(out).stat().st_size / 2**20, 1)}
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)  # CPU time: wall time on a shared machine is mostly waiting
    return {**result, "seconds": round(seconds, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024)}


def _run_child(mode: str, fmt: str, path: Path, out: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", mode, fmt, str(path), str(out)],
                          capture_output=True, text=True)
    if done.returncode:
        return {"error": done.stderr[-1500:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--formats", nargs="+", default=list(FORMATS), choices=FORMATS)
    parser.add_argument("--keep", metavar="DIR", help="write the dumps under DIR and keep them")
    parser.add_argument("--skip-read", action="store_true", help="build only (no separate reader-only pass)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)), flush=True)
        return 0
    for fmt in args.formats:
        baseline: tuple[int, int] | None = None
        for size in sorted(args.sizes):
            root = Path(args.keep) / f"{fmt}-{size}" if args.keep else Path(tempfile.mkdtemp(prefix=f"dump-{fmt}-"))
            if root.exists() and args.keep:
                shutil.rmtree(root)
            root.mkdir(parents=True, exist_ok=True)
            try:
                start = time.perf_counter()
                dump = write_dump(fmt, size, root)
                generate_s = time.perf_counter() - start
                read = {} if args.skip_read else _run_child("read", fmt, dump, root / "unused.parquet")
                build = _run_child("build", fmt, dump, root / "index.parquet")
                row = {"format": fmt, "records": size, "dump_mb": round(_size(dump) / 2**20, 1),
                       "generate_s": round(generate_s, 1), "read": read, "build": build}
                if "seconds" in build:
                    row["build_records_per_s"] = round(size / max(build["seconds"], 1e-9))
                    row["build_records_per_cpu_s"] = round(size / max(build["cpu_s"], 1e-9))
                if "seconds" in read:
                    row["read_records_per_s"] = round(size / max(read["seconds"], 1e-9))
                if baseline and "peak_rss_mb" in build:
                    grown = build["peak_rss_mb"] - baseline[1]
                    row["build_rss_bytes_per_extra_record"] = round(grown * 2**20 / (size - baseline[0]))
                elif "peak_rss_mb" in build:
                    baseline = (size, build["peak_rss_mb"])
                print(json.dumps(row), flush=True)
            finally:
                if not args.keep:
                    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

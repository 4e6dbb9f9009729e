"""Peak memory of the dump readers on hostile records: one 300 MB line in a Crossref part, one
300 MB DBLP title, one 300 MB work in a Crossref `.json.gz` array; and the readers' speed on
ordinary dumps, so the record cap is seen to cost nothing there.

    python bench/bench_hostile_dumps.py                          # this checkout's readers
    python bench/bench_hostile_dumps.py --code /work/main        # another checkout's (before/after)
    python bench/bench_hostile_dumps.py --mb 50 --speed 100000   # smaller hostile record, 100k-record dumps

Each dump holds a good record, the hostile one and another good record (gzip-compressed, so the
300 MB record is a few hundred KB on disk). Each read runs in a child process that imports the
readers from `--code` and reports its own peak RSS (ru_maxrss), CPU seconds, the records read and
what was skipped, or the error that ended the read. One JSON line per dump.

Measured 2026-12-02 on the shared 2-core machine, before = main at 0b8412a, after = this code
(`--mb 300`, then `--mb 300 --shape authors`; peak RSS of the reading process):

| dump (300 MB hostile record between two good ones) | before | after |
|---|---|---|
| Crossref part, one 300 MB title line | 780 MB, 3 records | 66 MB, 2 records + line 2 named |
| Crossref part, one line of 7.8 M authors | 5,777 MB, 57 CPU s | 66 MB, 0.9 CPU s |
| DBLP, one 300 MB title | 637 MB, 3 records | 54 MB, 2 records + line 5 named |
| DBLP, one record of 7 M authors | 4,517 MB, 135 CPU s | 54 MB, 1.0 CPU s |
| Crossref `.json.gz` array, one 300 MB title | 640 MB | 72 MB, element 1 named |
| Crossref `.json.gz` array, one work of 7.8 M authors | 5,341 MB, 57 CPU s | 207 MB, 75 CPU s (*) |

(*) the work is found over the cap only after its first 16 MB were parsed, and its end is found
by a JSON-aware scan (~4 MB/s); JSON-lines parts, the public data file's layout, cost 0.9 s.

Ordinary dumps (`--speed 100000`), reader CPU seconds before → after: DBLP 16.2 → 21.3 (30,000
records, less loaded: 4.9 → 5.3), Crossref 7.0 → 7.6, ACL Anthology 9.2 → 16.0 (each paper is
parsed as its own document); peak RSS 41–49 MB in both.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIECE = 1 << 20


def _work(doi: str, title: str) -> dict:
    return {"DOI": doi, "title": [title], "author": [{"given": "Ada", "family": "Lovelace"}],
            "container-title": ["J. Things"], "issued": {"date-parts": [[2020]]}, "type": "journal-article"}


SHAPE = "text"
"""What fills the hostile record: "text" (one long title) or "authors" (a list of ~30-byte authors,
which the old readers turned into millions of Python objects or lxml nodes)."""


def _write_huge(out, mb: int, char: str = "x", json_list: bool = True) -> None:  # noqa: ANN001
    if SHAPE == "text":
        piece = char * PIECE
    elif json_list:  # inside a JSON string: close it, then a list of authors, then reopen one
        one = '{"given": "Ada", "family": "Lovelace"}, '
        piece = one * (PIECE // len(one))
    else:
        one = "</title><author>Ada Lovelace</author><title>"
        piece = one * (PIECE // len(one))
    for _ in range(mb):
        out.write(piece)


def _hostile_work() -> tuple[str, str]:
    """The JSON text before and after the hostile filling of a work."""
    work = _work("10.1000/huge", "TITLE")
    if SHAPE == "authors":
        work["author"] = "AUTHORS"
        before, after = json.dumps(work).split('"AUTHORS"')
        return before + "[", '{"given": "Bo", "family": "Li"}]' + after
    return tuple(json.dumps(work).split("TITLE"))  # type: ignore[return-value]


def crossref_part(root: Path, mb: int) -> Path:
    path = root / "crossref" / "0.jsonl.gz"
    path.parent.mkdir(parents=True)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as out:
        out.write(json.dumps(_work("10.1000/a", "First")) + "\n")
        before, after = _hostile_work()
        out.write(before)
        _write_huge(out, mb)
        out.write(after + "\n")
        out.write(json.dumps(_work("10.1000/c", "Third")) + "\n")
    return path


def crossref_array(root: Path, mb: int) -> Path:
    path = root / "crossref-array" / "0.json.gz"
    path.parent.mkdir(parents=True)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as out:
        out.write('{"items": [' + json.dumps(_work("10.1000/a", "First")) + ", ")
        before, after = _hostile_work()
        out.write(before)
        _write_huge(out, mb)
        out.write(after + ", " + json.dumps(_work("10.1000/c", "Third")) + "]}\n")
    return path


def dblp_dump(root: Path, mb: int) -> Path:
    path = root / "dblp" / "dblp.xml.gz"
    path.parent.mkdir(parents=True)
    (path.parent / "dblp.dtd").write_text('<!ELEMENT dblp ANY>\n<!ENTITY ouml "&#246;">\n', encoding="utf-8")

    def record(key: str, title: str) -> str:
        return (f'<article key="{key}" mdate="2024-01-01"><author>J&ouml;rg M&ouml;ller</author><title>{title}</title>'
                "<year>2020</year><journal>J. Things</journal></article>\n")

    with gzip.open(path, "wt", encoding="ISO-8859-1", compresslevel=1) as out:
        out.write('<?xml version="1.0" encoding="ISO-8859-1"?>\n<!DOCTYPE dblp SYSTEM "dblp.dtd">\n<dblp>\n')
        out.write(record("a/1", "First"))
        before, after = record("a/huge", "TITLE").split("TITLE")
        out.write(before)
        _write_huge(out, mb, "y", json_list=False)
        out.write(after)
        out.write(record("a/3", "Third"))
        out.write("</dblp>\n")
    return path


def child(code: str, fmt: str, path: str) -> dict:
    """Read one dump with the readers of checkout `code`; peak RSS and what came out."""
    sys.path.insert(0, code)
    from index import readers as index_readers

    skipped: list[str] = []
    options = {}
    if hasattr(index_readers, "DumpLog"):  # the readers with a record cap and a skip log
        options["log"] = index_readers.DumpLog(on_skip=lambda r: skipped.append(str(r)[-160:]))
    start = time.process_time()
    rows: list[str] = []
    error = None
    try:
        for row in index_readers.read_source(fmt, Path(path), **options):
            rows.append(str(row.get("key")))
    except Exception as exc:  # the old readers end the read on a bad record: record how
        error = f"{type(exc).__name__}: {str(exc)[:200]}"
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"records": len(rows), "skipped": skipped, "error": error,
            "cpu_s": round(time.process_time() - start, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024)}


def _run_child(code: str, fmt: str, path: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", code, fmt, str(path)], capture_output=True, text=True)
    if done.returncode:
        return {"crashed": done.returncode, "stderr": done.stderr[-600:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def speed_dumps(root: Path, n: int) -> list[tuple[str, Path]]:
    """Ordinary dumps of `n` records (bench_index_formats' generator, titles from the shared data)."""
    from bench.bench_index_formats import write_dump

    dumps = []
    for fmt in ("dblp", "crossref", "acl_anthology"):
        (root / f"speed-{fmt}").mkdir()
        dumps.append((fmt, write_dump(fmt, n, root / f"speed-{fmt}")))
    return dumps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", default=str(ROOT), help="checkout whose readers are measured (default: this one)")
    parser.add_argument("--mb", type=int, default=300, help="size of the hostile record in MB")
    parser.add_argument("--shape", choices=("text", "authors"), default="text",
                        help="fill the hostile record with one long title or with millions of authors")
    parser.add_argument("--speed", type=int, default=0, metavar="N", help="also time the readers on N-record dumps")
    parser.add_argument("--keep", metavar="DIR", help="write the dumps under DIR and keep them")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)), flush=True)
        return 0
    global SHAPE
    SHAPE = args.shape
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="hostile-dumps-"))
    if args.keep:
        shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    try:
        dumps = [(fmt, f"{make.__name__} ({args.mb} MB record of {args.shape})", make(root, args.mb))
                 for fmt, make in (("crossref", crossref_part), ("dblp", dblp_dump), ("crossref", crossref_array))]
        if args.speed:
            sys.path.insert(0, str(ROOT))
            dumps += [(fmt, f"{fmt} ({args.speed} ordinary records)", path) for fmt, path in speed_dumps(root, args.speed)]
        for fmt, name, path in dumps:
            result = _run_child(args.code, fmt, path)
            print(json.dumps({"dump": name, "code": args.code, "disk_kb": round(sum(
                p.stat().st_size for p in ([path] if path.is_file() else path.rglob("*")) if p.is_file()) / 1024),
                **result}), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

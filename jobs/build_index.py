"""Build the offline bibliographic index (Parquet) from dumps. Wiring only.

    python jobs/build_index.py --out runs/index/full.parquet \
        --dblp dblp.xml.gz --crossref crossref-2025/ --openalex openalex/data/works/ \
        --arxiv arxiv-metadata-oai-snapshot.json --acl-anthology acl-anthology/data/xml/*.xml \
        --covers doi_prefixes venues arxiv_ids --merged runs/index/merged.jsonl

    python jobs/build_index.py --out idx.parquet --input some_dump_folder/   # format detected

Inputs are files or dump folders (read part by part: Crossref's `*.jsonl.gz`, OpenAlex's
`updated_date=*/part_*.gz`), streamed, so memory does not grow with the dump. `--input` detects
each dump's format from its name and first record. Sources are read in the order of the flags
(dblp, crossref, openalex, arxiv, acl-anthology, bibtex, hallmark, then --input). Records of one
work (same DOI, else same normalised title + year + first author's family name) are merged, the
first kept; never by key, which different papers share. `--merged` writes one line per merged
record. `--hallmark` takes only entries labelled VALID (`--hallmark-all` for every entry).

`--covers` declares which evidence registries are complete (see index/evidence.py):
`doi_prefixes` with Crossref's whole data file or OpenAlex's snapshot, `venues` with a whole
DBLP or ACL Anthology dump, `arxiv_ids` with arXiv's snapshot. Only declared registries ever
make a verifier call a DOI, venue or arXiv id fabricated, so a declaration the inputs cannot
hold (their formats, then the records read) exits 2 naming what is missing and writes nothing;
`--force-covers` declares it anyway, recorded in the footer and named in every verdict it gives. The footer
records each dump's SHA-256, size, records read and skipped, and date. Prints one JSON line of
build stats.

Dumps are read as if an adversary wrote them: a record over `--max-record-bytes` (default
16 MiB), malformed or of the wrong shape is skipped and named on stderr (`FILE:LINE: why`, the
first 100; `records_skipped` counts them all) and the build goes on. XML entities are never
resolved from a DTD, file or URL the dump names.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from index.build import IndexSource, build_index  # noqa: E402
from index.evidence import KINDS  # noqa: E402
from index.readers import MAX_RECORD_BYTES, SkippedRecord, sniff_format  # noqa: E402

SKIPS_SHOWN = 100
FLAGS = (("dblp", "dblp"), ("crossref", "crossref"), ("openalex", "openalex"), ("arxiv", "arxiv"),
         ("acl_anthology", "acl-anthology"), ("bibtex", "bibtex"), ("hallmark", "hallmark"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="Parquet file to write")
    for fmt, flag in FLAGS:
        parser.add_argument(f"--{flag}", dest=fmt, nargs="+", default=[], metavar="PATH",
                            help=f"{fmt} dump files or folders")
    parser.add_argument("--input", nargs="+", default=[], metavar="PATH", help="dumps of any format (detected)")
    parser.add_argument("--hallmark-all", action="store_true", help="index every HALLMARK entry, not only VALID ones")
    parser.add_argument("--keep-duplicates", action="store_true",
                        help="keep every record (no merging of the same DOI or same title+year+first author)")
    parser.add_argument("--merged", metavar="JSONL", help="write one line per merged record (reason, merged_into)")
    parser.add_argument("--covers", nargs="*", default=[], choices=KINDS,
                        help="evidence registries the dumps hold completely (default: none)")
    parser.add_argument("--force-covers", action="store_true",
                        help="declare --covers even for inputs that cannot hold them whole (named in every verdict)")
    parser.add_argument("--no-hash", action="store_true", help="skip the dumps' SHA-256 (a second read of each file)")
    parser.add_argument("--max-record-bytes", type=int, default=MAX_RECORD_BYTES, metavar="N",
                        help=f"skip (and name) any record larger than N bytes (default {MAX_RECORD_BYTES})")
    args = parser.parse_args(argv)
    missing = [p for fmt, _ in FLAGS for p in getattr(args, fmt) if not Path(p).exists()]
    missing += [p for p in args.input if not Path(p).exists()]
    if missing:
        parser.error(f"not found: {', '.join(missing)}")
    sources: list[IndexSource] = []
    for fmt, _ in FLAGS:
        options = (("labels", None),) if fmt == "hallmark" and args.hallmark_all else ()
        sources += [IndexSource(fmt, path, options) for path in getattr(args, fmt)]
    try:
        sources += [IndexSource(sniff_format(path), path) for path in args.input]
    except ValueError as exc:
        parser.error(str(exc))
    if not sources:
        parser.error("no input files")
    if args.max_record_bytes < 1:
        parser.error("--max-record-bytes must be positive")
    shown = 0

    def name_skip(record: SkippedRecord) -> None:
        nonlocal shown
        shown += 1
        if shown <= SKIPS_SHOWN:
            print(f"build_index: skipped {record}", file=sys.stderr)
        elif shown == SKIPS_SHOWN + 1:
            print("build_index: more skipped records not shown (records_skipped counts them)", file=sys.stderr)

    start = time.perf_counter()
    try:
        stats = build_index(sources, args.out, dedupe_doi=not args.keep_duplicates, merged_path=args.merged,
                            covers=args.covers, hash_files=not args.no_hash,
                            max_record_bytes=args.max_record_bytes, on_skip=name_skip, force_covers=args.force_covers)
    except ValueError as exc:  # a dump that cannot be read at all, or a registry its inputs cannot hold whole
        print(f"build_index: {exc}", file=sys.stderr)
        return 2
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"out": args.out, "records": stats.records, "records_skipped": stats.skipped,
                      "duplicates_dropped": stats.duplicates_dropped,
                      "merged_by_reason": stats.merged_by_reason, "per_origin": stats.per_origin,
                      "formats": [s.format for s in sources], "covers": args.covers,
                      "forced": stats.forced,
                      "seconds": round(time.perf_counter() - start, 3), "peak_rss_mb": round(peak_mb, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

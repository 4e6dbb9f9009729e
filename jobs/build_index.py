"""Build the offline bibliographic index (Parquet) from dumps. Wiring only.

    python jobs/build_index.py --out runs/index/dblp_crossref.parquet \
        --dblp dblp.xml --crossref works/*.json --openalex works.jsonl \
        --acl-anthology data/xml/*.xml --bibtex refs.bib --hallmark dev_public.jsonl \
        --merged runs/index/merged.jsonl

Sources are read in the order given on the command line's flags (dblp, crossref, openalex,
acl-anthology, bibtex, hallmark). Records of one work (same DOI, else same normalised title +
year + first author's family name) are merged, the first kept; never by key, which different
papers share. The stats line counts merges by reason (`merged_by_reason`); `--merged` writes one
line per merged record. `--hallmark` takes only entries labelled VALID (`--hallmark-all` for
every entry). Prints one JSON line of build stats.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from verifiers.citations.index_build import IndexSource, build_index  # noqa: E402

FLAGS = (("dblp", "dblp"), ("crossref", "crossref"), ("openalex", "openalex"), ("acl_anthology", "acl-anthology"),
         ("bibtex", "bibtex"), ("hallmark", "hallmark"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="Parquet file to write")
    for fmt, flag in FLAGS:
        parser.add_argument(f"--{flag}", dest=fmt, nargs="+", default=[], metavar="PATH", help=f"{fmt} input files")
    parser.add_argument("--hallmark-all", action="store_true", help="index every HALLMARK entry, not only VALID ones")
    parser.add_argument("--keep-duplicates", action="store_true",
                        help="keep every record (no merging of the same DOI or same title+year+first author)")
    parser.add_argument("--merged", metavar="JSONL", help="write one line per merged record (reason, merged_into)")
    args = parser.parse_args(argv)
    sources: list[IndexSource] = []
    for fmt, _ in FLAGS:
        options = (("labels", None),) if fmt == "hallmark" and args.hallmark_all else ()
        sources += [IndexSource(fmt, path, options) for path in getattr(args, fmt)]
    if not sources:
        parser.error("no input files")
    missing = [s.path for s in sources if not Path(s.path).is_file()]
    if missing:
        parser.error(f"not found: {', '.join(missing)}")
    start = time.perf_counter()
    stats = build_index(sources, args.out, dedupe_doi=not args.keep_duplicates, merged_path=args.merged)
    print(json.dumps({"out": args.out, "records": stats.records, "duplicates_dropped": stats.duplicates_dropped,
                      "merged_by_reason": stats.merged_by_reason, "per_origin": stats.per_origin, "seconds": round(time.perf_counter() - start, 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

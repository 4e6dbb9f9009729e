"""Probe the bibliographic sources: are they reachable and answering?

    python jobs/check_sources.py --require dblp,openalex
    python jobs/check_sources.py --sources crossref,dblp --base-url dblp=http://127.0.0.1:8080/dblp

Each probed source gets one known lookup (a DOI, an arXiv id or a title search) with a short
timeout and two attempts; any definite answer (a record, or a definite "not found") is "up".
Without `--require`, every probed source is required. Exit codes: 0 all required sources up,
1 a required source down, 2 nothing probed. One JSON line per source on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, as every job

from clients.errors import ClientError  # noqa: E402
from clients.http import HttpOptions
from clients.http_source import HttpSource
from clients.retry import RetryPolicy
from clients.source_catalog import SOURCE_CLASSES, make_source

PROBE_DOI = "10.1145/2939672.2939785"  # XGBoost, KDD 2016
PROBE_ARXIV = "1603.02754"
PROBE_TITLE = "XGBoost: A Scalable Tree Boosting System"


async def probe(source: HttpSource) -> dict:
    start = time.monotonic()
    try:
        if source.name == "dblp":
            found = bool(await source.search_title(PROBE_TITLE, limit=1))
        elif source.name == "arxiv":
            found = await source.lookup_arxiv(PROBE_ARXIV) is not None
        else:
            found = await source.lookup_doi(PROBE_DOI) is not None
        status, reason = "up", "" if found else "answered: probe record not found"
    except ClientError as exc:
        status, reason = "down", exc.reason
    finally:
        await source.aclose()
    return {"source": source.name, "status": status, "reason": reason,
            "seconds": round(time.monotonic() - start, 3)}  # fmt: skip


def _names(value: str | None) -> list[str]:
    return [n.strip() for n in (value or "").split(",") if n.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sources", help=f"comma-separated (default: all of {', '.join(SOURCE_CLASSES)})")
    parser.add_argument("--require", help="comma-separated sources that must be up")
    parser.add_argument("--base-url", action="append", default=[], metavar="NAME=URL",
                        help="override a source's API root (repeatable)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per attempt")
    return parser.parse_args(argv)


async def check(args: argparse.Namespace) -> int:
    required = _names(args.require)
    sources = _names(args.sources) if args.sources is not None else list(SOURCE_CLASSES)
    names = list(dict.fromkeys(sources + required))
    unknown = [n for n in names if n not in SOURCE_CLASSES]
    if unknown:
        print(f"unknown sources: {', '.join(unknown)}; known: {', '.join(SOURCE_CLASSES)}", file=sys.stderr)
        names = [n for n in names if n in SOURCE_CLASSES]
    if not names:
        print("nothing probed", file=sys.stderr)
        return 2
    overrides = dict(item.split("=", 1) for item in args.base_url)
    options = HttpOptions(retry=RetryPolicy(max_attempts=2, base_wait=0.2, retry_after_cap=5.0),
                          timeout=args.timeout)  # fmt: skip
    results = await asyncio.gather(*(probe(make_source(n, options, overrides.get(n))) for n in names))
    for row in results:
        print(json.dumps(row))
    must = set(required or names)
    down = [r["source"] for r in results if r["status"] != "up" and r["source"] in must]
    if down:
        print(f"required source(s) down: {', '.join(down)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(check(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())

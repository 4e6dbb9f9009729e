"""What the index's evidence registries change on HALLMARK dev_public, for field_match and doi_only.

    python bench/bench_index_evidence.py                     # both indexes, every declaration
    python bench/bench_index_evidence.py --index real --covers none doi_prefixes

Indexes (built here from ../shared/data; nothing copied into the repository):

* `real`: the real records the project has with no dev_public provenance: the ACL toy anthology,
  RefChecker's recorded Crossref works and BibTeX samples (what a user without full dumps has);
* `real+dev`: the same plus every dev_public VALID entry's own record (a closed-world upper
  bound: every real paper of the split is in the index, labelled so).

Each is built once per declaration (`--covers`: none, doi_prefixes, venues, arxiv_ids, or all):
the registries are the same, only what the index declares complete changes. None of these
indexes is a whole dump, so a declaration here is an experiment on what a declaration does, not
a deployment setting: a real DOI or venue missing from a few thousand records is then called
fabricated, which the FPR shows.

Prints one JSON line per (index, declaration, system): DR and FPR (UNCERTAIN counted as not
flagged, HALLMARK's convention), decided fraction, detections of fabricated_doi and
nonexistent_venue entries, and the items whose label changed against the undeclared index.

Measured 2026-12-01 (dev_public: 606 HALLUCINATED incl. 39 fabricated_doi and 39
nonexistent_venue, 513 VALID; DR / FPR, UNCERTAIN counted as not flagged):

| index (records) | declared | field_match | field_match closed | doi_only |
|---|---|---|---|---|
| real (2,852) | none | 0.064 / 0.002 | 1.000 / 1.000 | 0.003 / 0.000 |
| real | doi_prefixes | 0.129 / 0.002 (+39 fabricated_doi) | = | 0.069 / 0.000 (+39) |
| real | venues | 0.139 / 0.002 (+39 nonexistent_venue) | = | = |
| real | arxiv_ids | 0.238 / 0.191 (96 VALID flagged) | = | 0.007 / 0.004 |
| real | all | 0.328 / 0.191 | = | 0.073 / 0.004 |
| real+dev (3,358) | none | 0.579 / 0.000 | 0.932 / 0.000 | 0.045 / 0.000 |
| real+dev | doi_prefixes | 0.635 / 0.000 (fabricated_doi 5 -> 39/39) | 0.957 / 0.000 | 0.111 / 0.000 |
| real+dev | venues | 0.607 / 0.000 (nonexistent_venue 26 -> 39/39) | 0.947 / 0.000 | = |
| real+dev | all | 0.670 / 0.000 | 0.972 / 0.000 | 0.111 / 0.000 |

The DOI-prefix and venue registries catch every fabricated_doi and nonexistent_venue entry with
no new false positive, even from the small `real` index (dev_public's real DOIs use prefixes
the recorded Crossref works carry; its real venues are in the alias table or the dumps). The
arXiv ranges of an index without arXiv's snapshot are wrong (a month's highest id seen in a few
thousand records is far below the real one): declared, they flag 96 real papers. Declare
`arxiv_ids` only for an index built from the snapshot.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from index.build import IndexSource, build_index  # noqa: E402
from storage.records import Item  # noqa: E402
from verifiers.registry import SystemSpec, build_system  # noqa: E402
from verifiers.system import RunContext  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
BIBSOURCES = SHARED / "bibsources"
ACL_XML = BIBSOURCES / "acl_anthology" / "python" / "tests" / "toy_anthology" / "xml"
REFCHECKER = BIBSOURCES / "refchecker" / "tests" / "fixtures"
DEV = SHARED / "hallmark" / "dev_public.jsonl"
DECLARATIONS = {"none": (), "doi_prefixes": ("doi_prefixes",), "venues": ("venues",), "arxiv_ids": ("arxiv_ids",),
                "all": ("doi_prefixes", "venues", "arxiv_ids")}
SYSTEMS = {"field_match": {"system": "field_match"}, "field_match_closed": {"system": "field_match", "closed_world": True},
           "doi_only": {"system": "doi_only"}}  # fmt: skip


def index_sources(name: str) -> list[IndexSource]:
    sources = [IndexSource("acl_anthology", str(p)) for p in sorted(ACL_XML.glob("*.xml"))]
    sources += [IndexSource("crossref", str(p)) for p in sorted((REFCHECKER / "test_cache" / "api_cache" / "crossref").glob("*.json"))]
    sources += [IndexSource("bibtex", str(p)) for p in sorted(REFCHECKER.glob("*.bib"))]
    if name == "real+dev":
        sources.append(IndexSource("hallmark", str(DEV)))
    return sources


def dev_items() -> tuple[list[Item], dict[str, dict]]:
    items, truth = [], {}
    for n, line in enumerate(DEV.read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        entry = json.loads(line)
        item_id = f"dev-{n}"
        items.append(Item(item_id, "citation", "hallmark", "dev_public",
                          {"bibtex_type": entry.get("bibtex_type") or "misc", "fields": entry.get("fields") or {}}))
        truth[item_id] = {"label": entry["label"], "type": entry.get("hallucination_type")}
    return items, truth


def score(outputs: dict, truth: dict[str, dict]) -> dict:
    hall = [k for k, t in truth.items() if t["label"] == "HALLUCINATED"]
    valid = [k for k, t in truth.items() if t["label"] == "VALID"]
    flagged = {k for k, o in outputs.items() if o.label == "HALLUCINATED"}
    decided = sum(1 for o in outputs.values() if o.label in ("VALID", "HALLUCINATED"))
    per_type = Counter(truth[k]["type"] for k in flagged if truth[k]["type"])
    totals = Counter(t["type"] for t in truth.values() if t["type"])
    return {"DR": round(len(flagged & set(hall)) / len(hall), 3), "FPR": round(len(flagged & set(valid)) / len(valid), 3),
            "decided": round(decided / len(outputs), 3),
            "fabricated_doi": f"{per_type['fabricated_doi']}/{totals['fabricated_doi']}",
            "nonexistent_venue": f"{per_type['nonexistent_venue']}/{totals['nonexistent_venue']}"}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", nargs="+", default=["real", "real+dev"], choices=["real", "real+dev"])
    parser.add_argument("--covers", nargs="+", default=list(DECLARATIONS), choices=list(DECLARATIONS))
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    args = parser.parse_args()
    items, truth = dev_items()
    ctx = RunContext(run_id="bench-evidence", snapshot="2026-05-05")
    with tempfile.TemporaryDirectory() as tmp:
        for index in args.index:
            baseline: dict[str, dict] = {}
            for declaration in ["none"] + [c for c in args.covers if c != "none"]:
                path = Path(tmp) / f"{index}-{declaration}.parquet"
                # forced: the bench measures what a declaration does on indexes too small to hold a registry whole
                stats = build_index(index_sources(index), path, covers=DECLARATIONS[declaration], force_covers=True)
                for system_name in args.systems:
                    spec = {**SYSTEMS[system_name], "sources": ["offline_index"], "index_path": str(path)}
                    system = build_system(SystemSpec(spec.pop("system"), spec))
                    start = time.perf_counter()
                    outputs = {o.item_id: o for o in asyncio.run(system.run(items, ctx))}
                    row = {"index": index, "records": stats.records, "covers": declaration, "system": system_name,
                           **score(outputs, truth), "seconds": round(time.perf_counter() - start, 1)}
                    labels = {k: o.label for k, o in outputs.items()}
                    if declaration == "none":
                        baseline[system_name] = labels
                    else:
                        changed = [k for k in labels if labels[k] != baseline[system_name][k]]
                        row["changed"] = dict(Counter(f"{truth[k]['label']}:{baseline[system_name][k]}->{labels[k]}"
                                                      for k in changed))
                        row["changed_by_type"] = dict(Counter(truth[k]["type"] or "VALID" for k in changed))
                    print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

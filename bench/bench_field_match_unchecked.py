"""field_match on HALLMARK dev_public (optional data): per-type detection of `fabricated_doi`,
`wrong_venue`, `nonexistent_venue`, `near_miss_title`, FPR and MCC, and what each said per type
(H/U/V counts), closed and open world, over two indexes (issue 23 items 1, 2, 3 and 5):

  * `dev_valid`: the dev split's VALID records only;
  * `real`: the bibsources dumps plus those records (bench_citation_verifiers.py --part real's index).

Then real-citation variants of the dev split's VALID entries, all still VALID, against the
`dev_valid` index closed world (`variants` lines: how many each kind flags, and as what):

  * `venue_full`: the venue written in full as a proceedings title ("Proceedings of the 38th
    International Conference on Machine Learning"), each long name of its venue in
    `corpora/data/venue_aliases.toml` (read here directly, so the same set measures old code);
  * `venue_acronym_year`: its acronym with the year ("ICML 2021").

    python bench/bench_field_match_unchecked.py [--indexes dev_valid] [--args '{"year_tolerance": 1}']

DR/FPR/MCC are HALLMARK's conservative mode (UNCERTAIN left out; `decided` says how much);
`aggressive_mcc` counts UNCERTAIN as HALLUCINATED.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import tomllib
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_citation_verifiers as common  # noqa: E402

from corpora.citations.hallmark import load_hallmark_jsonl  # noqa: E402
from index.build import write_index  # noqa: E402
from index.readers import read_source  # noqa: E402
from scoring import score_citation_outputs  # noqa: E402
from storage.records import Item  # noqa: E402
from storage.schemas import OUTPUT_SCHEMA, table_from_rows  # noqa: E402
from verifiers.registry import SystemSpec, build_system  # noqa: E402

TYPES = ("fabricated_doi", "wrong_venue", "nonexistent_venue", "near_miss_title")


ALIASES = Path(__file__).resolve().parents[1] / "corpora" / "data" / "venue_aliases.toml"
ORDINAL = {1: "st", 2: "nd", 3: "rd"}


def _venue_names(venue: str) -> tuple[list[str], list[str]] | None:
    """(long names, acronyms) of the table entry one of whose names `venue` is, read from the TOML."""
    cited = " ".join("".join(c if c.isalnum() else " " for c in venue.lower()).split())
    for key, entry in tomllib.loads(ALIASES.read_text(encoding="utf-8")).items():
        names = [*entry.get("names", ()), *entry.get("exact", ())]
        if key != "arxiv" and cited in names:
            return [n for n in names if " " in n and n != cited], [n for n in names if " " not in n]
    return None


def venue_variants(items: list[Item], valid_ids: set[str]) -> dict[str, list[Item]]:
    """VALID entries with the venue rewritten, each still the same venue (see the module notes)."""
    out: dict[str, list[Item]] = {"venue_full": [], "venue_acronym_year": []}
    for item in items:
        fields = dict(item.payload["fields"])
        slot = next((k for k in ("booktitle", "journal") if fields.get(k)), None)
        names = _venue_names(fields[slot]) if item.item_id in valid_ids and slot else None
        if not names:
            continue
        year = int(fields.get("year") or 2020)
        edition = year - 1983
        long_names, acronyms = names
        for i, name in enumerate(long_names):
            full = f"Proceedings of the {edition}{ORDINAL.get(edition % 10 if edition % 100 not in (11, 12, 13) else 0, 'th')} {name.title()}"
            out["venue_full"].append(Item(f"{item.item_id}~full{i}", item.kind, item.corpus, item.split,
                                          {**item.payload, "fields": {**fields, slot: full}}))
        for i, name in enumerate(acronyms):
            out["venue_acronym_year"].append(Item(f"{item.item_id}~acr{i}", item.kind, item.corpus, item.split,
                                                  {**item.payload, "fields": {**fields, slot: f"{name.upper()} {year}"}}))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--indexes", nargs="+", default=["dev_valid", "real"], choices=["dev_valid", "real"])
    parser.add_argument("--args", default="{}", help="extra field_match arguments (JSON)")
    options = parser.parse_args(argv)
    extra = json.loads(options.args)
    corpus = load_hallmark_jsonl(common.DEV, split="dev_public")
    items = [Item.from_row(r) for r in corpus.items.to_pylist()]
    kind = {r["item_id"]: r["hallucination_type"] or "valid" for r in corpus.truth.to_pylist()}
    with tempfile.TemporaryDirectory() as tmp:
        dev_valid = Path(tmp) / "dev_valid.parquet"
        write_index(list(read_source("hallmark", common.DEV)), dev_valid)
        indexes = [("dev_valid", dev_valid)]
        if "real" in options.indexes:
            indexes.append(("real", common.real_index(Path(tmp))[0]))
        for name, path in indexes:
            for closed_world in (True, False):
                args = {"sources": ["offline_index"], "index_path": str(path), "closed_world": closed_world, **extra}
                outs = asyncio.run(build_system(SystemSpec("field_match", args)).run(items, common.CTX))
                scored = common._scored(corpus.truth, outs, "field_match")
                per_type = scored.pop("per_type_dr")
                table = table_from_rows([o.to_row("bench", "field_match", 0) for o in outs], OUTPUT_SCHEMA)
                aggressive = score_citation_outputs(corpus.truth, table, run_id="bench", system="field_match",
                                                    eval_mode="aggressive").summary  # fmt: skip
                said = Counter((kind[o.item_id], o.label) for o in outs)
                counts = {t: {x[0]: said[(t, x)] for x in ("HALLUCINATED", "UNCERTAIN", "VALID")}
                          for t in (*TYPES[:3], "valid")}  # fmt: skip
                paths = Counter((o.detail or {}).get("decision_path") for o in outs
                                if kind[o.item_id] in ("fabricated_doi", "wrong_venue"))  # fmt: skip
                print(json.dumps({"index": name, "closed_world": closed_world,
                                  **{k: round(v, 4) for k, v in scored.items() if v is not None},
                                  **{t: per_type[t] for t in TYPES}, "aggressive_mcc": round(aggressive["mcc"], 4),
                                  "said": counts, "paths_fabricated_doi_wrong_venue": dict(paths)}), flush=True)
        valid_ids = {i for i, k in kind.items() if k == "valid"}
        system = build_system(SystemSpec("field_match", {"sources": ["offline_index"], "index_path": str(dev_valid),
                                                         "closed_world": True, **extra}))
        for variant, entries in (venue_variants(items, valid_ids)).items():
            outs = asyncio.run(system.run(entries, common.CTX))
            said = Counter(o.label for o in outs)
            print(json.dumps({"variants": variant, "args": extra, "n": len(outs),
                              "flagged": said["HALLUCINATED"], "fpr": round(said["HALLUCINATED"] / max(len(outs), 1), 4),
                              "said": dict(said), "as": dict(Counter(o.predicted_type for o in outs if o.predicted_type)),
                              "example_flagged": next((o.reason for o in outs if o.label == "HALLUCINATED"), None)}),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

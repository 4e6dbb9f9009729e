"""field_match on HALLMARK dev_public (optional data): per-type detection of `fabricated_doi`,
`wrong_venue`, `nonexistent_venue`, `near_miss_title`, FPR and MCC, and what each said per type
(H/U/V counts), closed and open world, over two indexes (issue 23 items 1 and 2):

  * `dev_valid`: the dev split's VALID records only;
  * `real`: the bibsources dumps plus those records (bench_citation_verifiers.py --part real's index).

    python bench/bench_field_match_unchecked.py

DR/FPR/MCC are HALLMARK's conservative mode (UNCERTAIN left out; `decided` says how much);
`aggressive_mcc` counts UNCERTAIN as HALLUCINATED.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
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


def main() -> int:
    corpus = load_hallmark_jsonl(common.DEV, split="dev_public")
    items = [Item.from_row(r) for r in corpus.items.to_pylist()]
    kind = {r["item_id"]: r["hallucination_type"] or "valid" for r in corpus.truth.to_pylist()}
    with tempfile.TemporaryDirectory() as tmp:
        dev_valid = Path(tmp) / "dev_valid.parquet"
        write_index(list(read_source("hallmark", common.DEV)), dev_valid)
        real, _ = common.real_index(Path(tmp))
        for name, path in (("dev_valid", dev_valid), ("real", real)):
            for closed_world in (True, False):
                args = {"sources": ["offline_index"], "index_path": str(path), "closed_world": closed_world}
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
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Arrow schemas of the records that cross rooms (see DESIGN.md, "Records that cross rooms").

Every table written by a run carries one of these schemas, so any number a report prints can be
recomputed from stored records. Free-form structure (payloads, sub-tests, flags, votes) travels
as JSON text in a `*_json` column: the column set stays stable across systems and kinds.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = "1"

#: An auditable unit as a system sees it. Truth is never in here.
ITEM_SCHEMA = pa.schema(
    [
        pa.field("item_id", pa.string(), nullable=False),  # unique within a corpus
        pa.field("kind", pa.string(), nullable=False),  # citation | paper_copy | review
        pa.field("corpus", pa.string(), nullable=False),
        pa.field("split", pa.string()),
        pa.field("payload_json", pa.string()),  # blind view: for citations {bibtex_type, fields, raw_bibtex}
        pa.field("source", pa.string()),  # file the item was read from
        pa.field("source_line", pa.int64()),  # 1-based line of the item in that file
        pa.field("load_error", pa.string()),  # set when the input was broken; the item is still audited as errored
    ],
    metadata={"record": "item", "schema_version": SCHEMA_VERSION},
)

#: Ground truth for an item, kept apart from items.
TRUTH_SCHEMA = pa.schema(
    [
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("label", pa.string()),  # VALID | HALLUCINATED (null when unknown)
        pa.field("hallucination_type", pa.string()),
        pa.field("difficulty_tier", pa.int64()),
        pa.field("subtests_json", pa.string()),
        pa.field("extra_json", pa.string()),  # corpus-specific truth (injected errors, spans, ...)
    ],
    metadata={"record": "truth", "schema_version": SCHEMA_VERSION},
)

#: What a system said about one item: exactly one row per (run, item).
OUTPUT_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("system", pa.string(), nullable=False),
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("shard_id", pa.int64(), nullable=False),
        pa.field("label", pa.string()),  # VALID | HALLUCINATED | UNCERTAIN; null when error is set
        pa.field("confidence", pa.float64()),  # P(label correct)
        pa.field("reason", pa.string()),
        pa.field("predicted_type", pa.string()),
        pa.field("subtests_json", pa.string()),
        pa.field("detail_json", pa.string()),  # flags, spans, sub-results
        pa.field("api_sources_queried", pa.list_(pa.string())),
        pa.field("api_calls", pa.int64()),
        pa.field("model_id", pa.string()),  # model id the provider returned
        pa.field("prompt_hash", pa.string()),
        pa.field("tokens_in", pa.int64()),
        pa.field("tokens_out", pa.int64()),
        pa.field("cost_usd", pa.float64()),
        pa.field("latency_s", pa.float64()),
        pa.field("cache_hits", pa.int64()),
        pa.field("error", pa.string()),  # input broken, provider failed, unparseable answer, ...
        pa.field("error_kind", pa.string()),  # input | provider | parse | outage | system
    ],
    metadata={"record": "output", "schema_version": SCHEMA_VERSION},
)

#: One adjudicated unit (entry, injected error, flag, span) with the votes behind it.
VERDICT_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("system", pa.string(), nullable=False),
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("unit_id", pa.string(), nullable=False),
        pa.field("unit_kind", pa.string()),  # entry | injection | flag | span
        pa.field("outcome", pa.string()),  # e.g. TP/FP/TN/FN, detected, false_positive, ambiguous, unscored
        pa.field("votes_json", pa.string()),
        pa.field("detail_json", pa.string()),
    ],
    metadata={"record": "verdict", "schema_version": SCHEMA_VERSION},
)

#: One number of a report, with its support and interval; NaN with n = 0 when empty.
METRIC_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("system", pa.string(), nullable=False),
        pa.field("metric", pa.string(), nullable=False),
        pa.field("stratum", pa.string(), nullable=False),  # "all", "tier=1", "type=fabricated_doi", ...
        pa.field("eval_mode", pa.string()),
        pa.field("value", pa.float64()),
        pa.field("ci_low", pa.float64()),
        pa.field("ci_high", pa.float64()),
        pa.field("n", pa.int64()),
    ],
    metadata={"record": "metric", "schema_version": SCHEMA_VERSION},
)


def table_from_rows(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """Build a table of `schema` from dict rows; missing keys become nulls, unknown keys are an error."""
    names = set(schema.names)
    for i, row in enumerate(rows):
        unknown = set(row) - names
        if unknown:
            raise ValueError(f"row {i}: fields not in the {schema.metadata[b'record'].decode()} schema: {sorted(unknown)}")
    return pa.Table.from_pylist([{n: r.get(n) for n in schema.names} for r in rows], schema=schema)

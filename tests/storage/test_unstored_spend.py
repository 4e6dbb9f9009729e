"""What a budget-stopped shard paid without being stored counts in `spent_so_far` until the shard
is stored (then its outputs carry the cost), and each attempt's record replaces the last."""

from __future__ import annotations

from storage.records import Output
from storage.schemas import OUTPUT_SCHEMA, table_from_rows
from storage.store import Store, spent_so_far


def answered(item_id: str, cost: float) -> Output:
    return Output(item_id, label="VALID", confidence=0.7, cost_usd=cost, tokens_in=10, tokens_out=5)


def test_unstored_spend_counts_until_the_shard_is_stored(tmp_path):
    store = Store(str(tmp_path / "runs"))
    store.write_shard("r", 0, table_from_rows([answered("a", 1.0).to_row("r", "s", 0)], OUTPUT_SCHEMA))
    assert spent_so_far(store, "r") == (1.0, 15)

    store.record_unstored_spend("r", 1, [answered("b", 0.5), answered("c", 0.25)])  # stopped on the budget
    assert spent_so_far(store, "r") == (1.75, 45)
    # the resumed attempt replays b and c from the cache and pays for d: its record replaces the first
    store.record_unstored_spend("r", 1, [answered("b", 0.5), answered("c", 0.25), answered("d", 0.5)])
    assert spent_so_far(store, "r") == (2.25, 60)

    rows = [answered(i, c).to_row("r", "s", 1) for i, c in (("b", 0.5), ("c", 0.25), ("d", 0.5), ("e", 0.5))]
    store.write_shard("r", 1, table_from_rows(rows, OUTPUT_SCHEMA))  # finished: the outputs carry the cost
    assert store.unstored_spend("r") == (0.0, 0)
    assert spent_so_far(store, "r") == (2.75, 75)


def test_a_run_with_only_unstored_spend(tmp_path):
    store = Store(str(tmp_path / "runs"))
    store.record_unstored_spend(
        "r", 3, [answered("a", 0.125), Output.failed("b", "budget exhausted", "budget")]
    )
    assert spent_so_far(store, "r") == (0.125, 15)

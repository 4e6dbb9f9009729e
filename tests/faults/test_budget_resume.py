"""A budget-stopped LLM run resumed under the same budget (issue 11): the answers a stopped shard
paid for but did not store count against the budget (the run's one ledger keeps them), so the total paid across resumptions stays
within the budget (up to the documented in-flight overshoot) instead of the budget being spent
again on top of them."""

from __future__ import annotations

import pytest

from clients.llm_cache import LLMCache
from tests.helpers.replay_server import replay_server, server_stats
from tests.helpers.run_job import run_job

pytestmark = pytest.mark.heavy
ANSWER = '{"label": "VALID", "confidence": 0.8, "predicted_hallucination_type": null, "reason": "looks real"}'
BUDGET = 40.0  # $0.001/token (price_override): a few dozen requests of ~$0.5-1 each


def config_text(url: str) -> str:
    # one request in flight per worker: the budget may be crossed by at most one request per worker
    return (
        'snapshot = "2026-11-29"\nbootstrap = 0\ntracking_uri = "none"\nshard_size = 10\nworkers = 2\n'
        f'[llm]\nbudget_usd = {BUDGET}\nconcurrency = 1\ncache_dir = "./cache"\n'
        '[[systems]]\nname = "llm_zero_shot"\n'
        f'args = {{ model = "openai/replay-model", api_base = "{url}/v1", price_override = [1000.0, 1000.0] }}\n'
    )


def paid(cache_dir) -> list[float]:
    """Every answer the server was paid for: each paid request is written to the cache once."""
    cache = LLMCache(cache_dir)
    try:
        return [entry["response"]["cost_usd"] for _, entry in cache.entries()]
    finally:
        cache.close()


def test_resumed_budget_run_counts_what_the_stopped_shards_already_paid(ray_head, tmp_path):
    with replay_server("--default-content", ANSWER) as url:
        config = tmp_path / "llm.toml"
        config.write_text(config_text(url))
        first = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env())
        assert first.returncode == 4, first.stdout[-3000:] + first.stderr[-3000:]
        after_first = paid(tmp_path / "cache")
        assert server_stats(url)["requests"] == len(after_first)

        second = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env())
        assert second.returncode == 4, second.stdout[-3000:] + second.stderr[-3000:]
        costs = paid(tmp_path / "cache")
        assert server_stats(url)["requests"] == len(costs)  # nothing paid twice
        overshoot = 2 * max(costs)  # requests in flight when the limit is crossed (one per worker)
        total = sum(costs)
        print(f"\npaid after stop: ${sum(after_first):.2f}; after resume: ${total:.2f} of ${BUDGET:.2f} "
              f"({100 * total / BUDGET:.0f} %), {len(costs)} requests")  # fmt: skip
        assert total <= BUDGET + overshoot
        assert sum(after_first) <= BUDGET + overshoot
        # the resumed run paid nothing more: its budget ledger already held what the first one paid
        assert total == pytest.approx(sum(after_first))

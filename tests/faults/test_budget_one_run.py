"""One budget for a whole paper audit (issue 12): the LLM proposer building the corpus, the LLM
reviewer on the Ray workers and a two-judge panel on the driver, all served by replay servers on
127.0.0.1 at litellm's listed prices, draw from one ledger. The run stops at the budget (exit 4)
while injecting, then while adjudicating; resubmitted with the same budget it pays nothing more;
with a raised budget it finishes. Every request a server answered is charged to the ledger once,
none is paid twice, and the ledger never passes a budget by more than the requests in flight when
it was crossed. A replay of the finished run on a node with an empty cache (same snapshot) pays
nothing: the shards', proposer's and judges' answers come back from the run's storage."""

from __future__ import annotations

import shutil
from pathlib import Path

import diskcache
import pytest

from clients.llm_cache import LLMCache
from tests.helpers.paths import REPO_ROOT
from tests.helpers.replay_server import replay_server, server_stats
from tests.helpers.run_job import run_job

pytestmark = [pytest.mark.heavy, pytest.mark.timeout(1800)]  # five paper-audit runs
REVIEW = "Summary: a short paper.\n\n- The reported total in the results table does not add up.\n- Eq. 2 has a sign error.\n"
JUDGE = ('{"detected": true, "outcome": "valid", "confidence": 0.9, "reason": "matches",'
         ' "evidence": "The reported total in the results table does not add up"}')  # fmt: skip
# a proposal the validator rejects: the proposer is asked again with the reason (more paid calls)
PROPOSAL = '{"file": "main.tex", "original": "not in the paper", "injected": "x", "rationale": "r"}'
# judges adjudicate 8 (copy, reviewer) pairs at once, two judges each: 16 requests may be in flight
IN_FLIGHT = 16


def config_text(budget: float, urls: dict[str, str], cache: str) -> str:
    return (
        'audit = "paper_audit"\nsnapshot = "2026-11-29"\nshard_size = 1\nworkers = 2\nbootstrap = 0\n'
        'tracking_uri = "none"\n[corpus]\nname = "example_papers"\n'
        f'[papers]\npaths = ["{REPO_ROOT}/corpora/samples/papers/example-paper"]\nseed = 7\n'
        f'proposer_model = "openai/gpt-4o-mini"\nproposer_api_base = "{urls["proposer"]}/v1"\n'
        f'[llm]\nbudget_usd = {budget}\nconcurrency = 1\ncache_dir = "{cache}"\n'
        f'[adjudication]\npanel = [{{ model = "openai/gpt-4o-mini", api_base = "{urls["judge_a"]}/v1", family = "a" }},'
        f' {{ model = "openai/gpt-4o", api_base = "{urls["judge_b"]}/v1", family = "b" }}]\n'
        '[[systems]]\nname = "paper_reviewer_llm"\n'
        f'args = {{ model = "openai/gpt-4o-mini", api_base = "{urls["reviewer"]}/v1" }}\n'
    )


def ledger(cache: Path) -> dict:
    with diskcache.Cache(str(cache)) as raw:
        (key,) = [k for k in raw.iterkeys() if isinstance(k, str) and k.startswith("budget:")]
        return raw[key]


def paid_costs(cache: Path) -> list[float]:
    """What every paid answer cost (each paid request is written to the cache once)."""
    store = LLMCache(cache)
    try:
        return [entry["response"]["cost_usd"] for _, entry in store.entries()]
    finally:
        store.close()


def test_one_budget_for_proposer_reviewer_and_judges_across_resumptions(ray_head, tmp_path):
    with (replay_server("--default-content", PROPOSAL) as proposer, replay_server("--default-content", REVIEW) as reviewer,
          replay_server("--default-content", JUDGE) as judge_a, replay_server("--default-content", JUDGE) as judge_b):  # fmt: skip
        urls = {"proposer": proposer, "reviewer": reviewer, "judge_a": judge_a, "judge_b": judge_b}
        config, cache = tmp_path / "audit.toml", tmp_path / "cache"

        def submit(budget: float, cache_dir: Path = cache):
            config.write_text(config_text(budget, urls, str(cache_dir)))
            return run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env(), timeout=400)

        def requests() -> dict[str, int]:
            stats = {name: server_stats(url) for name, url in urls.items()}
            assert all(s.get("paid_twice", 0) == 0 for s in stats.values()), stats  # no prompt answered twice
            return {name: s.get("requests", 0) for name, s in stats.items()}

        def check_ledger(budget: float) -> dict:
            spent, costs, sent = ledger(cache), paid_costs(cache), requests()
            # every answered request was charged once, to the one ledger (systems, judges, proposer)
            assert spent["paid_requests"] == sum(sent.values()) == len(costs), (spent, sent)
            assert spent["spent_usd"] == pytest.approx(sum(costs)) and spent["unpriced_requests"] == 0
            assert spent["spent_usd"] <= budget + IN_FLIGHT * max(costs), spent  # documented overshoot only
            return spent

        stopped = submit(0.001)  # a few proposals fit
        assert stopped.returncode == 4, stopped.stdout[-3000:] + stopped.stderr[-3000:]
        assert "[budget] stopped while building the corpus" in stopped.stdout
        first = check_ledger(0.001)
        assert requests()["proposer"] >= 1 and requests()["reviewer"] == 0

        judged = submit(0.02)  # the corpus and the reviews fit, the panel does not
        assert judged.returncode == 4, judged.stdout[-3000:] + judged.stderr[-3000:]
        assert "[budget] stopped while adjudicating" in judged.stdout
        second = check_ledger(0.02)
        assert second["spent_usd"] > first["spent_usd"] and requests()["reviewer"] == 4
        assert requests()["judge_b"] > 0

        before = requests()
        again = submit(0.02)  # the same budget again: nothing left to spend
        assert again.returncode == 4, again.stdout[-3000:] + again.stderr[-3000:]
        assert requests() == before and ledger(cache) == second

        done = submit(1.0)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        total = check_ledger(1.0)
        full = requests()
        print(f"\nspent ${first['spent_usd']:.4f} (budget $0.001), ${second['spent_usd']:.4f} ($0.02), "
              f"${total['spent_usd']:.4f} ($1); requests {full}")  # fmt: skip
        verdicts = sorted(tmp_path.glob("runs/*/tables/verdicts.parquet"))
        assert verdicts, "the finished run stores its verdicts"
        exported = {p.name.split("-")[0] for p in (tmp_path / "runs" / "driver-answers").rglob("*.jsonl.gz")}
        assert exported == {"adjudication", "proposer"}

        # a replay of the finished run on a node that never saw its cache: nothing is paid again
        shutil.rmtree(cache)
        replayed = submit(1.0, tmp_path / "cache-other")
        assert replayed.returncode == 0, replayed.stdout[-3000:] + replayed.stderr[-3000:]
        assert requests() == full

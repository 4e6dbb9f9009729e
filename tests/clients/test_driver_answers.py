"""What the driver pays for itself (the proposer, the judges) under the run's one budget and in the
run's storage (issue 12): a budget refusal makes a judge abstain and is counted, so the driver
stops the run (exit 4) instead of storing verdicts missing votes or crashing; the answers a driver
phase paid for go to `<storage>/driver-answers/<key>/` and come back into an empty cache."""

from __future__ import annotations

import asyncio

from adjudication.judge import Judge, JudgeSpec
from clients.lent_services import RunServices
from clients.llm_budget import BudgetClient
from clients.llm_cache import LLMCache
from clients.llm_gateway import LLMServices
from clients.llm_request import LLMRequest, LLMResponse
from cluster.services_builder import DRIVER_ANSWERS, budget_refused, driver_answers


def test_a_refused_judge_abstains_and_the_refusal_is_counted(tmp_path):
    budget = BudgetClient("judge-budget-test", usd=0.0, local=True)  # nothing left
    services = RunServices(run_key="k", snapshot="2026-11-29", llm=LLMServices(budget=budget))
    judge = Judge(JudgeSpec("openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1"), services.llm,
                  cache_dir=str(tmp_path / "cache"))  # fmt: skip
    assert budget_refused(services) is None
    vote = asyncio.run(judge.detection_vote("Did the review find it?", "panel"))
    assert vote["detected"] is None and "budget exhausted" in vote["reason"]
    outcome = asyncio.run(judge.outcome_vote("Is the flag valid?", "panel", ("valid", "invalid")))
    assert outcome["outcome"] is None and "budget exhausted" in outcome["reason"]
    assert budget.refusals == 2
    assert "2 requests refused by the run's budget (spent $0.0000 of $0.0000" in budget_refused(services)
    budget.kill()


def test_driver_answers_travel_through_the_runs_storage(tmp_path):
    storage = str(tmp_path / "runs")
    request = LLMRequest("openai/gpt-4o-mini", [{"role": "user", "content": "propose an edit"}], {"temperature": 0.0})
    paid = RunServices(run_key="k", snapshot="2026-11-29", cache_dir=str(tmp_path / "cache-a"))
    with driver_answers(paid, storage, "corpus-key", "proposer"):
        cache = LLMCache(paid.cache_dir)
        cache.put(request, LLMResponse(text='{"file": "main.tex"}', model_id="m", tokens_in=5, tokens_out=3))
        cache.close()
    (exported,) = (tmp_path / "runs" / DRIVER_ANSWERS / "corpus-key").iterdir()
    assert exported.name.startswith("proposer-") and exported.name.endswith(".jsonl.gz")

    fresh = RunServices(run_key="k", snapshot="2026-11-29", cache_dir=str(tmp_path / "cache-b"))
    with driver_answers(fresh, storage, "corpus-key", "proposer"):
        cache = LLMCache(fresh.cache_dir)
        hit = cache.get(request)
        cache.close()
    assert hit is not None and hit.text == '{"file": "main.tex"}' and hit.cached
    # the replayed phase read what it used: its export is the same file, not a second one
    assert [p.name for p in (tmp_path / "runs" / DRIVER_ANSWERS / "corpus-key").iterdir()] == [exported.name]
    # another work key (another corpus or snapshot) does not see these answers
    other = RunServices(run_key="k", snapshot="2026-12-01", cache_dir=str(tmp_path / "cache-c"))
    with driver_answers(other, storage, "other-key", "proposer"):
        cache = LLMCache(other.cache_dir)
        assert cache.get(request) is None
        cache.close()

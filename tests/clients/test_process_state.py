"""The per-process state (outage guards, cache handles, source clients, touched / written keys,
imported answer files, local budget ledgers and limiter states, warmed models) has one owner,
`clients.process_state.PROCESS_STATE`, emptied by `forget_run` / `reset`, never by poking globals."""

from __future__ import annotations

import asyncio

from clients.lent_services import RunServices
from clients.llm_budget import BudgetClient
from clients.process_state import PROCESS_STATE
from clients.response_cache import drain_touched, drain_written, record_touched, record_written
from cluster.rate_limiter import LimiterClient


def _fill(tmp_path, run_key: str) -> RunServices:
    services = RunServices(run_key=run_key, snapshot="2026-11-01", cache_dir=str(tmp_path / "cache"))
    services.outage_guard()
    services.response_cache()
    services.bib_source("crossref")  # a client only: nothing is sent
    return services


def test_reset_empties_every_field_in_place(tmp_path) -> None:
    PROCESS_STATE.reset()
    services = _fill(tmp_path, "run-a")
    record_touched(tmp_path / "cache")
    record_written(tmp_path / "cache")
    BudgetClient("budget-a", usd=1.0, local=True).start()
    asyncio.run(LimiterClient("limiter-a", local=True).reserve("k"))
    PROCESS_STATE.imported_answer_files.add(("s", "f", "d", "p", 1, 2))
    PROCESS_STATE.warmed_models.add(("openai/x", None))
    assert all(n >= 1 for n in PROCESS_STATE.sizes().values()), PROCESS_STATE.sizes()
    guard, cache = services.outage_guard(), services.response_cache()
    touched, closed = PROCESS_STATE.touched_keys, []
    real_close = cache.close
    cache.close = lambda: (closed.append(True), real_close())  # type: ignore[method-assign]

    PROCESS_STATE.reset()

    assert set(PROCESS_STATE.sizes().values()) == {0} and len(PROCESS_STATE.sizes()) == 9
    assert touched is PROCESS_STATE.touched_keys  # emptied in place: the modules see the same object
    assert drain_touched(tmp_path / "cache") == set() and drain_written(tmp_path / "cache") == []
    assert services.outage_guard() is not guard and services.response_cache() is not cache  # made afresh
    assert closed == [True]  # an open cache is closed by the reset, not left to the garbage collector
    PROCESS_STATE.reset()


def test_forget_run_drops_one_runs_state_only(tmp_path) -> None:
    PROCESS_STATE.reset()
    a, b = _fill(tmp_path / "a", "run-a"), _fill(tmp_path / "b", "run-b")
    a.forget_process_state()
    assert set(PROCESS_STATE.guards) == {"run-b"}
    assert {k[0] for k in PROCESS_STATE.response_caches} == {k[0] for k in PROCESS_STATE.sources} == {"run-b"}
    assert b.network_calls() == {"crossref": 0}
    PROCESS_STATE.reset()


def test_releasing_a_run_drops_its_state_in_this_process() -> None:
    """What the driver of a real run does at its end (jobs/run_corpus.py -> release_services)."""
    from cluster.services_builder import release_services

    services = RunServices(run_key="released-run", snapshot="2026-11-01")
    services.outage_guard()
    assert "released-run" in PROCESS_STATE.guards
    release_services(services)
    assert "released-run" not in PROCESS_STATE.guards

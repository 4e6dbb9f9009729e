"""Prices from the bundled map (offline) and the run budget, local and shared through Ray."""

from __future__ import annotations

import asyncio
import pickle

import pytest

from clients.llm_budget import BudgetClient, BudgetExhausted, BudgetLedger
from clients.llm_cost import estimate_cost, price_for


def test_bundled_price_map_prices_known_models_and_never_invents_a_price():
    price = price_for("openai/gpt-4o-mini")
    assert price is not None and price.listed_as == "gpt-4o-mini"
    assert price.cost(1_000_000, 0) == pytest.approx(0.15)
    assert price_for("openrouter/no-such-vendor/no-such-model") is None
    override = price_for("self/smollm2", (1.0, 2.0))
    assert override.cost(500_000, 250_000) == pytest.approx(1.0)
    assert estimate_cost(override, 10, 1000, 100) == pytest.approx(10 * (0.001 + 0.0002))
    assert estimate_cost(None, 10, 1000, 100) is None


def test_ledger_exhausts_on_dollars_or_tokens_and_preflight_reports_the_fraction_that_fits():
    ledger = BudgetLedger(usd=1.0, tokens=1000)
    assert ledger.exhausted_reason() is None
    ledger.charge(0.4, 100)
    ledger.charge(None, 100)
    assert ledger.status()["unpriced_requests"] == 1
    check = ledger.preflight(estimate_usd=1.2, estimate_tokens=400)
    assert not check["fits"] and check["fraction_fits"] == pytest.approx(0.5)
    ledger.charge(0.0, 800)
    assert "tokens" in ledger.exhausted_reason()


def test_budget_client_is_local_without_ray_and_raises_when_spent():
    async def scenario() -> None:
        client = BudgetClient("local-test", usd=0.01, local=True)
        await client.check()
        await client.charge(0.02, 10)
        with pytest.raises(BudgetExhausted, match=r"spent \$0.0200 of \$0.0100"):
            await client.check()
        client.kill()

    asyncio.run(scenario())


def test_budget_is_one_ledger_across_pickled_clients_through_ray(ray_session):
    async def scenario() -> None:
        a = BudgetClient("shared-test", tokens=100, local=False)
        b = pickle.loads(pickle.dumps(a))
        await a.charge(0.0, 60)
        await b.charge(0.0, 60)
        assert (await a.status())["spent_tokens"] == 120
        with pytest.raises(BudgetExhausted):
            await b.check()
        a.kill()

    asyncio.run(scenario())

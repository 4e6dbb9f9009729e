"""llm_zero_shot end to end through the gateway, litellm and the replay server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json

import pytest

from clients.lent_services import RunServices
from clients.llm_budget import BudgetClient
from clients.llm_gateway import LLMServices
from corpora.citations.hallmark import load_hallmark_jsonl
from jobs.llm_replay_server import build_hallmark_recording
from storage.records import Item
from storage.schemas import OUTPUT_SCHEMA, table_from_rows
from tests.helpers.paths import HALLMARK_DATA
from tests.helpers.replay_server import replay_server, server_stats
from verifiers.citations.llm_zero_shot import CUTOFF_ADDENDUM, build_messages
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext

pytestmark = pytest.mark.integration  # a replay server subprocess

GEMINI = "llm_openrouter_gemini_pro_dev_public"


def items_of(name: str) -> list[Item]:
    return [Item.from_row(r) for r in load_hallmark_jsonl(HALLMARK_DATA / name, split="dev_public").items.to_pylist()]


def zero_shot(url: str, **args):
    spec = SystemSpec("llm_zero_shot", {"model": "openai/replayed-gemini", "api_base": f"{url}/v1", **args})
    return build_system(spec)


def run(system, items, ctx):
    return asyncio.run(system.run(items, ctx))


def ctx_for(tmp_path, **services) -> RunContext:
    return RunContext("run-1", "2026-05-05", cache_dir=str(tmp_path / "cache"),
                      services=RunServices("test", "", llm=LLMServices(**{"concurrency": 16, **services})))


def released_predictions() -> dict[str, dict]:
    path = HALLMARK_DATA / "per_entry_predictions" / f"{GEMINI}.jsonl"
    return {p["bibtex_key"]: p for p in map(json.loads, path.read_text().splitlines())}


@pytest.mark.requires_shared_data
def test_replayed_gemini_answers_come_back_label_for_label(tmp_path):
    """150 entries: every committed label and confidence equals the released prediction, and
    exactly the entries HALLMARK logged as parse-error fallbacks are parse failures here."""
    recording = tmp_path / "gemini.jsonl"
    build_hallmark_recording(str(HALLMARK_DATA / "per_entry_predictions" / f"{GEMINI}.jsonl"),
                             str(HALLMARK_DATA / "dev_public_blind.jsonl"), str(recording), "google/gemini-2.5-pro")
    items = items_of("dev_public_blind.jsonl")[:150]
    released = released_predictions()
    with replay_server("--recording", str(recording)) as url:
        outputs = run(zero_shot(url), items, ctx_for(tmp_path))
    for out in outputs:
        want = released[out.item_id]
        if want["reason"].startswith("[Error fallback]"):
            assert out.error_kind == "parse" and out.label is None
        else:
            assert (out.label, out.confidence) == (want["label"], want["confidence"])
            assert out.model_id == "google/gemini-2.5-pro" and out.tokens_in > 0 and out.prompt_hash
            assert out.detail["parse_method"] == ("salvaged" if want["reason"].startswith("[Salvaged]") else "strict")
            assert out.detail["temperature"] == 0.0 and out.detail["seed"] == 42
    assert sum(o.error_kind == "parse" for o in outputs) >= 1


@pytest.mark.heavy
@pytest.mark.requires_shared_data
def test_replaying_gemini_pro_gives_back_its_released_metrics(tmp_path):
    """All 1,119 dev_public entries. HALLMARK's harness turned a parse failure into UNCERTAIN@0.5
    (reference 000, B.2.4); ours records it as a parse error, and scoring applies that same
    fallback, so the outputs as recorded give back the released DR/FPR/F1/MCC."""
    from scoring import score_citation_outputs

    recording = tmp_path / "gemini.jsonl"
    build_hallmark_recording(str(HALLMARK_DATA / "per_entry_predictions" / f"{GEMINI}.jsonl"),
                             str(HALLMARK_DATA / "dev_public_blind.jsonl"), str(recording), "google/gemini-2.5-pro")
    with replay_server("--recording", str(recording)) as url:
        system = zero_shot(url)
        outputs = run(system, items_of("dev_public_blind.jsonl"), ctx_for(tmp_path))
    assert len(outputs) == 1119 and system.parse_stats.failed == 37
    assert system.parse_stats.methods == {"salvaged": 849, "strict": 233}
    truth = load_hallmark_jsonl(HALLMARK_DATA / "dev_public.jsonl", split="dev_public").truth
    as_recorded = table_from_rows([o.to_row("run-1", "gemini", 0) for o in outputs], OUTPUT_SCHEMA)
    got = score_citation_outputs(truth, as_recorded, run_id="run-1", system="gemini").summary
    want = json.loads((HALLMARK_DATA / "baseline_results" / f"{GEMINI}.json").read_text())
    for key in ("detection_rate", "false_positive_rate", "f1_hallucination", "mcc", "num_uncertain"):
        assert got[key] == pytest.approx(want[key], abs=1e-12), key
    assert (got["num_parse_failures"], got["num_errors"], got["errors_by_kind"]) == (37, 0, {"parse": 37})
    assert got["parse_failure_rate"] == 37 / 1119


@pytest.mark.requires_shared_data
def test_budget_stop_marks_every_unfinished_item_and_resume_pays_nothing_twice(tmp_path):
    items = items_of("dev_public_blind.jsonl")[:12]
    answer = '{"label": "VALID", "confidence": 0.8, "predicted_hallucination_type": null, "reason": "ok"}'
    with replay_server("--default-content", answer) as url:
        system = zero_shot(url, price_override=[1000.0, 1000.0])  # $0.001 per token: a few calls spend it
        budget = BudgetClient("zs-budget", usd=2.0, local=True)
        first = run(system, items, ctx_for(tmp_path, budget=budget, concurrency=2))
        stopped = [o for o in first if o.error_kind == "budget"]
        paid = server_stats(url)["requests"]
        assert stopped and paid < len(items)
        assert all(f"{len(stopped)} of 12 items in this batch not done" in o.error for o in stopped)
        assert all(o.label is None for o in stopped)
        budget.kill()
        resumed_budget = BudgetClient("zs-budget-2", usd=1e9, local=True)
        second = run(zero_shot(url, price_override=[1000.0, 1000.0]), items, ctx_for(tmp_path, budget=resumed_budget))
        assert all(o.error is None for o in second)
        assert server_stats(url)["requests"] == len(items)  # each request paid exactly once
        assert sum(o.cache_hits for o in second) == paid
        resumed_budget.kill()


@pytest.mark.requires_shared_data
def test_parse_failure_and_truncation_are_never_verdicts(tmp_path):
    items = items_of("dev_public_blind.jsonl")[:4]
    with replay_server("--fault-rate", "malformed=1.0", "--default-content", '{"label": "VALID", "confidence": 1}') as url:
        system = zero_shot(url)
        outputs = run(system, items, ctx_for(tmp_path))
    assert [o.error_kind for o in outputs] == ["parse"] * 4
    assert all(o.label is None and o.tokens_out and o.model_id for o in outputs)
    assert system.parse_stats.failure_rate == 1.0


@pytest.mark.requires_shared_data
def test_cutoff_aware_variant_changes_the_prompt_and_its_hash():
    item = items_of("dev_public_blind.jsonl")[0]
    default, cutoff = build_messages(item), build_messages(item, "cutoff_aware")
    assert cutoff[0]["content"] == default[0]["content"] + CUTOFF_ADDENDUM
    assert "@inproceedings{" + item.item_id in default[0]["content"]
    a = build_system(SystemSpec("llm_zero_shot", {"model": "openai/x"}))
    b = build_system(SystemSpec("llm_zero_shot", {"model": "openai/x", "prompt_variant": "cutoff_aware"}))
    assert a.template_hash != b.template_hash


@pytest.mark.requires_shared_data
def test_preflight_estimate_of_the_remaining_work_against_the_budget():
    items = items_of("dev_public_blind.jsonl")[:100]
    system = build_system(SystemSpec("llm_zero_shot", {"model": "openai/gpt-4o-mini"}))
    usd, tokens = system.estimate(items)
    assert tokens > 100 * 1024  # ~600 prompt tokens plus the 1024-token completion budget each
    assert 0.01 < usd < 1.0
    budget = BudgetClient("preflight", usd=usd / 4, local=True)
    check = asyncio.run(budget.preflight(usd, tokens))
    assert not check["fits"] and check["fraction_fits"] == pytest.approx(0.25)
    budget.kill()
    unpriced = build_system(SystemSpec("llm_zero_shot", {"model": "openai/unlisted-model"}))
    assert unpriced.estimate(items)[0] is None

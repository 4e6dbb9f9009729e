"""Provider outages are outages, not verdicts (issue 11 item 5).

Unit level: which failures count as an outage (clients/errors.py `is_outage`), the output an
outage gives (verifiers/llm_batch.py `provider_failure`), one row per item when a retry shard
supersedes an outage row (Store.read_outputs) and how retry shards are planned.

End to end (heavy) through jobs/run_corpus.py with `llm_zero_shot` and the replay server: an
all-500 provider leaves every item UNCERTAIN-by-outage, the run incomplete (exit 1) and its
scores withheld; once the provider recovers, the same command asks again for exactly those items
and nothing else, and the run is complete with one output per item.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from audits.summary import count_outage_answers
from clients.errors import (
    AuthError,
    BadRequestError,
    CacheMissError,
    ParseError,
    QuotaExhaustedError,
    RateLimitedError,
    SourceOutageError,
    TransientError,
    is_outage,
)
from cluster.outage_retry import plan_outage_retries
from cluster.run_config import DEFAULT_CORPUS
from storage.outages import count_rows_per_item, outage_item_ids, outage_sources
from storage.records import Output
from storage.schemas import ITEM_SCHEMA, OUTPUT_SCHEMA, table_from_rows
from storage.store import Store
from tests.helpers.replay_server import replay_server, server_stats
from tests.helpers.run_job import run_job
from verifiers.llm_batch import provider_failure

ANSWER = '{"label": "VALID", "confidence": 0.8, "predicted_hallucination_type": null, "reason": "looks real"}'
MODEL = "openai/replay-model"
N_ITEMS = 20


# -- unit: classification and the outage output ------------------------------------------------
@pytest.mark.parametrize(
    ("error", "outage"),
    [
        (TransientError("internal server error", source=MODEL, status=500), True),
        (TransientError("Timeout: request timed out", source=MODEL), True),
        (TransientError("APIConnectionError: connection refused", source=MODEL), True),
        (RateLimitedError("rate limit exceeded", retry_after=1.0, source=MODEL), True),  # 429 after all retries
        (SourceOutageError("marked unavailable", source="crossref"), True),
        (BadRequestError("context length exceeded", source=MODEL, status=400), False),
        (BadRequestError("content filter triggered", source=MODEL, status=400), False),
        (AuthError("bad key", source=MODEL, status=401), False),
        (QuotaExhaustedError("insufficient_quota", source=MODEL, status=429), False),
        (CacheMissError("not in the pinned cache", source=MODEL), False),
        (ParseError("malformed body", source=MODEL), False),
    ],
)
def test_outage_classification_is_by_type(error, outage):
    assert is_outage(error) is outage
    out = provider_failure("k1", error, MODEL)
    if outage:  # UNCERTAIN-by-outage: the source mechanism, never an errored row, never a verdict
        assert (out.label, out.error, outage_sources(out.detail)) == ("UNCERTAIN", None, [f"llm:{MODEL}"])
        assert "provider unavailable" in out.reason and error.message in out.reason
    else:  # a definite failure about this request: errored with its reason, no label
        assert (out.label, out.error_kind, outage_sources(out.detail)) == (None, "provider", [])
        assert error.message in out.error


def _rows(outputs: list[Output], shard_id: int) -> list[dict]:
    return [o.to_row("run", "sys", shard_id) for o in outputs]


def test_retry_shard_rows_supersede_outage_rows_and_are_planned_once(tmp_path):
    store = Store(str(tmp_path))
    down = provider_failure("b", TransientError("500", source=MODEL, status=500), MODEL)
    first = [Output("a", "VALID", 0.9), down, Output("c", "HALLUCINATED", 0.7)]
    store.write_shard("run", 0, table_from_rows(_rows(first, 0), OUTPUT_SCHEMA))
    store.write_shard("run", 1, table_from_rows(_rows([Output("d", "VALID", 0.6)], 1), OUTPUT_SCHEMA))
    items = table_from_rows([{"item_id": i, "kind": "citation", "corpus": "c", "payload_json": "{}"} for i in "abcd"],
                            ITEM_SCHEMA)  # fmt: skip
    outputs = store.read_outputs("run")
    assert outage_item_ids(outputs) == ["b"] and count_outage_answers(outputs) == 1

    planned = plan_outage_retries(store, "run", items, shard_size=3, num_shards=2)
    assert planned == [(2, (1,))]  # shard id after the regular shards, row of item "b" only

    store.write_shard("run", 2, table_from_rows(_rows([Output("b", "HALLUCINATED", 0.8)], 2), OUTPUT_SCHEMA))
    outputs = store.read_outputs("run")
    assert outputs.column("item_id").to_pylist() == ["a", "b", "c", "d"]  # one row per item, order kept
    assert outputs.column("label").to_pylist() == ["VALID", "HALLUCINATED", "HALLUCINATED", "VALID"]
    assert count_rows_per_item(outputs) == 0 and count_outage_answers(outputs) == 0
    assert plan_outage_retries(store, "run", items, shard_size=3, num_shards=2) == []  # nothing left to retry
    audit = pq.read_table(store.path("run", "shards", "shard-00000.parquet"))
    assert audit.num_rows == 3  # the superseded outage row is kept in its shard file (audit trail)


def test_failed_retry_shard_is_planned_again_under_its_id(tmp_path):
    store = Store(str(tmp_path))
    down = [provider_failure(i, TransientError("500", source=MODEL, status=500), MODEL) for i in "ab"]
    store.write_shard("run", 0, table_from_rows(_rows(down, 0), OUTPUT_SCHEMA))
    store.mark_shard_failed("run", 1, "worker died", 3)  # the first retry shard never finished
    items = table_from_rows([{"item_id": i, "kind": "citation", "corpus": "c", "payload_json": "{}"} for i in "ab"],
                            ITEM_SCHEMA)  # fmt: skip
    assert plan_outage_retries(store, "run", items, shard_size=1, num_shards=1) == [(1, (0,)), (2, (1,))]
    store.write_shard("run", 1, table_from_rows(_rows([Output("a", "VALID", 0.9)], 1), OUTPUT_SCHEMA))
    assert store.failed_shards("run") == {}  # its success cleared the failure record
    assert plan_outage_retries(store, "run", items, shard_size=1, num_shards=1) == [(2, (1,))]


# -- end to end ---------------------------------------------------------------------------------
def _corpus(tmp_path: Path) -> Path:
    path = tmp_path / "outage.jsonl"
    path.write_text("".join(DEFAULT_CORPUS.read_text().splitlines(keepends=True)[:N_ITEMS]))
    return path


def _config(tmp_path: Path, url: str) -> Path:
    config = tmp_path / "outage.toml"
    config.write_text(
        f'snapshot = "2026-11-30"\nbootstrap = 0\ntracking_uri = "none"\nshard_size = 10\nworkers = 2\n'
        f'[corpus]\npath = "{_corpus(tmp_path)}"\n'
        '[[systems]]\nname = "llm_zero_shot"\n'
        f'args = {{ model = "{MODEL}", api_base = "{url}/v1" }}\n'
    )
    return config


def _post(url: str, path: str, body: dict) -> None:
    request = urllib.request.Request(f"{url}{path}", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200


def _run_dir(tmp_path: Path) -> Path:
    (run,) = [p for p in (tmp_path / "runs").iterdir() if (p / "manifest.json").exists()]
    return run


def _shard_rows(run: Path) -> int:
    return sum(pq.read_metadata(p).num_rows for p in (run / "shards").glob("shard-*.parquet"))


@pytest.mark.heavy
def test_all_500_provider_is_an_outage_and_a_resume_retries_exactly_those_items(ray_head, tmp_path):
    with replay_server("--default-content", ANSWER, "--fault-rate", "500=1.0") as url:
        config = _config(tmp_path, url)
        down = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env())
        assert down.returncode == 1, down.stdout[-3000:] + down.stderr[-3000:]
        run = _run_dir(tmp_path)
        status = json.loads((run / "status.json").read_text())
        assert status["status"].startswith("incomplete") and status["outage_items"] == N_ITEMS
        assert status["published"] is False and status["errored"] == 0
        scores = json.loads((run / "scores.json").read_text())
        assert scores["published"] is False
        board = json.loads(next((tmp_path / "runs" / "reports").glob("*/run_summary.json")).read_text())
        assert board[0]["detection_rate"] is None and board[0]["false_positive_rate"] is None  # withheld
        outputs = Store(str(tmp_path / "runs")).read_outputs(run.name)
        assert outputs.column("label").to_pylist() == ["UNCERTAIN"] * N_ITEMS
        assert outage_item_ids(outputs) == outputs.column("item_id").to_pylist()
        assert {outage_sources(d)[0] for d in outputs.column("detail_json").to_pylist()} == {f"llm:{MODEL}"}
        assert server_stats(url).get("ok", 0) == 0

        _post(url, "/faults", {})  # the provider recovers
        _post(url, "/stats/reset", {})
        up = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env())
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        assert f"[resume] {N_ITEMS} items answered during an outage" in up.stdout
        progress = [line for line in up.stdout.splitlines() if line.startswith("[progress]")]
        assert progress and f"{N_ITEMS}/{N_ITEMS} items (100%)" in progress[-1], progress  # retries counted once
        stats = server_stats(url)
        assert stats["requests"] == N_ITEMS and stats["ok"] == N_ITEMS and stats["paid_twice"] == 0
        status = json.loads((run / "status.json").read_text())
        assert status["status"] == "complete" and status["published"] is True and status["outage_items"] == 0
        scores = json.loads((run / "scores.json").read_text())
        assert scores["published"] is True and scores["num_scored"] == N_ITEMS
        outputs = Store(str(tmp_path / "runs")).read_outputs(run.name)
        assert outputs.num_rows == N_ITEMS and count_rows_per_item(outputs) == 0
        assert set(outputs.column("label").to_pylist()) == {"VALID"}
        assert _shard_rows(run) == 2 * N_ITEMS  # the outage rows stay in their shard files, superseded

        again = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env())
        assert again.returncode == 0 and "answered during an outage" not in again.stdout
        assert server_stats(url)["requests"] == N_ITEMS  # a complete run asks nothing again


@pytest.mark.heavy
def test_partial_outage_retries_only_the_failed_half(ray_head, tmp_path):
    with replay_server("--default-content", ANSWER, "--fault-prompts", "500=0.5") as url:
        config = _config(tmp_path, url)
        down = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env())
        assert down.returncode == 1, down.stdout[-3000:] + down.stderr[-3000:]
        run = _run_dir(tmp_path)
        store = Store(str(tmp_path / "runs"))
        before = store.read_outputs(run.name)
        failed = outage_item_ids(before)
        answered = server_stats(url)["ok"]
        assert 0 < len(failed) < N_ITEMS and answered == N_ITEMS - len(failed)
        kept = {r["item_id"]: r for r in before.to_pylist() if r["item_id"] not in failed}

        _post(url, "/faults", {})
        _post(url, "/stats/reset", {})
        up = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env())
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        stats = server_stats(url)
        assert stats["requests"] == len(failed) == stats["ok"]  # only the failed half is asked again
        after = store.read_outputs(run.name)
        assert after.num_rows == N_ITEMS and count_rows_per_item(after) == 0 and outage_item_ids(after) == []
        for row in after.to_pylist():  # answers that were not outages are the very rows stored before
            if row["item_id"] in kept:
                assert row == kept[row["item_id"]]
        assert json.loads((run / "status.json").read_text())["status"] == "complete"


# -- the replay server's transport faults, through the real gateway --------------------------------
@pytest.mark.parametrize("fault", ["cut_body", "timeout", "500", "429"])
@pytest.mark.integration
def test_each_transport_fault_is_retried_and_never_paid_twice(tmp_path, fault):
    import asyncio

    from clients.llm_gateway import LLMGateway, LLMServices
    from clients.retry import RetryPolicy

    # the client's timeout leaves a loaded machine room to answer the third attempt (0.5 s did not, under
    # load); the server's delayed answers come well after it
    with replay_server("--default-content", ANSWER, "--fault-schedule", f"{fault},{fault}", "--timeout-delay", "5",
                       "--retry-after", "0.1") as url:  # fmt: skip
        services = LLMServices(timeout_s=2.0, retry=RetryPolicy(max_attempts=3, base_wait=0.05))
        gateway = LLMGateway(MODEL, services, api_base=f"{url}/v1")
        response = asyncio.run(gateway.complete([{"role": "user", "content": "hi"}]))
        assert response.attempts == 3 and response.text == ANSWER
        stats = server_stats(url)
        if fault == "timeout":  # wait for the server to finish its delayed handlers and see the client gone
            import time

            deadline = time.monotonic() + 30
            while stats.get("abandoned", 0) < 2 and time.monotonic() < deadline:
                time.sleep(0.2)
                stats = server_stats(url)
    assert stats["requests"] == 3 and stats[f"fault_{fault}"] == 2 and stats["ok"] == 1
    assert stats["paid_twice"] == 0 and stats["answered_prompts"] == stats["prompts_tried"] == 1
    if fault == "timeout":
        assert stats["abandoned"] == 2  # the client gave up: nothing delivered, nothing billed


@pytest.mark.integration
def test_fault_prompts_hit_a_fixed_share_until_the_faults_are_replaced(tmp_path):
    import asyncio

    from clients.errors import TransientError
    from clients.llm_gateway import LLMGateway, LLMServices
    from clients.retry import RetryPolicy

    with replay_server("--default-content", ANSWER, "--fault-prompts", "500=0.5") as url:
        gateway = LLMGateway(MODEL, LLMServices(retry=RetryPolicy(max_attempts=2, base_wait=0.01)), api_base=f"{url}/v1")

        async def ask_all() -> list[bool]:
            async def one(i: int) -> bool:
                try:
                    await gateway.complete([{"role": "user", "content": f"prompt {i}"}])
                    return True
                except TransientError:
                    return False

            return list(await asyncio.gather(*(one(i) for i in range(40))))

        first = asyncio.run(ask_all())
        assert 8 < first.count(False) < 32  # about half the prompts are down, on every attempt
        _post(url, "/faults", {})
        second = asyncio.run(ask_all())
        assert all(second)
        assert server_stats(url)["ok"] == 40 + first.count(True)  # no cache here: the answered ones were asked again


# -- issue 26 item 4: the checker service is a provider like the others ------------------------------
def _checker_transport(statuses: list[int], seen: list[int]):
    import httpx

    def answer(request: httpx.Request) -> httpx.Response:
        status = statuses[min(len(seen), len(statuses) - 1)]
        seen.append(status)
        if status == 200:
            body = json.loads(request.content)
            return httpx.Response(200, json=[{"kind": b["kind"], "outcome": "confirmed"} for b in body])
        return httpx.Response(status, json={"error": f"status {status}"}, headers={"Retry-After": "0"})

    return httpx.MockTransport(answer)


@pytest.mark.parametrize(
    ("statuses", "error", "attempts"),
    [
        ([503], TransientError, 3),
        ([429], RateLimitedError, 3),
        ([502, 429, 200], None, 3),  # recovered within the retry policy: an answer
        ([400], BadRequestError, 1),  # our request is wrong: definite, not retried
    ],
)
def test_checker_client_retries_transient_answers_and_classes_them_as_outages(statuses, error, attempts):
    import asyncio

    from clients.checker_client import CheckRequest, HttpCheckerClient
    from clients.retry import RetryPolicy

    seen: list[int] = []
    client = HttpCheckerClient("http://checkers.test/checkers", transport=_checker_transport(statuses, seen),
                               retry=RetryPolicy(max_attempts=3, base_wait=0.01))  # fmt: skip
    call = client.check_many([CheckRequest("math.equality", {"lhs": "1", "rhs": "1"})])
    if error is None:
        assert [r.outcome for r in asyncio.run(call)] == ["confirmed"]
    else:
        with pytest.raises(error) as caught:
            asyncio.run(call)
        assert is_outage(caught.value) is (error is not BadRequestError)
    assert len(seen) == attempts


def _dead_checker_url() -> str:
    from tests.helpers.ports import free_port

    return f"http://127.0.0.1:{free_port()}/checkers"  # nothing listens: connection refused


def test_mechanical_reviewer_on_a_dead_checker_service_is_uncertain_by_outage_not_final(monkeypatch):
    import asyncio
    from functools import partialmethod

    from clients.checker_client import HttpCheckerClient
    from clients.retry import RetryPolicy
    from tests.adjudication.paper_copies import clean_item, injected_item
    from verifiers.reviewers.mechanical import MechanicalReviewer
    from verifiers.system import RunContext

    quick = RetryPolicy(max_attempts=2, base_wait=0.01)  # the default policy's waits add nothing here
    monkeypatch.setattr(HttpCheckerClient, "__init__", partialmethod(HttpCheckerClient.__init__, retry=quick))
    reviewer = MechanicalReviewer(checker_url=_dead_checker_url())
    outputs = asyncio.run(reviewer.run([clean_item(), injected_item()], RunContext("run-m", "2026-05-05")))
    for out in outputs:  # never a final errored row that a resubmission would skip
        assert (out.label, out.error, out.error_kind) == ("UNCERTAIN", None, None), out
        assert outage_sources(out.detail) == ["checkers"] and "checker service unavailable" in out.reason
        assert "cannot reach the checker service" in out.reason
    rows = [o.to_row("run-m", "paper_reviewer_mechanical", 0) for o in outputs]
    table = table_from_rows(rows, OUTPUT_SCHEMA)
    assert count_outage_answers(table) == 2 and outage_item_ids(table) == ["P1/copy-0", "P1/copy-1"]


def test_a_checker_that_refuses_the_request_is_an_errored_review_not_an_outage():
    import asyncio

    from clients.checker_client import HttpCheckerClient
    from tests.adjudication.paper_copies import clean_item
    from verifiers.reviewers.mechanical import MechanicalReviewer

    reviewer = MechanicalReviewer(checker_url="http://checkers.test/checkers")
    seen: list[int] = []

    async def check_all(statements):
        client = HttpCheckerClient(reviewer.checker_url, transport=_checker_transport([413], seen))
        from clients.checker_client import CheckRequest

        await client.check_many([CheckRequest(s.kind, s.payload) for s in statements])

    reviewer.check_all = check_all
    out = asyncio.run(reviewer.review(clean_item()))
    assert (out.label, out.error_kind) == (None, "provider") and "HTTP 413" in out.error
    assert outage_sources(out.detail) == [] and seen == [413]


def test_an_outage_review_is_unscored_never_missed():
    from adjudication.papers.adjudicate import PaperAdjudicationConfig, adjudicate_paper_run
    from clients.llm_gateway import LLMServices
    from tests.adjudication.paper_copies import injected_item, truth_rows

    class NoChecks:
        def close(self) -> None:
            pass

    items = table_from_rows([injected_item().to_row()], ITEM_SCHEMA)
    down = Output("P1/copy-1", "UNCERTAIN", 0.5, "no review: checker service unavailable",
                  detail={"outage_sources": ["checkers"]}).to_row("run-m", "paper_reviewer_mechanical", 0)  # fmt: skip
    table = adjudicate_paper_run(items, truth_rows(), [down], PaperAdjudicationConfig(panel=[]),
                                 services=LLMServices(), checks=NoChecks())  # fmt: skip
    rows = table.to_pylist()
    assert len(rows) == 3 and {r["outcome"] for r in rows} == {"unscored"}
    assert all("checkers unavailable" in json.loads(r["detail_json"])["unscored_reason"] for r in rows)


# -- issue 26 item 6: a missing key is an auth failure, never an outage -------------------------------
def test_litellm_missing_credentials_is_an_auth_error_not_an_outage():
    import litellm

    from clients.llm_litellm import classify_litellm_error

    # what litellm raises for an OpenAI-style model when no key is set anywhere: a 500
    missing = litellm.InternalServerError(
        message="OpenAIException - Missing credentials. Please pass an `api_key`, or set the `OPENAI_API_KEY` "
                "environment variable.", llm_provider="openai", model="gpt-4o-mini")  # fmt: skip
    anthropic = litellm.AuthenticationError(message="Missing Anthropic API Key - no key is set", llm_provider="anthropic",
                                            model="claude")  # fmt: skip
    for exc in (missing, anthropic):
        error = classify_litellm_error(exc, MODEL)
        assert isinstance(error, AuthError) and not is_outage(error)
        assert provider_failure("k1", error, MODEL).error_kind == "provider"
    real_500 = litellm.InternalServerError(message="upstream exploded", llm_provider="openai", model="gpt-4o-mini")
    assert is_outage(classify_litellm_error(real_500, MODEL))


def test_a_key_variable_missing_on_this_machine_fails_before_any_call(monkeypatch):
    import asyncio

    from clients.llm_gateway import LLMGateway, LLMServices

    monkeypatch.delenv("ISSUE26_ABSENT_KEY", raising=False)
    dead = _dead_checker_url().removesuffix("/checkers")  # a call would be a connection error (an outage)
    gateway = LLMGateway(MODEL, LLMServices(), api_base=f"{dead}/v1", api_key_env="ISSUE26_ABSENT_KEY")
    with pytest.raises(AuthError) as caught:
        asyncio.run(gateway.complete([{"role": "user", "content": "hi"}]))
    assert "ISSUE26_ABSENT_KEY" in caught.value.reason and MODEL in caught.value.reason
    assert gateway.stats.network_calls == 1 and not is_outage(caught.value)  # one attempt, never retried
    out = provider_failure("k1", caught.value, MODEL)
    assert (out.label, out.error_kind, outage_sources(out.detail)) == (None, "provider", [])


def test_provider_default_key_missing_is_named(monkeypatch):
    from clients.llm_litellm import missing_key_reasons

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert missing_key_reasons("openai/gpt-4o-mini") == ["model openai/gpt-4o-mini needs environment variable OPENAI_API_KEY"]
    assert missing_key_reasons("openai/x", api_base="http://127.0.0.1:1/v1") == []  # a custom endpoint's business
    monkeypatch.setenv("OPENAI_API_KEY", "sk-present-000000")
    assert missing_key_reasons("openai/gpt-4o-mini") == []


@pytest.mark.heavy
@pytest.mark.integration
def test_paper_audit_with_a_dead_checker_service_is_incomplete_and_a_resubmission_reviews_again(ray_head, tmp_path):
    """Through jobs/run_corpus.py: the mechanical reviewer pointed at a dead checker service leaves
    every copy UNCERTAIN-by-outage (exit 1, scores withheld, 0 injections scored); submitting again
    with the local checks (`checker_url` is a runtime argument: the same run) reviews exactly those
    copies and the run is complete."""
    from tests.helpers.paths import REPO_ROOT

    def config(checker: str) -> Path:
        path = tmp_path / "papers.toml"
        args = f'args = {{ checker_url = "{checker}" }}\n' if checker else ""
        path.write_text(
            'audit = "paper_audit"\nsnapshot = "2026-11-29"\nshard_size = 2\nworkers = 1\nbootstrap = 0\n'
            'tracking_uri = "none"\n[corpus]\nname = "example_papers"\n'
            f'[papers]\npaths = ["{REPO_ROOT}/corpora/samples/papers/example-paper"]\nseed = 7\n'
            f'[[systems]]\nname = "paper_reviewer_mechanical"\n{args}'
        )
        return path

    down = run_job("run_corpus.py", "--config", str(config(_dead_checker_url())), cwd=tmp_path, env=ray_head.env())
    assert down.returncode == 1, down.stdout[-3000:] + down.stderr[-3000:]
    run = _run_dir(tmp_path)
    status = json.loads((run / "status.json").read_text())
    assert status["status"].startswith("incomplete") and status["outage_items"] == 4 and status["errored"] == 0
    assert json.loads((run / "scores.json").read_text())["published"] is False
    verdicts = Store(str(tmp_path / "runs")).read_table(run.name, "verdicts").to_pylist()
    assert verdicts and {v["outcome"] for v in verdicts} == {"unscored"}  # never "missed"

    up = run_job("run_corpus.py", "--config", str(config("")), cwd=tmp_path, env=ray_head.env())
    assert up.returncode in (0, 3), up.stdout[-3000:] + up.stderr[-3000:]
    assert "[resume] 4 items answered during an outage" in up.stdout
    status = json.loads((run / "status.json").read_text())
    assert status["outage_items"] == 0 and status["published"] is True
    outputs = Store(str(tmp_path / "runs")).read_outputs(run.name)
    assert outputs.num_rows == 4 and outage_item_ids(outputs) == [] and count_rows_per_item(outputs) == 0

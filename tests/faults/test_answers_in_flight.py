"""Answers paid before a SIGKILL are not paid again (issue 26, item 12).

A real worker process (`cluster/shard_worker.py: ShardWorker`, `llm_zero_shot`, concurrency 8) and a
real driver phase (judges inside `driver_answers`) pay the LLM replay server for answers, are killed
with SIGKILL mid-work, and the work runs again in a new process whose cache is empty (a lost node:
only the run's storage is left). Before the kill the server stops answering (429s that hold every
request back a minute), so the answers finished before the kill are exactly those the killed process
stored; the kill comes
once they are exported, or after a minute when they never are (the old code exported at shard
end only). `bench/bench_answers_in_flight.py` measures the same at an arbitrary moment."""

from __future__ import annotations

import json

import pytest

from bench.bench_answers_in_flight import kill_and_resume

pytestmark = [pytest.mark.heavy, pytest.mark.integration]  # SIGKILL and resume: minutes each

CONCURRENCY = 8


@pytest.mark.timeout(1800)  # two child processes that import litellm: minutes on a loaded machine
@pytest.mark.parametrize("role", ["worker", "judges"])
def test_a_killed_process_answers_are_not_paid_again_on_another_node(role, tmp_path):
    f = kill_and_resume(tmp_path, role, "lost", items=100, concurrency=CONCURRENCY, latency=0.5, kill_after=40,
                        quiesce=True)  # fmt: skip
    summary = f"{f}"
    assert f.stored_before_kill >= 40, summary  # killed mid-work, with answers paid
    assert f.stored_before_kill < 100, summary
    assert f.finished_paid_again == 0, summary  # every answer finished before the kill came from storage
    assert f.paid_twice <= CONCURRENCY, summary  # at most the calls on the wire
    assert f.answered_prompts == 100, summary  # and the work was done
    result = json.loads(f.resumed_output)
    if role == "worker":
        assert result == {"status": "done", "items": 100, "errored": 0}, summary
    else:
        assert result == {"votes": 100, "abstained": 0}, summary

"""An LLM verifier through jobs/run_corpus.py: replay server on 127.0.0.1, budget stop, resume,
and a second run of the same snapshot that makes no network call."""

from __future__ import annotations

import json

import pytest

from tests.helpers.replay_server import replay_server, server_stats
from tests.helpers.run_job import run_job

pytestmark = pytest.mark.heavy
ANSWER = '{"label": "VALID", "confidence": 0.8, "predicted_hallucination_type": null, "reason": "looks real"}'


def config_text(url: str, budget_usd: float, snapshot: str = "2026-11-29") -> str:
    return (
        f'snapshot = "{snapshot}"\nbootstrap = 0\ntracking_uri = "none"\nshard_size = 10\nworkers = 2\n'
        f'[llm]\nbudget_usd = {budget_usd}\n'
        '[[systems]]\nname = "llm_zero_shot"\n'
        f'args = {{ model = "openai/replay-model", api_base = "{url}/v1", price_override = [1000.0, 1000.0] }}\n'
    )


def test_budget_stop_resume_and_replay_pay_each_request_once(ray_head, tmp_path):
    with replay_server("--default-content", ANSWER) as url:
        config = tmp_path / "llm.toml"
        config.write_text(config_text(url, budget_usd=40.0))  # $0.001/token: a few dozen requests
        stopped = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env())
        assert stopped.returncode == 4, stopped.stdout[-3000:] + stopped.stderr[-3000:]
        assert "[budget] stopped" in stopped.stdout
        paid_first = server_stats(url)["requests"]
        assert 0 < paid_first < 100

        config.write_text(config_text(url, budget_usd=1e9))  # the budget is not part of the run's identity
        resumed = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env())
        assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
        assert server_stats(url)["requests"] == 100  # every entry paid exactly once across both runs
        (run,) = [p for p in (tmp_path / "runs").iterdir() if (p / "manifest.json").exists()]
        scores = json.loads((run / "scores.json").read_text())
        assert scores["num_scored"] == 100 and scores["detection_rate"] == 0.0 and scores["false_positive_rate"] == 0.0

        again = run_job("run_corpus.py", "--config", str(config), "--snapshot", "2026-11-30", cwd=tmp_path,
                        env=ray_head.env())  # fmt: skip
        assert again.returncode == 0, again.stdout[-3000:]
        assert server_stats(url)["requests"] == 100  # a new snapshot replays from the response cache

"""A lost node loses no paid answer: each shard exports the answers it touched to the run's storage,
and shards redone on a node with an empty cache answer from them (replay server on 127.0.0.1
counts the requests)."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers.replay_server import replay_server, server_stats
from tests.helpers.run_job import run_job

pytestmark = pytest.mark.heavy
ANSWER = '{"label": "VALID", "confidence": 0.8, "predicted_hallucination_type": null, "reason": "looks real"}'


def config_text(url: str, cache_dir: str) -> str:
    return (
        'snapshot = "2026-11-29"\nbootstrap = 0\ntracking_uri = "none"\nshard_size = 10\nworkers = 2\n'
        f'[llm]\nbudget_usd = 1e9\ncache_dir = "{cache_dir}"\n'
        '[[systems]]\nname = "llm_zero_shot"\n'
        f'args = {{ model = "openai/replay-model", api_base = "{url}/v1", price_override = [1000.0, 1000.0] }}\n'
    )


def test_redone_shards_on_a_node_without_the_cache_answer_from_storage(ray_head, tmp_path):
    with replay_server("--default-content", ANSWER) as url:
        config = tmp_path / "llm.toml"
        config.write_text(config_text(url, "cache-a"))
        first = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env())
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
        paid = server_stats(url)["requests"]
        assert paid == 100
        (run,) = [p for p in (tmp_path / "runs").iterdir() if (p / "manifest.json").exists()]
        exported = sorted(p.name for p in (run / "answers").iterdir())
        assert exported == [f"shard-{i:05d}.jsonl.gz" for i in range(10)]

        # node A is lost: its cache and the outputs of shards 0-4 are gone; node B starts empty
        shutil.rmtree(tmp_path / "cache-a")
        for shard in range(5):
            (run / "shards" / f"shard-{shard:05d}.parquet").unlink()
        config.write_text(config_text(url, "cache-b"))
        redone = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env())
        assert redone.returncode == 0, redone.stdout[-3000:] + redone.stderr[-3000:]
        assert "5 of 10 shards already finished" in redone.stdout
        assert server_stats(url)["requests"] == paid  # every redone answer came from storage
        assert len(list((run / "shards").iterdir())) == 10

        # the export is per run: another storage root with an empty cache asks the server again
        config.write_text(config_text(url, "cache-c"))
        other = run_job("run_corpus.py", "--config", str(config), "--storage", str(tmp_path / "runs-2"),
                        cwd=tmp_path, env=ray_head.env())  # fmt: skip
        assert other.returncode == 0, other.stdout[-3000:] + other.stderr[-3000:]
        assert server_stats(url)["requests"] == paid + 100

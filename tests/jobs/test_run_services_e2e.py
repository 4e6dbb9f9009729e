"""One run's services, through jobs/run_corpus.py with 2 Ray workers against the local bib server:
the shared limiter holds the configured rate, the snapshot-scoped cache makes a repeated run ask
nothing and a new snapshot ask again, an outage leaves items UNCERTAIN and the run incomplete,
raising max_concurrency or renaming the label resumes the same run, and llm_agentic gets its
sources from the run."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.helpers.bib_server import Fault, start_bib_server
from tests.helpers.replay_server import replay_server, server_stats
from tests.helpers.run_job import run_job

pytestmark = pytest.mark.heavy
SAMPLE = Path(__file__).resolve().parents[2] / "corpora" / "samples" / "citations_sample.jsonl"
RPM = 240  # 4 requests per second for crossref, across both workers


@pytest.fixture(scope="module")
def bib():
    server = start_bib_server()
    yield server
    server.stop()


def corpus(tmp_path: Path, n: int = 16) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:n]))
    return path


def config(tmp_path: Path, bib, *, label: str | None = None, max_concurrency: int = 8) -> Path:  # noqa: ANN001
    args = (f'{{ sources = ["crossref"], max_concurrency = {max_concurrency}, '
            f'client_options = {{ base_urls = {{ crossref = "{bib.base_url("crossref")}" }} }} }}')
    text = (f'bootstrap = 0\ntracking_uri = "none"\nshard_size = 4\nworkers = 2\n'
            f'[corpus]\npath = "{corpus(tmp_path)}"\nname = "svc"\n'
            f'[llm]\ncache_dir = "{tmp_path / "cache"}"\n'
            f'[llm.source_limits]\ncrossref = {{ rpm = {RPM} }}\n'
            f'[[systems]]\nname = "field_match"\nargs = {args}\n' + (f'label = "{label}"\n' if label else ""))
    path = tmp_path / f"run-{label or 'x'}-{max_concurrency}.toml"
    path.write_text(text)
    return path


def run(path: Path, tmp_path: Path, storage: str, snapshot: str, env: dict):  # noqa: ANN001
    return run_job("run_corpus.py", "--config", str(path), "--storage", str(tmp_path / storage),
                   "--snapshot", snapshot, cwd=tmp_path, env=env, timeout=400)  # fmt: skip


def outputs(storage: Path) -> list[dict]:
    (run_dir,) = [p for p in storage.iterdir() if (p / "manifest.json").exists()]
    return [row for f in sorted((run_dir / "shards").glob("*.parquet")) for row in pq.read_table(f).to_pylist()]


def max_in_window(stamps: list[float], window: float) -> int:
    stamps = sorted(stamps)
    return max(sum(1 for t in stamps[i:] if t < s + window) for i, s in enumerate(stamps))


def test_shared_limiter_cache_snapshot_scope_outage_and_resume(ray_head, bib, tmp_path):
    bib.reset_stats()
    path = config(tmp_path, bib)
    first = run(path, tmp_path, "runs_a", "2026-11-01", ray_head.env())
    assert first.returncode in (0, 3), first.stdout[-3000:] + first.stderr[-3000:]
    sent = bib.stats["crossref"].requests
    stamps = list(bib.stats["crossref"].stamps)
    assert sent >= 16  # a DOI lookup or a title search per entry at least
    # (a) one limiter for both workers: the server never sees more than the configured rate
    rate = RPM / 60.0
    burst = max(1.0, rate)  # the bucket holds one second of the rate
    assert max_in_window(stamps, 2.0) <= burst + 2 * rate + 1, sorted(stamps)
    span = max(stamps) - min(stamps)
    assert (sent - burst) / span <= rate * 1.15, (sent, span)

    # (b) the same snapshot again (fresh storage, same cache): no source request at all
    again = run(path, tmp_path, "runs_b", "2026-11-01", ray_head.env())
    assert again.returncode == first.returncode, again.stdout[-3000:] + again.stderr[-3000:]
    assert bib.stats["crossref"].requests == sent
    assert [o["label"] for o in outputs(tmp_path / "runs_b")] == [o["label"] for o in outputs(tmp_path / "runs_a")]

    # (c) a new snapshot date asks the source again
    fresh = run(path, tmp_path, "runs_c", "2026-12-01", ray_head.env())
    assert fresh.returncode == first.returncode, fresh.stdout[-3000:]
    assert bib.stats["crossref"].requests == 2 * sent

    # raising max_concurrency and renaming the label resume the first run (same run id, nothing redone)
    renamed = run(config(tmp_path, bib, label="renamed", max_concurrency=16), tmp_path, "runs_a", "2026-11-01",
                  ray_head.env())  # fmt: skip
    assert renamed.returncode == first.returncode, renamed.stdout[-3000:] + renamed.stderr[-3000:]
    assert len([p for p in (tmp_path / "runs_a").iterdir() if (p / "manifest.json").exists()]) == 1
    assert bib.stats["crossref"].requests == 2 * sent

    # (d) the source answers 503: UNCERTAIN with outage_sources, and the run is incomplete
    bib.inject("crossref", *[Fault("status", status=503)] * 2000)
    try:
        down = run(path, tmp_path, "runs_d", "2026-12-02", ray_head.env())
    finally:
        bib.faults.clear()
    assert down.returncode == 1, down.stdout[-3000:] + down.stderr[-3000:]
    rows = outputs(tmp_path / "runs_d")
    assert len(rows) == 16 and all(r["label"] == "UNCERTAIN" for r in rows if not r["error"])
    with_outage = [r for r in rows if "outage_sources" in json.loads(r["detail_json"] or "{}")]
    assert len(with_outage) >= 12 and all(json.loads(r["detail_json"])["outage_sources"] == ["crossref"]
                                         for r in with_outage)  # fmt: skip
    # the run's outage guard refused lookups once crossref was marked down: fewer than the 5 attempts of
    # each of the ~2 lookups per entry that an unguarded run sends
    assert any("outage guard" in (r["reason"] or "") for r in with_outage)
    assert bib.stats["crossref"].statuses[503] < 5 * 2 * 16


AGENT_ANSWER = json.dumps({"label": "VALID", "confidence": 0.9, "reason": "found in crossref"})


def test_llm_agentic_uses_the_runs_sources(ray_head, bib, tmp_path):
    bib.reset_stats()
    call = [{"id": "call_1", "name": "search_crossref", "arguments": json.dumps({"query": "Computing Machinery"})}]
    rules = [{"match": {"last_role": "tool"}, "response": {"text": AGENT_ANSWER, "model_id": "m"}},
             {"match": {"contains": "BibTeX entry"}, "response": {"text": None, "tool_calls": call}}]
    with replay_server(recordings=rules, tmp=tmp_path) as url:
        path = tmp_path / "agentic.toml"
        path.write_text(
            f'bootstrap = 0\ntracking_uri = "none"\nshard_size = 4\nworkers = 2\n'
            f'[corpus]\npath = "{corpus(tmp_path, 8)}"\nname = "svc"\n'
            f'[llm]\ncache_dir = "{tmp_path / "cache"}"\nbudget_usd = 100.0\nsources = ["crossref"]\n'
            f'[llm.source_base_urls]\ncrossref = "{bib.base_url("crossref")}"\n'
            f'[[systems]]\nname = "llm_agentic"\n'
            f'args = {{ model = "openai/agent", api_base = "{url}/v1", price_override = [1.0, 1.0] }}\n'
        )
        done = run_job("run_corpus.py", "--config", str(path), "--snapshot", "2026-11-01", cwd=tmp_path,
                       env=ray_head.env(), timeout=400)  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        rows = outputs(tmp_path / "runs")
        assert len(rows) == 8 and not any(r["error"] for r in rows), [r["error"] for r in rows]
        assert all(r["label"] == "VALID" and r["api_sources_queried"] == ["crossref"] for r in rows)
        # every entry searched crossref through the run's sources (the same query: the cache serves repeats)
        assert 0 < bib.stats["crossref"].requests <= 8 and server_stats(url)["requests"] == 16

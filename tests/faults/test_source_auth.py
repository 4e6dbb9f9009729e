"""A bibliographic source that refuses the run's credentials (401) stops the run with exit 2 naming the
source, records nothing failed and no outage, so the same command with the key fixed resumes it.
(Before: every 401 lookup was an outage, each item UNCERTAIN-by-outage, exit 1, and every resume
asked again.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.bib_server import Fault, start_bib_server
from tests.helpers.run_job import run_job

pytestmark = pytest.mark.integration
SAMPLE = Path(__file__).resolve().parents[2] / "corpora" / "samples" / "citations_sample.jsonl"


def test_a_source_answering_401_stops_the_run_with_exit_2_naming_it(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:8]))
    server = start_bib_server()
    args = f'{{ sources = ["crossref"], client_options = {{ base_urls = {{ crossref = "{server.base_url("crossref")}" }} }} }}'
    config = tmp_path / "auth.toml"
    config.write_text(f'bootstrap = 0\ntracking_uri = "none"\nshard_size = 4\nworkers = 1\nsnapshot = "2026-11-01"\n'
                      f'[corpus]\npath = "{corpus}"\nname = "auth"\n[llm]\ncache_dir = "{tmp_path / "cache"}"\n'
                      f'[[systems]]\nname = "field_match"\nargs = {args}\n')  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS" and not k.startswith("MLFLOW_")}
    store = tmp_path / "runs"
    try:
        server.inject("crossref", *[Fault("status", status=401, body=b'{"message":"invalid token"}')] * 500)
        refused = run_job("run_corpus.py", "--config", str(config), "--storage", str(store), cwd=tmp_path, env=env,
                          timeout=500)  # fmt: skip
        log = refused.stdout[-3000:] + refused.stderr[-3000:]
        assert refused.returncode == 2, log
        assert "refused the run's credentials: AuthError: crossref:" in refused.stderr and "HTTP 401" in refused.stderr
        (run_dir,) = [p for p in store.iterdir() if (p / "manifest.json").exists()]
        assert not list(run_dir.glob("failed/*")) and not list(run_dir.glob("shards/*.parquet")), log
        assert server.stats["crossref"].statuses[401] <= 2 * 8  # never retried: one answer per lookup at most
    finally:
        server.stop()

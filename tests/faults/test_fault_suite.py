"""The fault suite (heavy): 1,000 generated citations through `jobs/run_corpus.py` and
`llm_zero_shot` against the replay server, 20 % of requests faulted (429, 500, timeouts, HTTP
bodies cut halfway), and 2 % of the prompts down for the whole first submission (a partial
outage: exit 1, scores withheld, those items retried by the next submission). The run is
submitted again until complete; every count is asserted:
items in = rows out, no duplicate rows, provider requests = answers + retries, each prompt paid
at most once, no outage answer scored. `bench/bench_fault_suite.py` prints the same figures."""

from __future__ import annotations

import pytest

from bench.bench_fault_suite import FAULTS, SuiteSettings, run_fault_suite

pytestmark = pytest.mark.heavy


def test_a_thousand_items_through_a_fifth_of_requests_failing(ray_head, hallmark_data, tmp_path):
    settings = SuiteSettings(items=1000, fault_share=0.2, workers=2, shard_size=100, ray_address=ray_head.gcs_address)
    f = run_fault_suite(tmp_path, settings)
    summary = f.table()
    print(summary)
    # load held: every item has exactly one row, nothing lost, nothing doubled
    assert f.items_in == f.rows_out == 1000, summary
    assert f.duplicate_rows == 0, summary
    assert f.unmatched == 0, summary  # every prompt the system sent was one the recording answers
    # the faults happened, in every kind, near the configured share
    assert all(f.faults[kind] > 0 for kind in FAULTS), summary
    assert 0.15 < f.random_fault_share < 0.25, summary
    # provider requests = answers + retries; the stored outputs account for every request
    assert f.requests == f.answered + f.faults_total, summary
    assert f.client_attempts == f.requests, summary
    assert f.abandoned == f.faults["timeout"], summary  # the client gave up on every timeout: never paid
    # no repeated paid answer: each prompt got a whole answer once, and only the items' prompts did
    assert f.paid_twice == 0 and f.answered == f.answered_prompts == f.inputs_tried == 1000, summary
    # the partial outage of the first submission: those items, and only those, were asked again
    assert f.exit_codes[0] == 1 and f.outage_rows_per_submission[0] >= 5, summary
    assert f.answered_per_submission[1] == f.outage_rows_per_submission[0], summary
    assert f.shard_rows == 1000 + f.stored_outage_rows, summary  # superseded outage rows kept for audit
    # outages never scored: none left, the run complete and published, every answer a verdict
    assert f.exit_codes[-1] == 0 and f.outages_left == 0, summary
    assert f.status == "complete" and f.published, summary
    assert f.errored == 0 and f.num_scored + f.num_uncertain == 1000, summary

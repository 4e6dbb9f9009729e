"""Every bootstrapped metric's interval contains its point estimate, for a system with UNCERTAIN,
missing, errored and unparsed outputs and heavily tied confidences (like `prescreen`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scoring import score_citation_outputs
from scoring.citations.metrics import BATCH_METRICS
from storage.schemas import OUTPUT_SCHEMA, TRUTH_SCHEMA, table_from_rows

TYPES = ("fabricated_doi", "future_date", "wrong_venue", "chimeric_title")


def _system(seed: int = 7, n: int = 800):
    """A rule-like system: mostly VALID@0.6 (a tie spanning most ECE bins, right about half the
    time), a few confident flags, and UNCERTAIN / missing / errors / parse failures; truth order
    interleaves the strata, as a real corpus does."""
    rng = np.random.default_rng(seed)
    truth, outs = [], []
    for i in range(n):
        hallucinated = rng.random() < 0.5
        item = f"e{i:04d}"
        if hallucinated:
            t = TYPES[int(rng.integers(len(TYPES)))]
            truth.append(dict(item_id=item, label="HALLUCINATED", hallucination_type=t,
                              difficulty_tier=int(rng.integers(1, 4))))
        else:
            truth.append(dict(item_id=item, label="VALID"))
        u = rng.random()
        if u < 0.06:
            continue  # missing
        if u < 0.10:
            outs.append(dict(item_id=item, error="provider timeout", error_kind="provider"))
        elif u < 0.14:
            outs.append(dict(item_id=item, error="unparseable", error_kind="parse"))
        elif u < 0.22:
            outs.append(dict(item_id=item, label="UNCERTAIN", confidence=0.5))
        elif hallucinated and u < 0.45:
            outs.append(dict(item_id=item, label="HALLUCINATED", confidence=float(rng.choice([0.8, 0.95]))))
        elif not hallucinated and u < 0.25:
            outs.append(dict(item_id=item, label="HALLUCINATED", confidence=0.75))
        else:
            outs.append(dict(item_id=item, label="VALID", confidence=0.6))
    outputs = table_from_rows([dict(run_id="r", system="s", shard_id=0, **o) for o in outs], OUTPUT_SCHEMA)
    return table_from_rows(truth, TRUTH_SCHEMA), outputs


@pytest.mark.parametrize("mode", ["conservative", "aggressive"])
def test_every_ci_contains_its_point_estimate(mode):
    truth, outputs = _system()
    score = score_citation_outputs(truth, outputs, run_id="r", system="s", eval_mode=mode, bootstrap=1000)
    counts = score.counts
    assert counts["num_uncertain"] > 0 and counts["num_missing"] > 0
    assert counts["num_errors"] > 0 and counts["num_parse_failures"] > 0
    ms = score.modes[mode]
    checked = 0
    for k in BATCH_METRICS:
        point, (lo, hi) = ms.point[k], ms.ci[k]
        if math.isnan(point):
            continue
        assert lo <= point <= hi, (mode, k, point, lo, hi)
        checked += 1
    assert checked == len(BATCH_METRICS)  # ECE included: the system has > 2 distinct confidences


def test_bootstrap_ece_ignores_draw_order_within_ties():
    """A resample is a multiset: its ECE is the point ECE of those entries in truth order, whatever
    order the strata were drawn in (equal-mass bins cut through ties)."""
    from scoring.bootstrap import resample_chunks, strata_of
    from scoring.citations.entry_table import EntryTable
    from scoring.citations.metrics import ece_batch, point_metrics

    truth, outputs = _system()
    entries = EntryTable.from_tables(truth, outputs)
    draws, _ = next(resample_chunks(strata_of(entries.htype), 5, seed=42, chunk=5))
    for mode in ("conservative", "aggressive"):
        batch = ece_batch(entries.view(mode), entries.hallucinated, draws)
        for b in range(5):
            sub = entries.subset(np.sort(draws[b]))
            assert batch[b] == pytest.approx(point_metrics(sub, sub.view(mode))["ece"], abs=1e-12)

"""The report's figures render without matplotlib warnings for systems with nothing to draw."""

from __future__ import annotations

import warnings

from scoring import score_citation_outputs
from scoring.citations.report import write_run_report
from storage.schemas import OUTPUT_SCHEMA, TRUTH_SCHEMA, table_from_rows


def _score(system: str, label: str | None, **extra):
    truth = table_from_rows(
        [dict(item_id=f"h{i}", label="HALLUCINATED", hallucination_type="fabricated_doi", difficulty_tier=1)
         for i in range(5)] + [dict(item_id=f"v{i}", label="VALID") for i in range(5)],
        TRUTH_SCHEMA,
    )
    rows = [dict(item_id=i, label=label, confidence=0.7 if label else None, **extra)
            for i in [f"h{k}" for k in range(5)] + [f"v{k}" for k in range(5)]]
    outs = table_from_rows([dict(run_id="r", system=system, shard_id=0, **r) for r in rows], OUTPUT_SCHEMA)
    return score_citation_outputs(truth, outs, run_id="r", system=system, bootstrap=20)


def test_systems_with_no_flags_or_no_committed_entries_render_cleanly(tmp_path):
    """always-UNCERTAIN commits nothing (no risk–coverage curve, no PPV); always-VALID flags
    nothing (PPV undefined). Each is a legend entry, not a "No artists with labels found" warning,
    alone or together. An all-unparsed system errored on every output: it failed, and is no
    figure's entry (issue 10: never scored)."""
    uncertain = _score("always_uncertain", "UNCERTAIN")
    valid = _score("always_valid", "VALID")
    unparsed = _score("unparsed", None, error="bad json", error_kind="parse")
    assert unparsed.failed
    for i, scores in enumerate(([uncertain], [unparsed, uncertain], [valid, uncertain])):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            paths = write_run_report(tmp_path / f"r{i}", scores)
        pngs = [p for p in paths if p.suffix == ".png"]
        assert len(pngs) == 4
        assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000 for p in pngs)

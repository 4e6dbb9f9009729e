"""Issue 15: the corpus counts its injection draws (tried, rejected by the meaning check, re-drawn,
left unfilled) in each copy's truth, and the metrics report those counts."""

from __future__ import annotations

import itertools
import json

from corpora.papers.audit_corpus import build_paper_audit_corpus
from scoring.papers.metrics import injection_validity_rows
from tests.helpers.paths import REPO_ROOT

EXAMPLE = REPO_ROOT / "corpora" / "samples" / "papers" / "example-paper"


def test_draws_are_counted_and_every_invalid_draw_is_redrawn_or_unfilled():
    # A maths check that calls the first two maths edits "the same maths": those draws are invalid and re-drawn.
    calls = itertools.count()
    corpus = build_paper_audit_corpus([EXAMPLE], seed=7, check_compile=False,
                                      same_maths=lambda a, b: next(calls) < 2)
    extras = [json.loads(r["extra_json"]) for r in corpus.truth.to_pylist()]
    injected = [e for e in extras if not e["clean"]]
    total = dict.fromkeys(("attempts", "invalid", "redrawn", "unfilled"), 0)
    for e in injected:
        d = e["draws"]
        assert d["invalid"] == sum(e["invalid_draws"].values())
        assert d["redrawn"] + d["unfilled"] == d["invalid"]
        assert d["attempts"] >= len(e["injections"]) + d["invalid"]
        total = {k: total[k] + d[k] for k in total}
    # 2 maths draws, and (issue 21) 1 citation draw in the authors' own sentence, rejected by the label check
    assert total["invalid"] == 3 and total["redrawn"] == 3 and total["unfilled"] == 0
    assert sum(n for e in injected for why, n in e["invalid_draws"].items() if "a sentence about the authors" in why) == 1
    rows = {r["metric"]: r["value"] for r in injection_validity_rows(corpus.truth, "r")}
    assert rows["injection_attempts"] == total["attempts"] and rows["injection_invalid_draws"] == total["invalid"]
    assert rows["injection_redrawn"] == total["redrawn"] and rows["injection_unfilled_invalid"] == total["unfilled"]
    assert rows["injections_applied"] == sum(len(e["injections"]) for e in injected)
    assert rows["injection_cells_skipped"] == sum(len(e["skipped"]) for e in injected)
    assert rows["natural_copies"] == 0
    # every maths edit "the same": maths draws are rejected until the cell is left unfilled
    hopeless = build_paper_audit_corpus([EXAMPLE], seed=7, check_compile=False, same_maths=lambda a, b: True)
    unfilled = sum(json.loads(r["extra_json"]).get("draws", {}).get("unfilled", 0) for r in hopeless.truth.to_pylist())
    assert unfilled > 0

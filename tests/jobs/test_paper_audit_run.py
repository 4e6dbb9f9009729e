"""A paper audit through jobs/run_corpus.py: inject errors into the example paper, review every
copy with the mechanical reviewer and an LLM reviewer (replay server on 127.0.0.1), adjudicate
with a judge (another replay server), store verdicts and score detection."""

from __future__ import annotations

import json

import pytest

from storage.store import Store
from tests.helpers.paths import REPO_ROOT
from tests.helpers.replay_server import replay_server
from tests.helpers.run_job import run_job

pytestmark = pytest.mark.heavy
REVIEW = "Summary: a short paper.\n\n- The reported total in the results table does not add up.\n- Eq. 2 has a sign error.\n"
# The judge's evidence must be a passage of the review (issue 15), so it quotes the review.
JUDGE = ('{"detected": true, "confidence": 0.9, "evidence": "The reported total in the results table does not add up",'
         ' "reason": "matches"}')


def test_paper_audit_injects_reviews_adjudicates_and_scores(ray_head, tmp_path):
    with replay_server("--default-content", REVIEW) as reviewer, replay_server("--default-content", JUDGE) as judge:
        config = tmp_path / "papers.toml"
        config.write_text(
            'audit = "paper_audit"\nsnapshot = "2026-11-29"\nshard_size = 1\nworkers = 2\nbootstrap = 50\n'
            'tracking_uri = "none"\n[corpus]\nname = "example_papers"\n'
            f'[papers]\npaths = ["{REPO_ROOT}/corpora/samples/papers/example-paper"]\nseed = 7\n'
            f'[adjudication]\npanel = [{{ model = "openai/judge", api_base = "{judge}/v1", family = "replay" }}]\n'
            '[[systems]]\nname = "paper_reviewer_mechanical"\n'
            f'[[systems]]\nname = "paper_reviewer_llm"\nargs = {{ model = "openai/reviewer", api_base = "{reviewer}/v1" }}\n'
        )
        result = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env())
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Paper audit" in result.stdout
    store = Store(str(tmp_path / "runs"))
    runs = {p.name.split("__")[1].split("@")[0]: p.name for p in (tmp_path / "runs").iterdir() if "@" in p.name}
    assert set(runs) == {"paper_reviewer_mechanical", "paper_reviewer_llm"}
    for system, run_id in runs.items():
        outputs = store.read_outputs(run_id)
        assert sorted(outputs.column("item_id").to_pylist()) == [f"example-paper/copy-{k}" for k in range(4)]
        verdicts = store.read_table(run_id, "verdicts").to_pylist()
        injections = [v for v in verdicts if v["unit_kind"] == "injection"]
        assert len(injections) == 12  # 3 injected copies x 4 error types
        details = [json.loads(v["detail_json"]) for v in injections]
        assert sorted((d["error_type"], d["severity"]) for d in details) == sorted(
            (t, s) for t in ("citations", "general", "mathematics", "numerics") for s in ("S1", "S2", "S3")
        )
        metrics = {(r["metric"], r["stratum"]): r["value"] for r in store.read_table(run_id, "metrics").to_pylist()}
        scores = json.loads((tmp_path / "runs" / run_id / "scores.json").read_text())
        assert scores["num_injections"] == 12
        if system == "paper_reviewer_llm":
            assert all(v["outcome"] == "detected" for v in injections)  # the judge says so every time
            assert metrics[("detection_rate", "all")] == 1.0
            votes = json.loads(injections[0]["votes_json"])
            assert votes and votes[0]["judge"] == "openai/judge"
    # Controls (issue 15): the same always-yes judge cannot make a review with no findings detect
    # anything, since its evidence is not in that review; the report sets them beside the reviewers.
    report = next((tmp_path / "runs").rglob("paper_report.md")).read_text()
    assert "## Controls" in report and "AUDIT INVALID" not in report.split("## Glossary")[0]
    controls = [line for line in report.splitlines() if line.startswith("| paper_reviewer_llm | 1.000")]
    assert controls and controls[0].split(" | ")[2] in ("0.000", "n/a")  # null control: nothing detected

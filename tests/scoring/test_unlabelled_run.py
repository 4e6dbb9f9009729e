"""End to end through jobs/run_corpus.py: a corpus without labels (a .bib file, a blind split)
finishes with valid JSON everywhere and a report of what the systems said; a system whose every
output errored is reported failed, unscored (issue 10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.paths import HALLMARK_DATA
from tests.helpers.run_job import run_job

pytestmark = pytest.mark.heavy  # end-to-end runs through jobs/run_corpus.py

SNAPSHOT = "2026-11-29"
BIB = r"""
@article{smith2020,
  title = {Deep Learning for Citation Verification},
  author = {Smith, John and Doe, Jane},
  journal = {Journal of Testing},
  year = {2020},
  doi = {10.1234/jt.2020.001}
}
@inproceedings{future2099,
  title = {A Paper From the Future},
  author = {Lastname, Firstname and Doe, John},
  booktitle = {Proceedings of the Future},
  year = {2099}
}
@article{bare,
  title = {Missing Almost Everything}
}
"""


def strict_loads(text: str):
    def bad(token: str):
        raise ValueError(f"not JSON: {token}")
    return json.loads(text, parse_constant=bad)


def _run_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if (p / "manifest.json").exists())


def _check_stored(store: Path) -> tuple[dict, list[dict], str]:
    (run,) = _run_dirs(store)
    scores = strict_loads((run / "scores.json").read_text())
    assert strict_loads((run / "status.json").read_text())["status"] == "complete"
    (report,) = [p for p in (store / "reports").iterdir() if p.is_dir()]
    board = strict_loads((report / "leaderboard.json").read_text())
    strict_loads((report / "run_summary.json").read_text())
    page = (report / "report.html").read_text()
    assert "data:image/png;base64," in page and "not applicable: no labels" in page
    return scores, board, page


def test_bibtex_corpus_without_labels(ray_head, tmp_path):
    bib = tmp_path / "my_refs.bib"
    bib.write_text(BIB)
    result = run_job("run_corpus.py", "--corpus", str(bib), "--systems", "prescreen", "--snapshot", SNAPSHOT,
                     "--bootstrap", "50", "--storage", str(tmp_path / "runs"),
                     "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db", cwd=tmp_path, env=ray_head.env())  # fmt: skip
    assert result.returncode in (0, 3), result.stdout[-3000:] + result.stderr[-3000:]
    assert "metrics not applicable" in result.stdout and "Traceback" not in result.stderr
    scores, board, _ = _check_stored(tmp_path / "runs")
    assert scores["labelled"] is False and scores["detection_rate"] is None
    assert scores["null_reasons"]["detection_rate"] == "not applicable: no labels"
    said = scores["outputs"]["labels"]
    assert sum(said.values()) + scores["outputs"]["num_errors"] == 3
    assert said["HALLUCINATED"] >= 1  # the year-2099 entry
    assert scores["outputs"]["subtests"]["year_plausible"]["fail"] >= 1
    (row,) = board
    assert row["state"] == "no labels" and row["said_hallucinated"] == said["HALLUCINATED"]

    from mlflow.tracking import MlflowClient

    from storage.tracking import SYSTEM_RUNS

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    (mlrun,) = client.search_runs([client.get_experiment_by_name("scrutineer/my_refs").experiment_id],
                                  filter_string=SYSTEM_RUNS)  # fmt: skip
    assert mlrun.info.status == "FINISHED" and "detection_rate" not in mlrun.data.metrics
    assert mlrun.data.metrics["said_hallucinated"] == said["HALLUCINATED"]


@pytest.mark.heavy
def test_blind_hallmark_split(ray_head, tmp_path):
    blind = tmp_path / "dev_public_blind.jsonl"  # the first 40 entries of the real blind split
    blind.write_text("".join((HALLMARK_DATA / "dev_public_blind.jsonl").read_text().splitlines(True)[:40]))
    result = run_job("run_corpus.py", "--corpus", str(blind), "--systems", "prescreen", "--snapshot", SNAPSHOT,
                     "--bootstrap", "0", "--storage", str(tmp_path / "runs"), "--tracking-uri", "none",
                     cwd=tmp_path, env=ray_head.env())  # fmt: skip
    assert result.returncode in (0, 3), result.stdout[-3000:] + result.stderr[-3000:]
    scores, board, _ = _check_stored(tmp_path / "runs")
    assert scores["labelled"] is False and sum(scores["outputs"]["labels"].values()) == 40


def test_system_whose_every_output_errored_is_failed(ray_head, tmp_path):
    corpus = tmp_path / "broken.jsonl"  # every line unreadable: prescreen can only return errors
    corpus.write_text('{"bibtex_key": "a", "fields": \n["x"]\n{"bibtex_key": "c", "bibtex_type": "article"}\n')
    result = run_job("run_corpus.py", "--corpus", str(corpus), "--systems", "prescreen", "--snapshot", SNAPSHOT,
                     "--bootstrap", "0", "--storage", str(tmp_path / "runs"),
                     "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db", cwd=tmp_path, env=ray_head.env())  # fmt: skip
    assert result.returncode == 3, result.stdout[-3000:] + result.stderr[-3000:]
    assert "FAILED: prescreen: every output errored, not scored; first error:" in result.stdout
    (run,) = _run_dirs(tmp_path / "runs")
    scores = strict_loads((run / "scores.json").read_text())
    assert scores["failed"] is True and "invalid JSON" in scores["first_error"]
    assert "detection_rate" not in scores
    status = strict_loads((run / "status.json").read_text())
    assert status["status"] == "failed" and status["first_error"] == scores["first_error"]
    (report,) = [p for p in (tmp_path / "runs" / "reports").iterdir() if p.is_dir()]
    (row,) = strict_loads((report / "leaderboard.json").read_text())
    assert row["state"] == "failed" and row["first_error"] == scores["first_error"]

    from mlflow.tracking import MlflowClient

    from storage.tracking import SYSTEM_RUNS

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    (mlrun,) = client.search_runs([client.get_experiment_by_name("scrutineer/broken").experiment_id],
                                  filter_string=SYSTEM_RUNS)  # fmt: skip
    assert mlrun.info.status == "FAILED" and set(mlrun.data.metrics) <= {"work_seconds"}  # no score, only its work time

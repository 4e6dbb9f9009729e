"""Where a run's report is published: one folder per (corpus, snapshot, run set), never outside the
storage root, whatever the corpus name says (issue 10)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from storage.run_publication import SystemSummary, publish_report, report_key, safe_key_part


@dataclass
class FakeRun:  # what publish_report reads of cluster.run_plan.PlannedRun
    run_id: str
    manifest: dict


def _run(run_id: str, corpus: str = "dev_public", snapshot: str = "2026-11-29") -> FakeRun:
    return FakeRun(run_id, {"corpus": {"name": corpus, "items": 3}, "snapshot": snapshot})


def _publish(tmp_path: Path, runs: list[FakeRun], text: str) -> tuple[list[str], str]:
    from storage.store import Store

    report_dir = tmp_path / f"work-{text}"
    report_dir.mkdir()
    (report_dir / "report.md").write_text(text)
    systems = [SystemSummary("s", r.run_id, "complete", {"detection_rate": 0.5}, 3, 0, 0, "x") for r in runs]
    return publish_report(Store(str(tmp_path / "store")), systems, runs, report_dir, [report_dir / "report.md"],
                          ("detection_rate",))  # fmt: skip


def test_reports_of_different_run_sets_do_not_overwrite(tmp_path):
    uris_a, _ = _publish(tmp_path, [_run("dev__prescreen__2026-11-29")], "A")
    uris_b, _ = _publish(tmp_path, [_run("dev__always_valid__2026-11-29")], "B")
    assert uris_a != uris_b
    assert Path(uris_a[0]).read_text() == "A" and Path(uris_b[0]).read_text() == "B"
    assert Path(uris_a[0]).parent.name.startswith("dev_public__2026-11-29__")
    latest = json.loads((tmp_path / "store" / "reports" / "dev_public__2026-11-29__latest.json").read_text())
    assert latest["report"] == report_key([_run("dev__always_valid__2026-11-29")])
    # the same run set again (a resumed run) goes to the same folder
    assert _publish(tmp_path, [_run("dev__prescreen__2026-11-29")], "A2")[0] == uris_a


def test_corpus_name_cannot_escape_the_storage_root(tmp_path):
    evil = _run("r1", corpus="../../../escaped", snapshot="../../x/y")
    key = report_key([evil])
    assert ".." not in key.split("/") and key.count("/") == 1
    uris, summary_uri = _publish(tmp_path, [evil], "E")
    root = (tmp_path / "store").resolve()
    for uri in [*uris, summary_uri]:
        assert Path(uri).resolve().is_relative_to(root)
    assert not (tmp_path / "escaped").exists() and not list(tmp_path.glob("escaped*"))
    written = [p for p in tmp_path.rglob("*") if p.is_file() and "work-" not in str(p)]
    assert all(p.resolve().is_relative_to(root) for p in written)


def test_safe_key_part():
    assert safe_key_part("..") == "unnamed"
    assert safe_key_part("my refs/../x") == "my_refs_.._x"  # ".." inside a name is harmless
    assert safe_key_part("dev_public@1.0") == "dev_public@1.0"

"""The run manifest is a typed record: the planner builds a `RunManifest` and stores its JSON;
manifests written before (plain dicts, older fields) still read."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from cluster import run_plan
from cluster.run_config import RunConfig
from storage.code_revision import CodeRevision
from storage.records import SystemSpec
from storage.redaction import redact
from storage.result_json import result_json
from storage.run_record import RECORD_VERSION, RunManifest, RunRecord, RunRecordError
from storage.schemas import SCHEMA_VERSION
from storage.store import Store

# A manifest as `cluster/run_plan.py` wrote it before the typed record (commit c3cb568), byte for byte.
WRITTEN_BEFORE = {
    "code": {"commit": "c3cb568" + "0" * 33, "dirty": False, "label": "c3cb568" + "0" * 33, "source_hash": None},
    "code_revision": "c3cb568" + "0" * 33,
    "config": {"audit": "citations", "shard_size": 25},
    "corpus": {"items": 2, "name": "tiny", "path": "tiny.jsonl", "split": None, "unreadable": 0, "version": "abc"},
    "num_shards": 1,
    "packages": {"litellm": "1.0", "pint": None, "rapidfuzz": "3.0", "sympy": "1.13"},
    "provenance": {},
    "record_version": 1,
    "run_id": "tiny@abc__prescreen@0123456789ab__2026-11-01",
    "schema_version": "1",
    "shard_size": 25,
    "snapshot": "2026-11-01",
    "system": {"args": {"workers": 2}, "config_hash": "0123456789ab", "label": None, "name": "prescreen"},
}
# Older still: no record version, code or packages; the system's runtime args listed in it.
OLDEST = {"run_id": "r1", "corpus": {"name": "tiny", "version": 7}, "snapshot": "2026-01-01",
          "system": {"name": "field_match", "args": {"max_concurrency": 4, "x": 1}, "runtime_args": ["max_concurrency"]},
          "code_revision": "src-1234"}  # fmt: skip


def test_a_manifest_written_before_reads_and_stores_the_same_json() -> None:
    manifest = RunManifest.from_stored(json.loads(json.dumps(WRITTEN_BEFORE)))
    assert manifest.system.name == "prescreen" and manifest.corpus.unreadable == 0 and manifest.shard_size == 25
    assert json.dumps(manifest.to_stored(), sort_keys=True) == json.dumps(WRITTEN_BEFORE, sort_keys=True)


def test_the_oldest_manifest_still_loads_with_its_extra_keys() -> None:
    manifest = RunManifest.from_stored(OLDEST)
    assert manifest.corpus.version == "7" and manifest.code is None and manifest.packages is None
    assert manifest.to_stored()["system"]["runtime_args"] == ["max_concurrency"]  # kept, not dropped
    record = RunRecord.from_stored(manifest, None, storage_uri="/x")
    assert record.system.answer_args == {"x": 1} and record.system.runtime_args == {"max_concurrency": 4}
    assert record.code.label == "src-1234" and record == RunRecord.from_stored(OLDEST, None, storage_uri="/x")


@pytest.mark.parametrize(("manifest", "named"), [
    ({k: v for k, v in WRITTEN_BEFORE.items() if k != "snapshot"}, "'snapshot'"),
    ({**WRITTEN_BEFORE, "system": {"name": "x"}}, "'system' lacks"),
    ({**WRITTEN_BEFORE, "shard_size": "many"}, "shard_size"),
    ({**WRITTEN_BEFORE, "record_version": 99}, "record_version 99"),
])  # fmt: skip
def test_a_broken_manifest_names_the_file_and_field(manifest: dict, named: str) -> None:
    with pytest.raises(RunRecordError, match="runs/r/manifest.json") as raised:
        RunManifest.from_stored(manifest, "runs/r/manifest.json")
    assert named in str(raised.value)


class _Corpus:
    name, version, split, errors = "tiny", "abc", None, []
    items = pa.table({"item_id": ["a", "b"]})
    truth = pa.table({"item_id": ["a", "b"]})
    num_items = 2


def test_the_planner_stores_the_typed_manifest(tmp_path, monkeypatch) -> None:
    revision = CodeRevision(commit="f" * 40, dirty=True, source_hash=None)
    monkeypatch.setattr(run_plan, "current_revision", lambda: revision)  # no git subprocess in a unit test
    monkeypatch.setattr(run_plan, "answer_packages", lambda: {"sympy": "1.13", "litellm": None})
    config = RunConfig(storage=str(tmp_path), snapshot="2026-11-01", shard_size=1)
    spec = SystemSpec("always_valid", {"confidence": 0.5}, "av")
    plan = run_plan.plan_run(config, _Corpus(), [spec], make_context=lambda run_id: None)
    (run,) = plan.runs
    stored = Store(str(tmp_path)).read_json(run.run_id, "manifest.json")
    assert stored == run.manifest and run.record.to_stored() == stored
    assert set(stored) == set(WRITTEN_BEFORE)  # the fields a run stored before the typed record, no more
    assert stored["system"] == {"name": "always_valid", "args": {"confidence": 0.5}, "label": "av",
                                "config_hash": spec.config_hash()}  # fmt: skip
    assert stored["corpus"] == {"name": "tiny", "version": "abc", "split": None, "path": config.corpus.path,
                                "items": 2, "unreadable": 0}  # fmt: skip
    assert stored["code"]["label"] == stored["code_revision"] == "f" * 40 + "+dirty"
    assert stored["num_shards"] == 2 and len(plan.tasks) == 2
    # byte for byte what the untyped planner wrote (commit c3cb568), types included ("1", not 1)
    before = redact({"run_id": run.run_id, "schema_version": SCHEMA_VERSION, "corpus": stored["corpus"],
                     "system": {**spec.to_dict(), "config_hash": spec.config_hash()}, "snapshot": "2026-11-01",
                     "shard_size": 1, "num_shards": 2, "code_revision": revision.label, "record_version": RECORD_VERSION,
                     "code": revision.to_dict(), "packages": {"sympy": "1.13", "litellm": None},
                     "config": config.model_dump(), "provenance": {}})  # fmt: skip
    assert result_json(stored, sort_keys=True) == result_json(before, sort_keys=True)
    assert isinstance(run.spec, SystemSpec)

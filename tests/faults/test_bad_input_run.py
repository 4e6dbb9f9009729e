"""End to end through jobs/run_corpus.py: a corpus with bad lines, a duplicate key and a key spelled
like a synthetic id is audited item by item; no shard fails and no good item is lost."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from cluster.run_config import DEFAULT_CORPUS
from storage.store import Store
from tests.helpers.run_job import run_job

pytestmark = pytest.mark.heavy


@pytest.mark.parametrize(
    ("line3", "reason3"),
    [
        # before: one non-UTF-8 line lost the whole file (exit 2)
        (b'{"bibtex_key": "latin1", "fields": {"title": "M\xfcller"}}\n', "not UTF-8"),
        # before: bad line 8 kept its key g4, good line 9 reused it: that shard failed every attempt
        (b"{oops\n", "invalid JSON"),
    ],
)
def test_bad_lines_become_errored_items_and_every_good_item_is_audited_once(
    ray_head, tmp_path, line3, reason3
):
    sample = [json.loads(line) for line in DEFAULT_CORPUS.read_text().splitlines()[:6]]

    def line(i: int, key: str) -> bytes:
        return json.dumps({**sample[i], "bibtex_key": key}).encode() + b"\n"

    corpus = tmp_path / "e2e.jsonl"
    corpus.write_bytes(
        line(0, "g1")
        + line(1, "g2")
        + line3
        + line(2, "g3")
        + line(3, "e2e.jsonl:3")  # a real key spelled like line 3's synthetic id
        + line(4, "g1")  # line 6: duplicate key
        + b'["not", "an", "object"]\n'  # line 7
        + json.dumps({"bibtex_key": "g4", "fields": {}, "label": "MAYBE"}).encode()
        + b"\n"  # line 8, key reused below
        + line(5, "g4")
    )
    storage = tmp_path / "runs"
    result = run_job("run_corpus.py", "--corpus", str(corpus), "--systems", "prescreen", "--storage", str(storage),
                     "--tracking-uri", "none", "--shard-size", "3", "--bootstrap", "0", cwd=tmp_path,
                     env=ray_head.env())  # fmt: skip
    assert result.returncode == 3, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "two outputs" not in result.stdout + result.stderr
    for expected in (f"{corpus}:3: {reason3}", f"{corpus}:6: duplicate bibtex_key 'g1' (first on line 1)",
                     f"{corpus}:7: expected a JSON object", f"{corpus}:8: field 'label' must be one of"):  # fmt: skip
        assert expected in result.stderr, result.stderr[-3000:]

    (run,) = [p for p in storage.iterdir() if (p / "manifest.json").exists()]
    assert json.loads((run / "status.json").read_text())["status"] == "complete"
    outputs = Store(str(storage)).read_outputs(run.name).to_pylist()
    counts = Counter(o["item_id"] for o in outputs)
    assert all(n == 1 for n in counts.values()), counts
    good = {"g1", "g2", "g3", "e2e.jsonl:3", "g4"}
    errored = {"e2e.jsonl:3#2", "e2e.jsonl:6", "e2e.jsonl:7", "e2e.jsonl:8"}
    assert set(counts) == good | errored
    by_id = {o["item_id"]: o for o in outputs}
    assert all(by_id[i]["error"] is None and by_id[i]["label"] for i in good)
    assert all(by_id[i]["error_kind"] == "input" and by_id[i]["label"] is None for i in errored)
    lines = {"e2e.jsonl:3#2": 3, "e2e.jsonl:6": 6, "e2e.jsonl:7": 7, "e2e.jsonl:8": 8}
    assert all(
        by_id[i]["error"].startswith(f"e2e.jsonl:{n}: ") for i, n in lines.items()
    )  # file and line named

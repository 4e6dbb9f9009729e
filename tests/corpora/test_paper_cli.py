"""jobs/inject_papers.py on the bundled example paper, as a subprocess."""

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from corpora.papers.validator import compiles, tex_engine
from tests.helpers.paths import REPO_ROOT

EXAMPLE = REPO_ROOT / "corpora" / "samples" / "papers" / "example-paper"


@pytest.mark.integration
def test_cli_writes_items_truth_and_copies(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "jobs/inject_papers.py", str(EXAMPLE), "--seed", "3", "--out", str(out),
                           "--write-copies"], cwd=REPO_ROOT, capture_output=True, text=True, check=True)  # fmt: skip
    assert "4 copies, 12 injections, 0 skipped" in done.stdout
    items, truth = pq.read_table(out / "items.parquet"), pq.read_table(out / "truth.parquet")
    assert items.column("item_id").to_pylist() == [f"example-paper/copy-{k}" for k in range(4)]
    for row in truth.to_pylist()[1:]:
        for inj in json.loads(row["extra_json"])["injections"]:
            copy = out / "copies" / "example-paper" / row["item_id"].split("/")[1] / inj["file"]
            assert copy.read_text(encoding="utf-8")[inj["start"] : inj["end"]] == inj["injected"]
    assert (out / "copies/example-paper/copy-0/refs.bib").read_bytes() == (EXAMPLE / "refs.bib").read_bytes()
    assert (out / "copies/example-paper/copy-0/main.tex").read_bytes() == (EXAMPLE / "main.tex").read_bytes()


def test_compile_check_needs_an_engine():
    if tex_engine() is not None:
        assert compiles({"main.tex": (EXAMPLE / "main.tex").read_text()}, "main.tex") in (True, False)
        return
    try:
        compiles({"main.tex": ""}, "main.tex")
    except RuntimeError as exc:
        assert "no TeX engine" in str(exc)
    else:
        raise AssertionError("compiles() ran without a TeX engine")

"""A corpus with nothing to audit stops jobs/run_corpus.py before Ray starts: exit 2, the file named
(its main(argv) in this process: the unit tier's guard fails the test if it starts anything)."""

from __future__ import annotations

import pytest

from tests.helpers.run_job import run_job_in_process


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.jsonl", b"", "no corpus lines"),
        ("blank.jsonl", b"\n   \n\t\n", "no corpus lines"),
        ("empty.bib", b"% nothing but a comment\n", "no BibTeX entries"),
    ],
)
def test_corpus_without_items_is_a_clear_bad_input_error(tmp_path, monkeypatch, name, content, message):
    corpus = tmp_path / name
    corpus.write_bytes(content)
    result = run_job_in_process("run_corpus.py", "--corpus", str(corpus), "--systems", "prescreen", "--storage",
                                str(tmp_path / "runs"), "--tracking-uri", "none", cwd=tmp_path,
                                monkeypatch=monkeypatch)  # fmt: skip
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stderr.startswith(f"error: {corpus}: {message}"), result.stderr[-2000:]
    assert "Traceback" not in result.stderr and not (tmp_path / "runs").exists()

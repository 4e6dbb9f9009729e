"""The one JSONL reader: (line number, object) per non-blank line; a bad line is named by file and line."""

import pytest

from corpora.citations.citeintegrity_suite import load_suite_instances
from corpora.citations.real_reference import references_from_hallmark
from jobs.llm_replay_server import load_recordings
from scoring.citations.hallmark_jsonl import PredictionFileError, read_entries
from storage.jsonl import JsonlError, iter_jsonl, read_jsonl


def _write(tmp_path, data: bytes):
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    return path


def test_objects_with_their_line_numbers_blank_lines_skipped(tmp_path):
    path = _write(tmp_path, b'{"a": 1}\n\n  \n{"b": "\xc3\xa9"}\r\n')
    assert list(read_jsonl(path)) == [(1, {"a": 1}), (4, {"b": "é"})]
    assert list(iter_jsonl(['{"a": 1}', "", '{"c": 2}'], "x")) == [(1, {"a": 1}), (3, {"c": 2})]


@pytest.mark.parametrize(("line", "reason"), [
    (b"{oops", "invalid JSON: Expecting property name enclosed in double quotes at column 2"),
    (b"[1, 2]", "expected a JSON object, got list"),
    (b"null", "expected a JSON object, got NoneType"),
    (b'{"a": "\xff"}', "not UTF-8 text (byte 8 of the line)"),
    (b'{"n": ' + b"1" * 5000 + b"}", "invalid JSON: Exceeds the limit"),
])  # fmt: skip
def test_a_bad_line_names_file_line_and_reason(tmp_path, line, reason):
    path = _write(tmp_path, b'{"ok": 1}\n' + line + b'\n{"never": "read"}\n')
    rows = read_jsonl(path)
    assert next(rows) == (1, {"ok": 1})
    with pytest.raises(JsonlError) as caught:
        next(rows)
    assert (caught.value.path, caught.value.line) == (str(path), 2)
    assert str(caught.value).startswith(f"{path}:2: {reason}")


def test_a_line_over_the_cap_is_refused_before_it_is_read_whole(tmp_path):
    path = _write(tmp_path, b'{"a": 1}\n{"b": "' + b"x" * 100 + b'"}\n')
    with pytest.raises(JsonlError, match=r":2: line longer than 50 bytes"):
        list(read_jsonl(path, max_line_bytes=50))
    assert len(list(read_jsonl(path, max_line_bytes=200))) == 2


def test_the_callers_name_file_and_line(tmp_path):
    # these readers raised a bare JSONDecodeError (no file, no line) or a KeyError before
    path = _write(tmp_path, b'\n{broken\n{"bibtex_key": "k", "label": "VALID", "fields": {}}\n')
    for read in (references_from_hallmark, load_suite_instances, load_recordings):
        with pytest.raises(ValueError, match=rf"{path}:2: invalid JSON"):
            read([path]) if read is load_recordings else read(path)
    with pytest.raises(PredictionFileError, match=rf"{path}:2: invalid JSON"):
        read_entries(path)

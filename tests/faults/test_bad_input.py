"""Bad corpus input costs the bad line or entry only: it becomes an errored item with its own id,
named by file, line and reason, and every good line is still loaded under its key."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pytest

from corpora import load_corpus
from corpora.citations.bibtex import load_bibtex
from corpora.citations.hallmark import MAX_LINE_BYTES, load_hallmark_jsonl
from corpora.loaded_corpus import LoadedCorpus, unique_item_ids
from storage.schemas import ITEM_SCHEMA, TRUTH_SCHEMA, table_from_rows


def good(key: str, title: str = "A title", label: str | None = "VALID") -> bytes:
    record = {"bibtex_key": key, "bibtex_type": "article", "fields": {"title": title, "year": "2020"}}
    if label:
        record["label"] = label
    return json.dumps(record).encode() + b"\n"


def write(path: Path, *lines: bytes) -> Path:
    path.write_bytes(b"".join(lines))
    return path


def by_id(corpus: LoadedCorpus) -> dict[str, dict]:
    ids = corpus.items.column("item_id").to_pylist()
    assert len(ids) == len(set(ids)), f"repeated item ids: {ids}"
    return {r["item_id"]: r for r in corpus.items.to_pylist()}


# --- item ids are unique by construction -------------------------------------------------------


def test_good_line_after_errored_line_with_same_key_is_loaded(tmp_path):
    path = write(
        tmp_path / "c.jsonl",
        b'{"bibtex_key": "a", "fields": {"title": "x"}, "label": "MAYBE"}\n',
        good("a"),
        good("b"),
    )
    corpus = load_hallmark_jsonl(path)
    items = by_id(corpus)
    assert items["a"]["load_error"] is None and items["a"]["source_line"] == 2
    assert items["c.jsonl:1"]["load_error"].startswith("c.jsonl:1: field 'label' must be one of")
    assert corpus.truth.column("item_id").to_pylist() == ["a", "b"]
    assert [(e.line, e.item_id) for e in corpus.errors] == [(1, "c.jsonl:1")]


def test_real_key_spelled_like_a_synthetic_id_keeps_it(tmp_path):
    path = write(tmp_path / "c.jsonl", b"{not json\n", good("c.jsonl:1"), good("c.jsonl:1#2"), good("z"))
    items = by_id(load_hallmark_jsonl(path))
    assert items["c.jsonl:1"]["load_error"] is None and items["c.jsonl:1"]["source_line"] == 2
    assert items["c.jsonl:1#2"]["load_error"] is None and items["c.jsonl:1#2"]["source_line"] == 3
    assert (
        items["c.jsonl:1#3"]["load_error"].startswith("c.jsonl:1: invalid JSON")
        and items["c.jsonl:1#3"]["source_line"] == 1
    )
    assert len(items) == 4


def test_duplicate_key_is_an_errored_item_naming_the_first_line(tmp_path):
    path = write(tmp_path / "c.jsonl", good("a", "first"), good("b"), good("a", "second"))
    corpus = load_hallmark_jsonl(path)
    items = by_id(corpus)
    assert json.loads(items["a"]["payload_json"])["fields"]["title"] == "first"
    assert items["c.jsonl:3"]["load_error"] == "c.jsonl:3: duplicate bibtex_key 'a' (first on line 1)"
    assert corpus.truth.column("item_id").to_pylist() == ["a", "b"]  # one truth row per id
    assert [str(e) for e in corpus.errors] == [f"{path}:3: duplicate bibtex_key 'a' (first on line 1)"]


def test_random_mixes_of_good_bad_and_repeated_keys_never_repeat_an_id(tmp_path):
    rng = random.Random(11)
    pool = ["a", "b", "c", "m.jsonl:1", "m.jsonl:2", "m.jsonl:3", "m.jsonl:4#2"]
    for trial in range(200):
        lines, first_good = [], {}
        for number in range(1, rng.randint(1, 12) + 1):
            key, kind = rng.choice(pool), rng.choice(["good", "good", "badlabel", "badjson", "nokey"])
            if kind == "good":
                lines.append(good(key))
                first_good.setdefault(key, number)
            elif kind == "badlabel":
                lines.append(json.dumps({"bibtex_key": key, "fields": {}, "label": "?"}).encode() + b"\n")
            else:
                lines.append(b"{oops\n" if kind == "badjson" else b'{"fields": {}}\n')
        items = by_id(load_hallmark_jsonl(write(tmp_path / "m.jsonl", *lines)))
        assert len(items) == len(lines), trial
        for key, number in first_good.items():  # every first good occurrence is audited under its key
            assert items[key]["load_error"] is None and items[key]["source_line"] == number, (trial, key)


def test_unique_item_ids_suffixes_deterministically():
    ids, dups = unique_item_ids(
        ["x", None, "x", "f:2"], [True, False, True, True], ["f:1", "f:2", "f:3", "f:4"]
    )
    assert ids == ["x", "f:2#2", "f:3", "f:2"] and dups == {2: 0}


def test_loaded_corpus_refuses_repeated_ids():
    rows = [{"item_id": "a", "kind": "citation", "corpus": "c", "payload_json": "{}"}] * 2
    with pytest.raises(ValueError, match=r"item ids must be unique, repeated: \['a'\]"):
        LoadedCorpus("c", "v", None, table_from_rows(rows, ITEM_SCHEMA), table_from_rows([], TRUTH_SCHEMA))
    assert isinstance(table_from_rows(rows[:1], ITEM_SCHEMA), pa.Table)


# --- one bad line costs one item ---------------------------------------------------------------


def test_non_utf8_line_is_one_errored_item(tmp_path):
    path = write(
        tmp_path / "c.jsonl", good("a"), b'{"bibtex_key": "b", "fields": {"title": "M\xfcller"}}\n', good("c")
    )
    corpus = load_hallmark_jsonl(path)
    items = by_id(corpus)
    assert items["a"]["load_error"] is None and items["c"]["load_error"] is None
    assert (
        items["c.jsonl:2"]["load_error"]
        == "c.jsonl:2: not UTF-8: byte 0xfc at column 43 cannot be decoded (invalid start byte)"
    )
    assert str(corpus.errors[0]).startswith(f"{path}:2: not UTF-8")


def test_bad_lines_each_get_a_file_line_reason(tmp_path):
    deep = b"[" * 100_000 + b"]" * 100_000
    path = write(
        tmp_path / "c.jsonl",
        good("ok1"),
        b'["not", "an", "object"]\n',
        b"null\n",
        json.dumps({"bibtex_key": "num", "fields": {"title": 12}}).encode() + b"\n",
        json.dumps({"bibtex_key": "typ", "fields": {"title": "t"}, "bibtex_type": 3}).encode() + b"\n",
        deep + b"\n",
        b'{"bibtex_key": "big", "fields": {"year": ' + b"9" * 5000 + b"}}\n",
        b'{"bibtex_key": "sur", "fields": {"title": "\\ud800"}}\n',
        b'{"bibtex_key": "tier", "fields": {}, "label": "HALLUCINATED", "difficulty_tier": true}\n',
        json.dumps({"bibtex_key": "yr", "fields": {"title": "t", "year": 2020}}).encode() + b"\n",
        good("ok2"),
    )
    corpus = load_hallmark_jsonl(path)
    reasons = {e.line: e.reason for e in corpus.errors}
    assert reasons[2] == "expected a JSON object, got list"
    assert reasons[3] == "expected a JSON object, got NoneType"
    assert reasons[4] == "field 'fields.title' must be text, got number"
    assert reasons[5] == "field 'bibtex_type' has the wrong type: number"
    assert reasons[6].startswith("invalid JSON")
    assert reasons[7].startswith("invalid JSON") and "digits" in reasons[7]
    assert reasons[8] == "contains an unpaired surrogate escape: not valid Unicode text"
    assert reasons[9] == "field 'difficulty_tier' must be 1, 2 or 3, got True"
    assert sorted(reasons) == [2, 3, 4, 5, 6, 7, 8, 9]
    items = by_id(corpus)
    assert {i for i, r in items.items() if r["load_error"] is None} == {"ok1", "ok2", "yr"}
    assert corpus.items.num_rows == 11


def test_very_long_line_is_refused_unread(tmp_path):
    long = b'{"bibtex_key": "long", "fields": {"title": "' + b"x" * (MAX_LINE_BYTES + 10) + b'"}}\n'
    path = write(tmp_path / "c.jsonl", good("a"), long, good("b"))
    corpus = load_hallmark_jsonl(path)
    items = by_id(corpus)
    assert (
        items["c.jsonl:2"]["load_error"]
        == f"c.jsonl:2: line too long: {len(long) - 1} bytes, the limit is {MAX_LINE_BYTES}"
    )
    assert items["b"]["source_line"] == 3 and items["b"]["load_error"] is None


def test_byte_order_mark_and_crlf_are_read(tmp_path):
    path = write(tmp_path / "c.jsonl", b"\xef\xbb\xbf" + good("a").replace(b"\n", b"\r\n"), good("b"))
    corpus = load_hallmark_jsonl(path)
    assert not corpus.errors and sorted(by_id(corpus)) == ["a", "b"]


@pytest.mark.parametrize("content", [b"", b"\n\n  \n\t\n", good("__canary__x")])
def test_empty_corpus_file_is_a_clear_error(tmp_path, content):
    path = write(tmp_path / "empty.jsonl", content)
    with pytest.raises(ValueError, match=rf"{path}: no corpus lines"):
        load_corpus(str(path))


# --- BibTeX ------------------------------------------------------------------------------------


BIB_GOOD = b"@article{good1,\n  title = {One},\n}\n\n"


def test_bibtex_bad_bytes_error_their_entry_only(tmp_path):
    path = write(
        tmp_path / "r.bib",
        b"% comment by M\xfcller\n",
        BIB_GOOD,
        b"@article{bad,\n  author = {M\xfcller},\n  title = {Two},\n}\n\n",
        b"@article{good2,\n  title = {Caf\xc3\xa9},\n}\n",
    )
    corpus = load_bibtex(path)
    items = by_id(corpus)
    assert json.loads(items["good2"]["payload_json"])["fields"]["title"] == "Café"
    assert items["good1"]["load_error"] is None
    assert (
        items["bad"]["load_error"]
        == "r.bib:6: line 7 is not UTF-8: byte 0xfc at column 14 cannot be decoded (invalid start byte)"
    )
    assert (
        items["bad"]["source_line"] == 6 and items["bad"]["payload_json"] == "{}"
    )  # nothing replaced is audited
    comment = [e for e in corpus.errors if e.item_id is None]
    assert [(e.line, e.reason.endswith("(outside any entry: ignored)")) for e in comment] == [(1, True)]


def test_bibtex_entry_without_key_gets_a_synthetic_id(tmp_path):
    path = write(
        tmp_path / "r.bib",
        b"@article{,\n  title = {No key},\n}\n\n",
        BIB_GOOD,
        b"@article{,\n  title = {No key either},\n}\n\n",
        b"@misc{r.bib:1,\n  title = {Spelled like a synthetic id},\n}\n\n",
        b"@article{good1,\n  title = {Again},\n}\n",
    )
    corpus = load_bibtex(path)
    items = by_id(corpus)
    assert "" not in items
    assert (
        items["r.bib:1"]["load_error"] is None and items["r.bib:1"]["source_line"] == 13
    )  # the real key wins
    assert items["r.bib:1#2"]["load_error"] == "r.bib:1: entry has no citation key"
    assert items["r.bib:9"]["load_error"] == "r.bib:9: entry has no citation key"
    assert items["r.bib:17"]["load_error"] == "r.bib:17: duplicate citation key 'good1' (first on line 5)"
    assert len(items) == 5


@pytest.mark.parametrize("content", [b"", b"% only a comment\n\n"])
def test_bibtex_without_entries_is_a_clear_error(tmp_path, content):
    path = write(tmp_path / "empty.bib", content)
    with pytest.raises(ValueError, match=rf"{path}: no BibTeX entries"):
        load_corpus(str(path))

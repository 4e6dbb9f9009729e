"""The response cache every node shares: answers travel through the run's storage.

Each node keeps its own diskcache directory (`clients/response_cache.py`), so on a cluster a lost
(spot) node, or a worker or driver killed with SIGKILL, would lose the answers it paid for. So
answers go to the run's storage (`file://` or `s3://`) twice:

* as they arrive: an `AnswerFlusher` beside each shard (and each driver phase) exports the answers
  the process paid for, a batch file every `batch` answers or `interval_s` seconds, whichever comes
  first, and when it closes. A killed process loses only the calls still on the wire and the
  answers of the last unfinished batch (at most `interval_s` old):

      <run_id>/answers/shard-00042.part-<digest>.jsonl.gz

* when the shard finishes: the cache entries the shard wrote or read (LLM answers and source
  responses; the cache records the keys it touches, so the export costs the shard's own entries
  only) in one file, after which the shard's own batch files are deleted (they hold nothing more):

      <run_id>/answers/shard-00042.jsonl.gz      one JSON line per entry: {"key", "value"}

What the driver pays for itself (the LLM proposer's answers while the corpus is built, the judges'
while outputs are adjudicated) goes the same way, into a folder of the storage keyed by what
identifies that work (`export_answers` / `import_answers` and an `AnswerFlusher`, wired by
`cluster/services_builder.py: driver_answers`). When a worker starts a shard it imports the run's
exported answers it has not imported yet (batch files of killed attempts included) into its local
cache, so a node that never saw them answers from them without a network call. Keys are the cache's
stored keys, exactly (model, server, weights, messages, parameters; request and snapshot scope for
sources): an import adds what the run already paid for and never overwrites a local entry. The
export is per run: a run under another storage root starts from its own answers only.

Every file is written whole (temp file + rename locally, one PUT on S3) and named by its content,
so no writer replaces another's answers. An import trusts no file: one that is torn (a cut gzip
stream), too large once inflated, or holds a line that is not a well-formed entry is skipped
whole and named (`ImportedAnswers.skipped`, and a warning), and the other files are imported.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import posixpath
import re
import threading
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import get_type_hints

import diskcache
from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic needs it before Python 3.12

from clients.llm_request import LLMResponse
from clients.process_state import PROCESS_STATE
from clients.response_cache import (
    CachedResponse,
    drain_touched,
    drain_written,
    record_touched,
    record_written,
    stop_recording_written,
    wait_written,
    wake_written,
)
from storage.jsonl import iter_jsonl
from storage.store import Store

__all__ = ["ANSWERS_FOLDER", "AnswerFlusher", "ImportedAnswers", "export_answers", "export_shard_answers",
           "import_answers", "import_run_answers", "record_touched", "shard_answers_name"]  # fmt: skip

log = logging.getLogger(__name__)

ANSWERS_FOLDER = "answers"
_SUFFIX = ".jsonl.gz"
_PART = ".part-"
"""Batch files are `<name>.part-<digest>.jsonl.gz`: a '.' no final export name (`<name>` or
`<name>-<digest>`) has there, so deleting a flusher's batches never touches a final file."""
_FIELDS = {f.name for f in fields(CachedResponse)}
# A stored value is a CachedResponse as a dict: validated field by field, strictly (no coercion).
_VALUE = TypeAdapter(TypedDict("StoredValue", get_type_hints(CachedResponse)))
_KEY = re.compile(r"^[0-9a-f]{64}$")  # every stored key is a sha256 hex digest
_LLM_CONTENT_TYPE = "application/vnd.scrutineer.llm-response+json"  # clients/llm_cache.py
MAX_FILE_BYTES = 256 * 2**20
"""Largest answer file read, compressed or inflated (a shard's answers are a few MB): a bigger one
is skipped and named, never inflated into memory."""

# Answer files this process already imported, per (store, run, cache directory): a file is named
# with its size and mtime, so a shard re-exported after a rerun is imported again.
_LOCK = threading.Lock()


@dataclass(frozen=True)
class ImportedAnswers:
    """What an import did: entries added to the local cache, and the files it would not read."""

    added: int
    skipped: tuple[str, ...] = ()
    """One line per file skipped: `path[:line]: reason`."""


def shard_answers_name(shard_id: int) -> str:
    return f"shard-{shard_id:05d}"


def _lines(raw: diskcache.Cache, keys: Iterable[str]) -> list[str]:
    lines = []
    for key in keys:
        value = raw.get(key)
        if isinstance(value, dict):
            lines.append(json.dumps({"key": key, "value": value}, sort_keys=True, ensure_ascii=False))
    return lines


def _pack(lines: list[str]) -> bytes:
    return gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0)


def _encode(directories: Iterable[str | Path]) -> tuple[bytes, int]:
    lines: list[str] = []
    for directory in dict.fromkeys(os.path.abspath(d) for d in directories):
        keys = drain_touched(directory)
        if not keys:
            continue
        with diskcache.Cache(directory) as raw:
            lines += _lines(raw, sorted(keys))
    return _pack(lines), len(lines)


def export_shard_answers(store: Store, run_id: str, shard_id: int, directories: Iterable[str | Path]) -> int:
    """Write the entries touched in `directories` since the last export (recording started with
    `record_touched`) as the shard's answer file; returns the count (no file when there is none)."""
    data, count = _encode(directories)
    if count:
        store.write_file(run_id, f"{ANSWERS_FOLDER}/{shard_answers_name(shard_id)}{_SUFFIX}", data)
    return count


def export_answers(store: Store, folder: str, name: str, directories: Iterable[str | Path]) -> int:
    """Write the entries touched in `directories` since the last drain as `<folder>/<name>-<digest>`
    (`folder` relative to the storage root); returns the count. The digest of the content names the
    file, so an export never replaces an earlier one (a resumed phase that stops again adds to what
    the stopped one exported) and the same answers exported twice are one file."""
    data, count = _encode(directories)
    if count:
        digest = hashlib.sha256(data).hexdigest()[:16]
        store.write_file(folder, f"{name}-{digest}{_SUFFIX}", data)
    return count


class AnswerFlusher:
    """Exports the answers this process writes into `directories` while they arrive.

    A background thread writes `<folder>/<name>.part-<digest>.jsonl.gz` (folder relative to the
    storage root) each time `batch` answers are pending or the oldest pending one is `interval_s`
    old, whichever comes first, and once more on `close`. A failed write (storage down) keeps the
    answers pending for the next try. `discard_parts` deletes the batch files once a final export
    holds their answers. One flusher per cache directory at a time.

        with AnswerFlusher(store, "run/answers", "shard-00042", [cache_dir]) as flusher:
            ...                       # answers paid here reach storage within interval_s
        export_shard_answers(...)     # the shard's whole file
        flusher.discard_parts()
    """

    def __init__(self, store: Store, folder: str, name: str, directories: Iterable[str | Path], *,
                 batch: int = 8, interval_s: float = 0.25) -> None:  # fmt: skip
        if batch < 1 or interval_s <= 0:
            raise ValueError(f"batch must be >= 1 and interval_s > 0, got {batch}, {interval_s}")
        self.store, self.folder, self.name = store, folder.strip("/"), name
        self.directories = list(dict.fromkeys(os.path.abspath(d) for d in directories))
        self.batch, self.interval_s = batch, interval_s
        self.parts: list[str] = []
        """Paths of the batch files written."""
        self.exported = 0
        """Answers written to storage so far."""
        self.failures = 0
        """Batch writes that failed (their answers were kept for the next one)."""
        self._pending: dict[str, list[str]] = {d: [] for d in self.directories}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._caches: dict[str, diskcache.Cache] = {}
        self._flush_lock = threading.Lock()

    def start(self) -> AnswerFlusher:
        for i, directory in enumerate(self.directories):
            try:
                record_written(directory)
            except RuntimeError:
                for started in self.directories[:i]:
                    stop_recording_written(started)
                raise
        self._thread = threading.Thread(target=self._run, name=f"answer-flusher-{self.name}", daemon=True)
        self._thread.start()
        return self

    def __enter__(self) -> AnswerFlusher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            # Wake at `batch` answers; otherwise after `interval_s`, counted from the first pending one.
            retrying = any(self._pending.values())  # a failed write's answers wait one interval
            if not retrying and not wait_written(self.directories, 1, self.interval_s, self._stop):
                continue
            first = time.monotonic()
            while not self._stop.is_set():
                left = self.interval_s - (time.monotonic() - first)
                if left <= 0 or wait_written(self.directories, self.batch, left, self._stop) >= self.batch:
                    break
            self.flush()

    def flush(self) -> int:
        """Write what is pending now as one batch file; returns the answers written (0 on failure)."""
        with self._flush_lock:
            for directory in self.directories:
                self._pending[directory] += drain_written(directory)
            lines: list[str] = []
            for directory, keys in self._pending.items():
                if keys:
                    if directory not in self._caches:
                        self._caches[directory] = diskcache.Cache(directory)
                    lines += _lines(self._caches[directory], dict.fromkeys(keys))
            if not lines:
                return 0
            data = _pack(lines)
            relative = f"{self.name}{_PART}{hashlib.sha256(data).hexdigest()[:16]}{_SUFFIX}"
            try:
                path = self.store.write_file(self.folder, relative, data)
            except Exception as exc:  # storage down: keep the answers, try again with the next batch
                self.failures += 1
                log.warning("answers not exported yet (%d kept for the next try): %s", len(lines), exc)
                return 0
            for keys in self._pending.values():
                keys.clear()
            self.parts.append(path)
            self.exported += len(lines)
            return len(lines)

    def close(self) -> int:
        """Stop the thread and write what is still pending; returns the answers exported in all."""
        self._stop.set()
        wake_written()
        if self._thread is not None:
            self._thread.join()
        try:
            self.flush()
        finally:
            for directory in self.directories:
                stop_recording_written(directory)
            for cache in self._caches.values():
                cache.close()
            self._caches.clear()
        return self.exported

    def discard_parts(self) -> None:
        """Delete the batch files written (call only once a final export holds their answers)."""
        for path in self.parts:
            try:
                self.store.fs.delete_file(path)
            except OSError as exc:  # left behind: a duplicate of the final file, harmless
                log.info("batch file %s not deleted: %s", path, exc)
        self.parts.clear()


def _inflate(data: bytes) -> bytes:
    """The gzip member's content; ValueError when it is torn or inflates past MAX_FILE_BYTES."""
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(data, MAX_FILE_BYTES + 1)
    except zlib.error as exc:
        raise ValueError(f"not a gzip stream ({exc})") from exc
    if len(out) > MAX_FILE_BYTES or inflater.unconsumed_tail:
        raise ValueError(f"inflates past {MAX_FILE_BYTES} bytes")
    if not inflater.eof:
        raise ValueError(f"torn: the gzip stream stops after {len(data)} bytes")
    return out


def _decode(path: str, data: bytes) -> list[tuple[str, dict]]:
    """Every entry of an answer file; ValueError naming `path:line` and the field on the first bad one."""
    try:
        text = _inflate(data).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: {exc}") from exc
    entries = []
    for number, entry in iter_jsonl(text.splitlines(), path):
        key, value = entry.get("key"), entry.get("value")
        if not isinstance(key, str) or not _KEY.match(key):
            raise ValueError(f"{path}:{number}: 'key' is not a stored key (64 hex digits)")
        if not isinstance(value, dict) or set(value) != _FIELDS:
            raise ValueError(f"{path}:{number}: 'value' must have exactly the fields {', '.join(sorted(_FIELDS))}")
        try:
            _VALUE.validate_python(value, strict=True)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise ValueError(f"{path}:{number}: 'value.{field}': {first['msg']}") from exc
        if value["content_type"] == _LLM_CONTENT_TYPE:  # a model answer the gateway must be able to read
            try:
                LLMResponse.from_json(json.loads(value["text"]))
            except (json.JSONDecodeError, TypeError, AttributeError) as exc:
                raise ValueError(f"{path}:{number}: 'value.text' is not a model answer ({exc})") from exc
        entries.append((key, value))
    return entries


def import_run_answers(store: Store, run_id: str, directory: str | Path) -> ImportedAnswers:
    """Add the run's exported answers not imported yet into the cache at `directory` (entries
    already in the local cache are kept as they are)."""
    return import_answers(store, posixpath.join(run_id, ANSWERS_FOLDER), directory)


def import_answers(store: Store, folder: str, directory: str | Path) -> ImportedAnswers:
    """Add the answers exported under `folder` (relative to the storage root) not imported yet into
    the cache at `directory` (local entries are kept). A file that cannot be read as answers is
    skipped whole, named in the result and in a warning; a file deleted since the listing (a batch
    file its shard's final file replaced) is passed over."""
    directory = os.path.abspath(directory)
    parent, name = posixpath.split(folder.strip("/"))
    files = [f for f in store.list_files(parent, name) if f[0].endswith(_SUFFIX)]
    with _LOCK:
        new = [f for f in files if (store.uri, folder, directory, *f) not in PROCESS_STATE.imported_answer_files]
    added, skipped = 0, []
    if not new:
        return ImportedAnswers(0)
    with diskcache.Cache(directory) as raw:
        for path, size, mtime in new:
            try:
                if size > MAX_FILE_BYTES:
                    raise ValueError(f"{path}: {size} bytes, larger than {MAX_FILE_BYTES}")
                entries = _decode(path, store.read_bytes(path))
            except FileNotFoundError:
                continue
            except ValueError as exc:
                skipped.append(str(exc))
                log.warning("answer file skipped: %s", exc)
            else:
                for key, value in entries:
                    added += bool(raw.add(key, value))  # add: never replaces a local entry
            with _LOCK:  # a skipped file is named once per process, not at every shard
                PROCESS_STATE.imported_answer_files.add((store.uri, folder, directory, path, size, mtime))
    return ImportedAnswers(added, tuple(skipped))

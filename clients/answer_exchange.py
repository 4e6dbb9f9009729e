"""The response cache every node shares: answers travel through the run's storage.

Each node keeps its own diskcache directory (`clients/response_cache.py`), so on a cluster a lost
(spot) node would lose the answers it paid for. Instead, when a shard finishes, its worker exports
the cache entries the shard wrote or read (LLM answers and source responses; the cache records the
keys it touches, so the export costs the shard's own entries only) to

    <run_id>/answers/shard-00042.jsonl.gz      one JSON line per entry: {"key", "value"}

in the run's storage (`file://` or `s3://`), next to its outputs. What the driver pays for itself (the
LLM proposer's answers while the corpus is built, the judges' while outputs are adjudicated) goes
the same way, into a folder of the storage keyed by what identifies that work
(`export_answers` / `import_answers`, wired by `cluster/run_services.py: driver_answers`). When a worker starts a shard it
imports the run's exported answers it has not imported yet into its local cache, so a node that
never saw them answers from them without a network call. Keys are the cache's stored keys, exactly
(model, server, weights, messages, parameters; request and snapshot scope for sources): an import
adds what the run already paid for and never overwrites a local entry. The export is per run: a run
under another storage root starts from its own answers only.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import posixpath
import threading
from collections.abc import Iterable
from dataclasses import fields
from pathlib import Path

import diskcache

from clients.response_cache import CachedResponse, drain_touched, record_touched
from storage.store import Store

__all__ = ["ANSWERS_FOLDER", "export_answers", "export_shard_answers", "import_answers", "import_run_answers",
           "record_touched"]

ANSWERS_FOLDER = "answers"
_SUFFIX = ".jsonl.gz"
_FIELDS = {f.name for f in fields(CachedResponse)}

# Answer files this process already imported, per (store, run, cache directory): a file is named
# with its size and mtime, so a shard re-exported after a rerun is imported again.
_IMPORTED: set[tuple[str, str, str, str, int, int]] = set()
_LOCK = threading.Lock()


def _encode(directories: Iterable[str | Path]) -> tuple[bytes, int]:
    lines: list[str] = []
    for directory in dict.fromkeys(os.path.abspath(d) for d in directories):
        keys = drain_touched(directory)
        if not keys:
            continue
        with diskcache.Cache(directory) as raw:
            for key in sorted(keys):
                value = raw.get(key)
                if isinstance(value, dict):
                    lines.append(json.dumps({"key": key, "value": value}, sort_keys=True, ensure_ascii=False))
    return gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0), len(lines)


def export_shard_answers(store: Store, run_id: str, shard_id: int, directories: Iterable[str | Path]) -> int:
    """Write the entries touched in `directories` since the last export (recording started with
    `record_touched`) as the shard's answer file; returns the count (no file when there is none)."""
    data, count = _encode(directories)
    if count:
        store.write_file(run_id, f"{ANSWERS_FOLDER}/shard-{shard_id:05d}{_SUFFIX}", data)
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


def _decode(path: str, data: bytes) -> list[tuple[str, dict]]:
    entries = []
    for number, line in enumerate(gzip.decompress(data).decode().splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from exc
        key, value = entry.get("key"), entry.get("value")
        if not isinstance(key, str) or not isinstance(value, dict) or set(value) != _FIELDS:
            wanted = ", ".join(sorted(_FIELDS))
            raise ValueError(f"{path}:{number}: expected {{'key': str, 'value': {{{wanted}}}}}")
        entries.append((key, value))
    return entries


def import_run_answers(store: Store, run_id: str, directory: str | Path) -> int:
    """Add the run's exported answers not imported yet into the cache at `directory`; returns the
    number of entries added (entries already in the local cache are kept as they are)."""
    return import_answers(store, posixpath.join(run_id, ANSWERS_FOLDER), directory)


def import_answers(store: Store, folder: str, directory: str | Path) -> int:
    """Add the answers exported under `folder` (relative to the storage root) not imported yet into
    the cache at `directory`; returns the number of entries added (local entries are kept)."""
    directory = os.path.abspath(directory)
    parent, name = posixpath.split(folder.strip("/"))
    files = [f for f in store.list_files(parent, name) if f[0].endswith(_SUFFIX)]
    with _LOCK:
        new = [f for f in files if (store.uri, folder, directory, *f) not in _IMPORTED]
    added = 0
    if not new:
        return 0
    with diskcache.Cache(directory) as raw:
        for path, size, mtime in new:
            for key, value in _decode(path, store.read_bytes(path)):
                added += bool(raw.add(key, value))  # add: never replaces a local entry
            with _LOCK:
                _IMPORTED.add((store.uri, folder, directory, path, size, mtime))
    return added

"""Run identity: (corpus@version, system@config-hash, snapshot date).

Computed the same way from a config before a run and from a stored manifest after it; it ignores
everything that does not change the answers (workers, shard size, retries, timeouts), so
submitting the same run again resumes it.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._@-]+")


def make_run_id(corpus: str, corpus_version: str, system_label: str, config_hash: str, snapshot: str) -> str:
    parts = [f"{corpus}@{corpus_version}", f"{system_label}@{config_hash}", snapshot]
    return "__".join(_UNSAFE.sub("-", p) for p in parts)

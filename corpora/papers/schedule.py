"""The seeded severity-balanced three-copy schedule (appendix C.1).

Every paper has a clean copy 0 and injected copies 1-3. For each error type a permutation of
(S1, S2, S3) is drawn independently, so down each type's column every severity appears exactly
once and the four severities of one copy are independent. The draw depends only on
(seed, paper_id), so adding papers never changes another paper's schedule.
"""

from __future__ import annotations

import hashlib
import random

from corpora.papers.subtypes import ERROR_TYPES, SEVERITIES

N_INJECTED_COPIES = 3


def paper_rng(seed: int, paper_id: str, *salt: str) -> random.Random:
    """A random stream for one paper (and optional purpose), stable across runs and machines."""
    digest = hashlib.sha256("\x1f".join([str(seed), paper_id, *salt]).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def severity_schedule(paper_id: str, seed: int) -> dict[int, dict[str, str]]:
    """{copy 1..3: {error_type: severity}}: each (type, severity) exactly once per paper."""
    schedule: dict[int, dict[str, str]] = {k: {} for k in range(1, N_INJECTED_COPIES + 1)}
    for error_type in ERROR_TYPES:
        perm = list(SEVERITIES)
        paper_rng(seed, paper_id, "schedule", error_type).shuffle(perm)
        for k, severity in enumerate(perm, start=1):
            schedule[k][error_type] = severity
    return schedule

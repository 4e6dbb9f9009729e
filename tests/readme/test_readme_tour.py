"""The README's tour, top to bottom, in one fresh clone: each local command runs after the ones above
it, as a reader would type them, and none is refused because of what an earlier one left behind
(the same storage with another shard size, a drift on a run of today)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.readme.test_readme_commands import COMMANDS, README, clone, readme_commands, run_in  # noqa: F401

SET_UP = "pip install -e . && python jobs/run_corpus.py"
DATED = "python jobs/run_corpus.py --snapshot 2026-11-01"
DRIFT = "python jobs/drift.py RUN_ID --storage ./runs"
COMPARE = "python jobs/compare_runs.py BEFORE_RUN_ID AFTER_RUN_ID --storage ./runs"
SHARDED = "python jobs/run_corpus.py --config configs/sample.toml --workers 4 --shard-size 50 --storage runs/sharded"
TOUR = [SET_UP, SHARDED, DATED, DRIFT, COMPARE]


def _field_match_runs(storage: Path) -> dict[str, str]:
    """snapshot -> run id of the field_match runs under `storage`."""
    runs = {}
    for manifest in storage.glob("*/manifest.json"):
        record = json.loads(manifest.read_text(encoding="utf-8"))
        if record.get("system", {}).get("name") == "field_match":
            runs[str(record["snapshot"])] = manifest.parent.name
    return runs


def test_tour_commands_are_in_the_readme_in_this_order():
    found = readme_commands(README.read_text(encoding="utf-8"))
    positions = [found.index(c) for c in TOUR]
    assert positions == sorted(positions), list(zip(TOUR, positions, strict=True))
    assert all(c in COMMANDS for c in TOUR)


@pytest.mark.integration  # in CI's tier: the path a new user takes, in one clone (3 runs, a drift, a compare)
def test_readme_tour_runs_top_to_bottom(clone: Path):  # noqa: F811
    for command in TOUR:
        shell = command.removeprefix("pip install -e . && ")  # the clone uses this suite's environment
        if "RUN_ID" in command:
            runs = _field_match_runs(clone / "runs")
            today = sorted(s for s in runs if s != "2026-11-01")
            assert "2026-11-01" in runs and today, f"field_match runs under runs/ by snapshot: {runs}"
            shell = (shell.replace("BEFORE_RUN_ID", runs["2026-11-01"]).replace("AFTER_RUN_ID", runs[today[-1]])
                     .replace("RUN_ID", runs["2026-11-01"]))
        result = run_in(clone, shell, timeout=900)
        output = result.stdout + result.stderr
        assert result.returncode == 0, f"{shell}\nexit {result.returncode}\n{output[-3000:]}"
        assert not re.search(r"(?i)refused|already on snapshot", output), f"{shell}\n{output[-3000:]}"

"""Progress lines: uncertain and outage counts as shards finish, one last line, resumed runs."""

from __future__ import annotations

import io

from cluster.progress import Progress


def test_uncertain_and_outage_counts_show_as_shards_finish():
    out = io.StringIO()
    progress = Progress(50, 2, every_s=0.0, stream=out)
    progress.shard_done(25, errored=1, uncertain=20, outage=18)
    first = out.getvalue().strip().splitlines()[-1]
    assert "25/50 items" in first and "errored items 1" in first
    assert "uncertain 20" in first and "outage 18" in first
    progress.shard_done(25, errored=0, uncertain=5, outage=5)
    assert "uncertain 25 · outage 23" in out.getvalue().strip().splitlines()[-1]


def test_last_line_is_printed_once():
    out = io.StringIO()
    progress = Progress(50, 2, every_s=0.0, stream=out)
    progress.shard_done(25, 0)
    progress.shard_done(25, 0)
    progress.maybe_print(force=True)  # the runner's closing line: nothing new since the last one
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 2 and lines[-1].startswith("[progress] 50/50 items")
    assert len([line for line in lines if "50/50" in line]) == 1


def test_fully_resumed_run_says_so_without_rate_or_eta():
    out = io.StringIO()
    progress = Progress(100, 4, skipped_items=100, skipped_shards=4, stream=out)
    progress.maybe_print(force=True)
    line = out.getvalue().strip()
    assert line == "[progress] all 4 shards already done (resumed): 100 items"
    assert "items/s" not in line and "ETA ?" not in line

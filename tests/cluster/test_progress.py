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


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_eta_clock_starts_at_the_first_finished_shard_not_at_ray_start_up():
    """A 12 s run once showed a first ETA of 562 s: Ray's start-up counted as time spent on items."""
    clock, out = FakeClock(), io.StringIO()
    progress = Progress(100, 4, every_s=0.0, stream=out, clock=clock)
    clock.now += 60.0  # Ray starts workers, imports systems: no item is done yet
    progress.shard_done(25, errored=0)
    first = out.getvalue().strip().splitlines()[-1]
    assert "rate estimating · ETA estimating" in first and "items/s" not in first
    clock.now += 5.0  # a shard every 5 s from here: 5 items/s
    progress.shard_done(25, errored=0)
    second = out.getvalue().strip().splitlines()[-1]
    assert "5.0 items/s · ETA 10s" in second, second  # 50 items left at 5 items/s, not 50 / (50 / 65 s)
    clock.now += 5.0
    progress.shard_done(25, errored=0)
    assert "5.0 items/s · ETA 5s" in out.getvalue().strip().splitlines()[-1]
    clock.now += 5.0
    progress.shard_done(25, errored=0)
    assert "ETA 0s" in out.getvalue().strip().splitlines()[-1]


def test_shards_finishing_together_leave_the_rate_estimating():
    clock, out = FakeClock(), io.StringIO()
    progress = Progress(100, 4, every_s=0.0, stream=out, clock=clock)
    progress.shard_done(25, errored=0)
    progress.shard_done(25, errored=0)  # same instant: no time has passed to measure a rate over
    assert progress.rate is None
    assert "ETA estimating" in out.getvalue().strip().splitlines()[-1]


def test_resumed_shards_do_not_count_toward_the_rate():
    clock, out = FakeClock(), io.StringIO()
    progress = Progress(100, 4, skipped_items=50, skipped_shards=2, every_s=0.0, stream=out, clock=clock)
    progress.maybe_print(force=True)
    assert "50/100 items" in out.getvalue() and "ETA estimating" in out.getvalue()
    clock.now += 30.0
    progress.shard_done(25, errored=0)
    clock.now += 10.0
    progress.shard_done(20, errored=0)
    assert progress.rate == 2.0 and "ETA 2s" in out.getvalue().strip().splitlines()[-1]

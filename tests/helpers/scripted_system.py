"""A scripted System registered in the real registry (cf. inspect_ai's mockllm), for tests that
cross every room: it answers deterministically, logs every call, and can be told to be slow, to
raise on some items, or to kill its worker process once."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

from storage.records import Item, Output
from verifiers.registry import system
from verifiers.system import RunContext


class ScriptedSystem:
    def __init__(self, call_log: str | None = None, delay_s: float = 0.0, raise_on: tuple[str, ...] = (),
                 die_once_on: str | None = None, die_marker: str | None = None,
                 outage_on: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.name = "scripted"
        self.call_log = call_log
        self.delay_s = delay_s
        self.raise_on = set(raise_on)
        self.die_once_on = die_once_on
        self.die_marker = die_marker
        self.outage_on = set(outage_on)

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        outputs = []
        for item in items:
            if self.call_log:
                with open(self.call_log, "a") as log:
                    log.write(f"{os.getpid()} {item.item_id}\n")
            if item.item_id == self.die_once_on and self.die_marker and not Path(self.die_marker).exists():
                Path(self.die_marker).write_text("died")
                os._exit(1)  # a worker crash, not an exception
            if item.item_id in self.raise_on:
                raise RuntimeError(f"scripted failure on {item.item_id}")
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if item.load_error:
                outputs.append(Output.failed(item.item_id, item.load_error, "input"))
                continue
            if item.item_id in self.outage_on:  # as a verifier does when its source is down
                outputs.append(Output(item_id=item.item_id, label="UNCERTAIN", confidence=0.5, reason="crossref down",
                                      detail={"outage_sources": ["crossref"]}))  # fmt: skip
                continue
            digest = int(hashlib.sha256(item.item_id.encode()).hexdigest(), 16)
            label = "HALLUCINATED" if digest % 3 == 0 else "VALID"
            outputs.append(Output(item_id=item.item_id, label=label, confidence=0.5 + (digest % 50) / 100, reason="scripted"))
        return outputs


@system("scripted", description="test system: deterministic answers, call log, injectable failures")
def build_scripted(**kwargs) -> ScriptedSystem:
    for key in ("raise_on", "outage_on"):
        if key in kwargs:
            kwargs[key] = tuple(kwargs[key])
    return ScriptedSystem(**kwargs)

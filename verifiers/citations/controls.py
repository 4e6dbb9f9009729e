"""Trivial control systems: the floor every real verifier must beat."""

from __future__ import annotations

from storage.records import Item, Output
from verifiers.registry import system
from verifiers.system import RunContext


class AlwaysValid:
    """Says VALID for every well-formed entry: DR 0, FPR 0, the degenerate baseline."""

    def __init__(self, confidence: float = 0.5) -> None:
        self.name = "always_valid"
        self.confidence = confidence

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        return [
            Output.failed(i.item_id, i.load_error, "input")
            if i.load_error
            else Output(item_id=i.item_id, label="VALID", confidence=self.confidence, reason="control: always VALID")
            for i in items
        ]


@system("always_valid", accepts=("citation",), description="control: VALID for every entry")
def build_always_valid(confidence: float = 0.5) -> AlwaysValid:
    return AlwaysValid(confidence)

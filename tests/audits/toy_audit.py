"""A toy audit kind, as a plug-in (issue 25): everything a fourth audit kind needs, in one module.

Registered at import time (a config's `plugins = ["tests.audits.toy_audit"]`), it brings its own
config section `[toy]` (a word list file relative to the config, an identity seed, a runtime
note), its own item kind (`toy_word`), a system that reads that kind, a corpus, scoring and
publishing. Nothing outside this module is edited to run it through `jobs/run_corpus.py`.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pyarrow as pa
from pydantic import Field, ValidationInfo, field_validator

from audits import register_audit
from audits.base import AuditContext, AuditSection, ShardedAudit, Verdicts, config_relative, section
from audits.summary import RunSummary
from corpora.loaded_corpus import LoadedCorpus, file_version
from storage.records import Item, Output
from storage.run_publication import close_system_run, finish_system_runs
from storage.schemas import ITEM_SCHEMA, METRIC_SCHEMA, TRUTH_SCHEMA
from verifiers.registry import system
from verifiers.system import RunContext

KIND = "toy_word"


class ToyConfig(AuditSection):
    """`[toy]`: a file of words, one a line; a word is 'hallucinated' when it starts with x."""

    identity_fields = ("words", "seed")
    words: str | None = Field(None, description="Word list file; relative to the config file")
    seed: int = Field(0, description="Changes what is audited (identity)")
    note: str = Field("", description="Recorded, not identity")

    @field_validator("words", mode="before")
    @classmethod
    def _relative(cls, value: Any, info: ValidationInfo) -> Any:
        return config_relative(value, info)


class ToyAudit(ShardedAudit):
    name: ClassVar[str] = "toy"
    corpus_needs_cluster: ClassVar[bool] = False
    sections = {"toy": ToyConfig}
    item_kinds = (KIND,)

    def build_corpus(self, config, services) -> LoadedCorpus:  # noqa: ANN001
        from pathlib import Path

        toy = section(config, "toy", ToyConfig)
        if not toy.words:
            raise ValueError("a toy run needs [toy] words = \"...\"")
        path = Path(toy.words)
        words = [w.strip() for w in path.read_text(encoding="utf-8").splitlines() if w.strip()]
        name = config.corpus.name or "toy"
        items = pa.Table.from_pylist([Item(f"w{i}", KIND, name, None, {"word": w}, str(path), i + 1).to_row()
                                      for i, w in enumerate(words)], schema=ITEM_SCHEMA)  # fmt: skip
        truth = pa.Table.from_pylist([{"item_id": f"w{i}", "label": "HALLUCINATED" if w.startswith("x") else "VALID"}
                                      for i, w in enumerate(words)], schema=TRUTH_SCHEMA)  # fmt: skip
        return LoadedCorpus(name, file_version(path), None, items, truth)

    def adjudicate(self, ctx: AuditContext) -> Verdicts:
        return {}

    def score(self, ctx: AuditContext, verdicts: Verdicts) -> dict[str, dict[str, Any]]:
        truth = dict(zip(ctx.corpus.truth.column("item_id").to_pylist(), ctx.corpus.truth.column("label").to_pylist(),
                         strict=True))  # fmt: skip
        scores = {}
        for run in ctx.plan.runs:
            outputs = ctx.plan.store.read_outputs(run.run_id).to_pylist()
            right = sum(o["label"] == truth[o["item_id"]] for o in outputs)
            scores[run.run_id] = {"accuracy": right / len(outputs), "num_scored": len(outputs)}
        return scores

    def publish(self, ctx: AuditContext, verdicts: Verdicts, scores: dict[str, dict[str, Any]],
                elapsed_s: float) -> RunSummary:  # fmt: skip
        store = ctx.plan.store
        systems = [close_system_run(store, run, store.read_outputs(run.run_id), ctx.failed, METRIC_SCHEMA.empty_table(),
                                    scores[run.run_id]) for run in ctx.plan.runs]  # fmt: skip
        finish_system_runs(store, systems)
        return RunSummary(systems=systems, elapsed_s=elapsed_s, columns=("accuracy",), title="Toy audit: accuracy")


class XWordDetector:
    """Says HALLUCINATED for a word starting with x: right on every toy item."""

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        return [Output(i.item_id, label="HALLUCINATED" if i.payload["word"].startswith("x") else "VALID",
                       confidence=1.0, detail={"word": json.dumps(i.payload["word"])}) for i in items]  # fmt: skip


@system("toy_x_detector", accepts=(KIND,), description="toy: flags words starting with x")
def build_x_detector() -> XWordDetector:
    return XWordDetector()


register_audit("toy", f"{__name__}:ToyAudit")

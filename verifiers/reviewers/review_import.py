"""Import of paper reviews produced elsewhere: one Markdown or JSON file per copy, in a directory.

A copy `<paper_id>/copy-<k>` is looked up as `<dir>/<paper_id>/copy-<k>.{json,md,txt}` or
`<dir>/<paper_id>__copy-<k>.{json,md,txt}` (first found wins, JSON first). JSON is either
`{"review_text": str, "flags"|"issues": [{quote, location, type, description}, ...]}` or a bare
list of issues; Markdown and text are prose, read into flags by `flags_from_text` (one flag per
bulleted or numbered point). A copy without a file is `Output.failed(..., "input")`: a review
that was never produced is counted apart, never an empty review.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from storage.records import Item, Output, PaperReview
from verifiers.registry import system
from verifiers.reviewers.llm import flags_from_text, normalize_flags
from verifiers.system import RunContext

__all__ = ["ImportedReviews", "candidate_paths", "read_review_file"]

SUFFIXES = (".json", ".md", ".txt")


def candidate_paths(root: Path, item_id: str) -> list[Path]:
    flat = item_id.replace("/", "__")
    return [root / f"{stem}{suffix}" for suffix in SUFFIXES for stem in (item_id, flat)]


def read_review_file(item_id: str, path: Path) -> dict[str, Any]:
    """The contract's review detail from one file; raises ValueError on an unreadable JSON file."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".json":
        data = json.loads(text)
        if isinstance(data, list):
            data = {"issues": data}
        if not isinstance(data, dict):
            raise ValueError("JSON review must be an object or a list of issues")
        raw = data.get("flags", data.get("issues"))
        review_text = str(data.get("review_text") or data.get("review") or "")
        flags = normalize_flags(item_id, raw) if isinstance(raw, list) else flags_from_text(item_id, review_text)
        if not review_text:
            review_text = "\n".join(f"- {f['description']}" for f in flags)
    else:
        review_text, flags = text, flags_from_text(item_id, text)
    return PaperReview(review_text=review_text, prompt_style="imported", flags=flags, source_file=path.name).to_detail()


class ImportedReviews:
    """Reads the review of each copy from `directory`."""

    def __init__(self, directory: str, name: str = "paper_review_import") -> None:
        self.name, self.directory = name, Path(directory)

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        outputs = []
        for item in items:
            path = next((p for p in candidate_paths(self.directory, item.item_id) if p.is_file()), None)
            if path is None:
                outputs.append(Output.failed(item.item_id, f"no review file for {item.item_id} in {self.directory}",
                                             "input"))  # fmt: skip
                continue
            try:
                outputs.append(Output(item.item_id, detail=read_review_file(item.item_id, path)))
            except (ValueError, OSError) as exc:
                outputs.append(Output.failed(item.item_id, f"{path.name}: {exc}", "parse"))
        return outputs


@system("paper_review_import", accepts=("paper_copy",), description="paper reviews produced elsewhere (Markdown or JSON, one file per copy)")
def build_paper_review_import(directory: str) -> ImportedReviews:
    return ImportedReviews(directory)

"""The distinct injections of built review corpora, as rows to label by hand (issue 22: validity is
measured by reading each injection against the paper).

    python jobs/build_review_corpus.py peerread.jsonl --seed 0 --copies 2 --out /tmp/built_s0
    python bench/review_injections_to_label.py /tmp/built_s0 [/tmp/built_s1 ...] \
        --labels tests/corpora/reviews/data/injection_validity_labels_heldout.jsonl --out to_label.jsonl

A row per distinct injection (review id without `#inj<k>`, sentence index, original and injected
text) that `--labels` does not label yet: `review_id`, `paper_id`, `sentence_index`, `anchor`,
`leaf`, `original`, `injected`, `sentence_before`, `sentence_after`, and `corpora` (the build folders
that produced it). A labeller adds `valid` and `reason` and appends the row to the labels file
(`corpora/reviews/validity.py` reads it). The paper's text is in the build's `items.jsonl`
(`payload.paper_text`); `--papers-out DIR` writes it once per paper as `DIR/<paper_id>.txt` to read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from corpora.reviews.corpus_io import read_jsonl
from corpora.reviews.validity import base_review_id, load_validity_labels


def injections_to_label(corpus_dirs: list[Path], labelled: set[tuple[str, int, str, str]]) -> tuple[list[dict], dict[str, str]]:
    """(rows to label, paper text by paper id) of the corpora's injections not in `labelled`."""
    found: dict[tuple[str, int, str, str], dict] = {}
    papers: dict[str, str] = {}
    for folder in corpus_dirs:
        copies, truths, errors = read_jsonl(folder / "items.jsonl", folder / "truth.jsonl")
        if errors:
            raise SystemExit(f"{folder}: {errors[0]}")
        by_id = {c.review_id: c for c in copies}
        for copy in copies:
            papers.setdefault(copy.paper_id, copy.paper_text)
        for copy_id, truth in truths.items():
            source = base_review_id(copy_id)
            clean = by_id.get(f"{source}#clean")
            if clean is None:
                raise SystemExit(f"{folder}/items.jsonl: no clean copy of {source}")
            for inj in truth.injections:
                key = (source, inj.sentence_index, inj.original, inj.injected)
                if key in labelled:
                    continue
                row = found.setdefault(key, {
                    "review_id": source, "paper_id": truth.paper_id, "sentence_index": inj.sentence_index,
                    "anchor": inj.anchor, "leaf": inj.leaf, "original": inj.original, "injected": inj.injected,
                    "sentence_before": clean.sentences[inj.sentence_index].text,
                    "sentence_after": by_id[copy_id].sentences[inj.sentence_index].text, "corpora": []})  # fmt: skip
                if str(folder) not in row["corpora"]:
                    row["corpora"].append(str(folder))
    return sorted(found.values(), key=lambda r: (r["review_id"], r["sentence_index"], r["injected"])), papers


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("corpora", nargs="+", type=Path, help="build folders of jobs/build_review_corpus.py")
    p.add_argument("--labels", type=Path, action="append", default=[], help="labels already made (repeatable)")
    p.add_argument("--out", type=Path, required=True, help="JSONL of the injections left to label")
    p.add_argument("--papers-out", type=Path, help="write each paper's text here as <paper_id>.txt")
    args = p.parse_args(argv)
    labelled: set[tuple[str, int, str, str]] = set()
    for path in args.labels:
        labelled |= set(load_validity_labels(path))
    rows, papers = injections_to_label(args.corpora, labelled)
    with args.out.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    if args.papers_out:
        args.papers_out.mkdir(parents=True, exist_ok=True)
        for paper_id, text in papers.items():
            (args.papers_out / f"{paper_id.replace('/', '_')}.txt").write_text(text, encoding="utf-8")
    print(json.dumps({"to_label": len(rows), "papers": len(papers), "out": str(args.out)}), file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

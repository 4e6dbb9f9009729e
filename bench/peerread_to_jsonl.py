"""PeerRead (allenai/PeerRead) reviews with their paper text as the generic review JSONL, for a
held-out review-injection corpus (issue 22: validity measured on reviews the rules were never tuned on).

    python bench/peerread_to_jsonl.py PeerRead/data/iclr_2017/train --max-reviews 50 --out /tmp/peerread.jsonl
    python jobs/build_review_corpus.py /tmp/peerread.jsonl --seed 0 --copies 2 --out /tmp/peerread_corpus

A PeerRead split folder holds `reviews/<id>.json` (title, abstract, `reviews`: each with `comments`,
and in ICLR 2017 `OTHER_KEYS` naming the reviewer and `IS_META_REVIEW`; ACL 2017 names nobody) and `parsed_pdfs/<id>.pdf.json` (science-parse:
`metadata.sections` with `heading` and `text`). Kept: official reviews only (the reviewer is an
"AnonReviewer"; no meta-review, no author reply or public comment, no empty pre-review question),
each once (PeerRead repeats its review lists). The paper text is the title, abstract and the parsed
sections; where a paper has no parsed PDF, the title and abstract (said per paper on stderr).
Lines: `paper_id`, `paper_text`, `review_text`, `review_id` (`<paper>-<reviewer>`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path


def paper_text(title: str, abstract: str, parsed_pdf: Path | None) -> str:
    parts = [title.strip(), abstract.strip()]
    if parsed_pdf is not None and parsed_pdf.is_file():
        meta = json.loads(parsed_pdf.read_text(encoding="utf-8")).get("metadata") or {}
        for section in meta.get("sections") or []:
            heading, text = (section.get("heading") or "").strip(), (section.get("text") or "").strip()
            parts.append(f"{heading}\n{text}" if heading else text)
    return "\n\n".join(p for p in parts if p)


def official_reviews(paper: dict) -> Iterator[tuple[str, str]]:
    """(reviewer, text) of each official review, first occurrence only. ICLR reviews name their
    reviewer ("ICLR 2017 conference AnonReviewer3"); ACL 2017 and CoNLL 2016 reviews name nobody and
    every entry is an official review (`R<k>` by its place in the list)."""
    reviews = paper.get("reviews") or []
    if not any("OTHER_KEYS" in r for r in reviews):
        seen_texts: set[str] = set()
        for k, review in enumerate(reviews, 1):
            text = (review.get("comments") or "").strip()
            if text and text not in seen_texts:
                seen_texts.add(text)
                yield f"R{k}", text
        return
    seen: set[tuple[str, str]] = set()
    for review in reviews:
        who = str(review.get("OTHER_KEYS") or "")
        text = (review.get("comments") or "").strip()
        if review.get("IS_META_REVIEW") or "AnonReviewer" not in who or not text:
            continue
        reviewer = who.rsplit(" ", 1)[-1]
        if (reviewer, text) in seen:
            continue
        seen.add((reviewer, text))
        yield reviewer, text


def convert(split_dir: Path, max_reviews: int | None) -> Iterator[dict]:
    count = 0
    for path in sorted((split_dir / "reviews").glob("*.json"), key=lambda p: (len(p.stem), p.stem)):
        paper = json.loads(path.read_text(encoding="utf-8"))
        parsed = split_dir / "parsed_pdfs" / f"{path.stem}.pdf.json"
        if not parsed.is_file():
            print(f"{path}: no parsed PDF; paper text is the title and abstract", file=sys.stderr)
        text = paper_text(paper.get("title") or "", paper.get("abstract") or "", parsed)
        used: dict[str, int] = {}
        for reviewer, review in official_reviews(paper):
            used[reviewer] = used.get(reviewer, 0) + 1
            suffix = "" if used[reviewer] == 1 else f"-{used[reviewer]}"
            yield {"paper_id": path.stem, "paper_text": text, "review_text": review,
                   "review_id": f"{path.stem}-{reviewer}{suffix}"}
            count += 1
            if max_reviews is not None and count >= max_reviews:
                return


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("split_dir", type=Path, help="a PeerRead split folder (with reviews/ and parsed_pdfs/)")
    p.add_argument("--max-reviews", type=int, default=None)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    rows = list(convert(args.split_dir, args.max_reviews))
    with args.out.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    papers = len({r["paper_id"] for r in rows})
    print(json.dumps({"reviews": len(rows), "papers": papers, "out": str(args.out)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""PeerRead (allenai/PeerRead) reviews with their paper text as the generic review JSONL, for a
held-out review-injection corpus (issue 22: validity measured on reviews the rules were never tuned on).

    python bench/peerread_to_jsonl.py PeerRead/data/iclr_2017/train --max-reviews 50 --out /tmp/peerread.jsonl
    python jobs/build_review_corpus.py /tmp/peerread.jsonl --seed 0 --copies 2 --out /tmp/peerread_corpus

The held-out batches of the README's "Injection validity" table, with the ids the labels file uses:

    python bench/peerread_to_jsonl.py PeerRead/data/iclr_2017/train --ids 304-335,408-443 --id-prefix train --out batch14.jsonl

A PeerRead split folder holds `reviews/<id>.json` (title, abstract, `reviews`: each with `comments`,
and in ICLR 2017 `OTHER_KEYS` naming the reviewer and `IS_META_REVIEW`; ACL 2017 names nobody) and `parsed_pdfs/<id>.pdf.json` (science-parse:
`metadata.sections` with `heading` and `text`). Kept: official reviews only (the reviewer is an
"AnonReviewer"; no meta-review, no author reply or public comment, no empty pre-review question),
each once (PeerRead repeats its review lists). The paper text is the title, abstract and the parsed
sections (the parsed abstract first, as `ABSTRACT`); where a paper has no parsed PDF, the title and
abstract (said per paper on stderr). Lines: `paper_id`, `paper_text`, `review_text`, `review_id`
(`<prefix><paper>-<reviewer>`; `--id-prefix` tells splits apart: "train304", "acl37").
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
        if parsed_abstract := (meta.get("abstractText") or "").strip():
            parts.append(f"ABSTRACT\n{parsed_abstract}")
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


def parse_ids(spec: str) -> set[str]:
    """'304-335,408' -> the paper ids it names (ranges inclusive)."""
    ids: set[str] = set()
    for part in filter(None, (p.strip() for p in spec.split(","))):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise argparse.ArgumentTypeError(f"--ids: {part!r} is neither an id nor a range like 304-335")
        ids |= {str(i) for i in range(int(low), int(high or low) + 1)}
    return ids


def convert(split_dir: Path, max_reviews: int | None, ids: set[str] | None = None, prefix: str = "") -> Iterator[dict]:
    count = 0
    for path in sorted((split_dir / "reviews").glob("*.json"), key=lambda p: (len(p.stem), p.stem)):
        if ids is not None and path.stem not in ids:
            continue
        paper = json.loads(path.read_text(encoding="utf-8"))
        parsed = split_dir / "parsed_pdfs" / f"{path.stem}.pdf.json"
        if not parsed.is_file():
            print(f"{path}: no parsed PDF; paper text is the title and abstract", file=sys.stderr)
        text = paper_text(paper.get("title") or "", paper.get("abstract") or "", parsed)
        used: dict[str, int] = {}
        for reviewer, review in official_reviews(paper):
            used[reviewer] = used.get(reviewer, 0) + 1
            suffix = "" if used[reviewer] == 1 else f"-{used[reviewer]}"
            yield {"paper_id": f"{prefix}{path.stem}", "paper_text": text, "review_text": review,
                   "review_id": f"{prefix}{path.stem}-{reviewer}{suffix}"}
            count += 1
            if max_reviews is not None and count >= max_reviews:
                return


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("split_dir", type=Path, help="a PeerRead split folder (with reviews/ and parsed_pdfs/)")
    p.add_argument("--max-reviews", type=int, default=None)
    p.add_argument("--ids", type=parse_ids, default=None, help="only these papers: ids and ranges, '304-335,408-443'")
    p.add_argument("--id-prefix", default="", help="put before each paper id ('train' -> 'train304')")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    rows = list(convert(args.split_dir, args.max_reviews, args.ids, args.id_prefix))
    with args.out.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    papers = len({r["paper_id"] for r in rows})
    print(json.dumps({"reviews": len(rows), "papers": papers, "out": str(args.out)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A 5 MB review beside normal ones through the whole corpus build (issue 22: it hung the build for
~20 min and lost every review in the file).

    python bench/bench_review_build_large.py [--mb 5] [--others 20] [--out DIR]

Writes a generic review JSONL (`--others` normal reviews and one review of `--mb` MB of one
paragraph with no line break, the hostile case), then runs jobs/build_review_corpus.py on it twice:
with the default --max-review-chars (the big review is refused by line, the others built) and
with the limit raised above its size (it is segmented, screened and injected like any other).
Prints wall and CPU seconds and the reviews/copies each run kept, as JSON lines.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobs.build_review_corpus import main as build_main  # noqa: E402

SENTENCES = (
    "The authors evaluate BERT on GLUE and report 85.4% accuracy with 3 seeds.",
    "Recent work outperforms the baseline by 2.1 points on SQuAD, unlike prior methods.",
    "Could the authors clarify the learning rate of 0.001?",
    "It would be interesting to see results on MNLI.",
    "The method has 12 layers and 110 million parameters.",
)
PAPER = "We evaluate BERT on GLUE and SQuAD. Our method has 12 layers. " * 20


def write_input(path: Path, mb: float, others: int) -> int:
    flat = " ".join(SENTENCES) + " "
    big = (flat * (int(mb * 1_000_000) // len(flat) + 1))[: int(mb * 1_000_000)]
    with path.open("w", encoding="utf-8") as f:
        for k in range(others // 2):
            f.write(json.dumps({"paper_id": f"p{k}", "paper_text": PAPER, "review_text": flat * 3}) + "\n")
        f.write(json.dumps({"paper_id": "big", "paper_text": PAPER, "review_text": big}) + "\n")
        for k in range(others // 2, others):
            f.write(json.dumps({"paper_id": f"p{k}", "paper_text": PAPER, "review_text": flat * 3}) + "\n")
    return len(big)


def run(src: Path, out: Path, extra: list[str]) -> dict:
    wall, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        build_main([str(src), "--seed", "0", "--copies", "2", "--out", str(out), *extra])
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return {"wall_s": round(time.perf_counter() - wall, 1), "cpu_s": round(time.process_time() - cpu, 1),
            "reviews": report["reviews"], "copies": report["copies"], "load_errors": len(report["load_errors"]),
            "kept_injections": report["counts"]["total"]["kept"]}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mb", type=float, default=5.0)
    p.add_argument("--others", type=int, default=20)
    p.add_argument("--out", type=Path, default=None, help="work folder (default: a temporary one)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.out or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        src = work / "reviews.jsonl"
        chars = write_input(src, args.mb, args.others)
        refused = run(src, work / "default_limit", [])
        print(json.dumps({"run": "default --max-review-chars", "big_review_chars": chars, **refused}), flush=True)
        built = run(src, work / "raised_limit", ["--max-review-chars", str(chars + 1)])
        print(json.dumps({"run": "--max-review-chars above its size", "big_review_chars": chars, **built}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

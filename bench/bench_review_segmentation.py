"""CPU seconds to split one review into sentences, by length: the splitting must grow linearly.

    python bench/bench_review_segmentation.py [--sizes 25000 100000 1000000] [--shape flat|lines]

`flat` is one paragraph with no line break (the hostile case); `lines` breaks a line every ~400
characters. Offsets are checked against the text after each split.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corpora.reviews.segmentation import check_offsets, segment_review  # noqa: E402

SENTENCE = "The method improves accuracy by 3.2 points on ImageNet, e.g. in Table 2 of the paper. "


def review_text(chars: int, shape: str) -> str:
    text = (SENTENCE * (chars // len(SENTENCE) + 1))[:chars]
    if shape == "lines":
        text = "\n".join(text[i:i + 400] for i in range(0, len(text), 400))
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[25_000, 100_000, 1_000_000])
    p.add_argument("--shape", choices=("flat", "lines"), default="flat")
    args = p.parse_args(argv)
    for chars in args.sizes:
        text = review_text(chars, args.shape)
        started = time.process_time()
        sentences = segment_review(text)
        cpu = time.process_time() - started
        check_offsets(text, sentences)
        print(json.dumps({"chars": chars, "shape": args.shape, "sentences": len(sentences), "cpu_s": round(cpu, 2)}),
              flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

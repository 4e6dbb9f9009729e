"""Throughput of the review-hallucination detectors, and the ReviewCritique track's wall time.

Reviews: ReviewCritique's LLM reviews (../shared/data/hallupeer/reviewcritique, evaluation only:
its licence forbids training), 20 papers x 3 LLM reviewers = 60 reviews, 1,610 segments. Each
segment is a sentence of the review (segments joined by newlines); a segment the experts marked
unreliable is a gold positive. Loaded by the corpus ingest (corpora/reviews/ingest.py), as the
review audit (`audit = "reviews"`, track "natural") loads it.

Configurations, one JSON row each, one worker = one System instance in one process:
1. `review_llm_judge` (CoT, sentence mode) against jobs/llm_replay_server.py on 127.0.0.1 answering
   every call, no response cache, with 0 s and 0.5 s per answer (a provider's think time), 1 and
   8 calls in flight (a review's sentences are judged one after another, so in-flight calls
   come from different reviews; the 0.5 s runs take 2 x in-flight reviews): reviews/hour/worker; the 0 s, 8-in-flight run over all 60 reviews is the
   full track (detector + scoring) wall time.
2. `review_nli` with the bundled SmolLM2-135M on llama.cpp, CPU, 1 thread, first SMOL_REVIEWS reviews,
   one sentence per call (as before issue 22) and batched (8 sentences per call, the default); and
   the same two on the bundled sample (corpora/samples/reviews_sample.jsonl, 8 reviews, 30 sentences:
   `--nli-sample` runs only these, no shared data needed).
3. `review_lexical` over all 60 reviews plus `score_segments`.

    python bench/bench_review_detectors.py            # fixed parameters
    python bench/bench_review_detectors.py --quick    # fewer reviews (smoke)
    python bench/bench_review_detectors.py --nli-sample   # the NLI before/after on the bundled sample
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from bench.bench_llm_gateway import start_server  # noqa: E402  (one way to start the replay server)
from clients.lent_services import RunServices  # noqa: E402
from clients.llm_gateway import LLMServices  # noqa: E402
from corpora.reviews import ingest  # noqa: E402
from corpora.reviews.records import ReviewCopy, ReviewTruth  # noqa: E402
from scoring.reviews import score_segments  # noqa: E402
from storage.records import Item  # noqa: E402
from verifiers.registry import SystemSpec, build_system  # noqa: E402
from verifiers.system import RunContext  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "hallupeer" / "reviewcritique" / "ReviewCritique_LLM.jsonl"
SMOL_REVIEWS = 2
ANSWER = json.dumps({"reasoning": "consistent with the evidence", "hallucination": False})


def load_reviewcritique(path: Path) -> tuple[list[ReviewCopy], list[ReviewTruth], dict[str, str]]:
    """The 60 reviews through the corpus ingest (corpora/reviews/ingest.py): copies, truths, reviewer per review."""
    loaded = ingest.load_reviewcritique(path)
    if loaded.errors:
        raise ValueError(f"{path}: {len(loaded.errors)} unreadable entries; first: {loaded.errors[0]}")
    copies = [s.copy for s in loaded.reviews]
    truths = [s.truth for s in loaded.reviews]
    return copies, truths, {s.copy.review_id: s.reviewer or "unknown" for s in loaded.reviews}


def items_of(copies: list[ReviewCopy]) -> list[Item]:
    return [Item(c.review_id, "review", "reviewcritique_llm", None, c.to_payload()) for c in copies]


def segment_summary(copies, truths, reviewer_of, outputs) -> dict:
    started = time.perf_counter()
    ids = {o.item_id for o in outputs}
    subset = [t for t in truths if t.review_id in ids]
    s = score_segments(subset, {c.review_id: c for c in copies}, {o.item_id: o for o in outputs}, reviewer_of,
                       n_resamples=2000)  # fmt: skip
    out = {f"segment_{m}": s.value(f"segment_{m}") for m in ("recall", "precision", "f1", "mcc")}
    return out | {"errored": s.coverage["errored"], "scoring_s": round(time.perf_counter() - started, 2)}


def row(config: str, copies: list[ReviewCopy], wall: float, **extra) -> dict:
    segments = sum(len(c.sentences) for c in copies)
    return {"config": config, "reviews": len(copies), "segments": segments, "wall_s": round(wall, 2),
            "reviews_per_hour_per_worker": round(len(copies) / wall * 3600, 1) if wall > 0 else math.inf, **extra}  # fmt: skip


def bench_replay(copies, truths, reviewer_of, latency: float, in_flight: int) -> dict:
    proc, url = start_server("--default-content", ANSWER, "--latency", str(latency))
    try:
        system = build_system(SystemSpec("review_llm_judge", {"model": "openai/replayed", "api_base": f"{url}/v1",
                                                              "prompt_style": "cot"}))  # fmt: skip
        ctx = RunContext("bench", "2026-09-10", cache_dir=None, services=RunServices("test", "", llm=LLMServices(concurrency=in_flight)))
        asyncio.run(system.run(items_of(copies[:1]), ctx))  # warm-up: litellm's import and first connection
        started = time.perf_counter()
        outputs = asyncio.run(system.run(items_of(copies), ctx))
        wall = time.perf_counter() - started
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    extra = {"latency_s": latency, "in_flight": in_flight, "calls": sum(o.api_calls for o in outputs)}
    if len(copies) == len(truths) and latency == 0.0:
        summary = segment_summary(copies, truths, reviewer_of, outputs)
        extra |= {"track_wall_s": round(wall + summary["scoring_s"], 2), **summary}
    return row("replay_judge_cot", copies, wall, **extra)


def bench_smollm2(copies, truths, reviewer_of, sentences_per_call: int = 8, config: str = "smollm2_nli_cpu_1thread") -> dict:
    from clients.llm_llamacpp import LlamaCppBackend, smollm2_path

    backend = LlamaCppBackend(smollm2_path(), model_id="smollm2-135m-instruct", n_ctx=2048, n_threads=1)
    ctx = RunContext("bench", "2026-09-10", cache_dir=None, services=RunServices("test", "", llm=LLMServices(backends={"smollm2": backend})))
    system = build_system(SystemSpec("review_nli", {"sentences_per_call": sentences_per_call}))
    first = copies[0].to_payload()
    warm = Item("warm", "review", "warm", None, first | {"sentences": first["sentences"][:1]})
    asyncio.run(system.run([warm], ctx))  # loads the model before the clock starts
    started, cpu = time.perf_counter(), time.process_time()
    outputs = asyncio.run(system.run(items_of(copies), ctx))
    wall = time.perf_counter() - started
    cpu_s = time.process_time() - cpu  # llama.cpp runs in this process: its CPU time, not the machine's load
    stats = system.parse_stats
    extra = segment_summary(copies, truths, reviewer_of, outputs) if truths else {}
    return row(config, copies, wall, sentences_per_call=sentences_per_call, cpu_s=round(cpu_s, 2),
               reviews_per_cpu_hour=round(len(copies) / cpu_s * 3600, 1), calls=sum(o.api_calls for o in outputs),
               tokens_in=sum(o.tokens_in or 0 for o in outputs), parse_failures=stats.failed,
               parse_attempts=stats.attempted, labels=dict(Counter(o.label or o.error_kind for o in outputs)), **extra)  # fmt: skip


def bench_nli_sample() -> list[dict]:
    """The NLI baseline on the bundled sample, one sentence per call and batched."""
    copies = [s.copy for s in ingest.load_reviews(ROOT / "corpora" / "samples" / "reviews_sample.jsonl", "jsonl").reviews]
    return [bench_smollm2(copies, [], {}, n, f"smollm2_nli_sample_{n}_per_call") for n in (1, 8)]


def bench_lexical(copies, truths, reviewer_of) -> dict:
    system = build_system(SystemSpec("review_lexical"))
    started = time.perf_counter()
    outputs = asyncio.run(system.run(items_of(copies), RunContext("bench", "2026-09-10")))
    wall = time.perf_counter() - started
    summary = segment_summary(copies, truths, reviewer_of, outputs)
    return row("lexical", copies, wall, track_wall_s=round(wall + summary["scoring_s"], 2), **summary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="6 reviews for the replay runs")
    parser.add_argument("--smol-reviews", type=int, default=SMOL_REVIEWS)
    parser.add_argument("--nli-sample", action="store_true", help="only the NLI before/after on the bundled sample")
    args = parser.parse_args()
    if args.nli_sample:
        for result in bench_nli_sample():
            emit(result)
        return
    copies, truths, reviewer_of = load_reviewcritique(DATA)
    replay = copies[:6] if args.quick else copies
    emit(bench_lexical(copies, truths, reviewer_of))
    for latency, in_flight in ((0.0, 8), (0.0, 1), (0.5, 8), (0.5, 1)):
        # 0.5 s x ~27 sequential calls per review: enough reviews to fill the in-flight slots, no more
        subset = replay if latency == 0.0 else replay[: 2 * in_flight]
        emit(bench_replay(subset, truths if subset is copies else [], reviewer_of, latency, in_flight))
    if args.smol_reviews > 0:
        for n in (1, 8):
            emit(bench_smollm2(copies[: args.smol_reviews], truths, reviewer_of, n, f"smollm2_nli_cpu_1thread_{n}_per_call"))
        for result in bench_nli_sample():
            emit(result)


def emit(result: dict) -> None:
    print(json.dumps(result), flush=True)

if __name__ == "__main__":
    main()

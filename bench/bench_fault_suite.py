"""The fault suite: a 1,000-item LLM run through a provider that fails 20 % of requests.

Everything is built by the project's own code, in a temp dir, by one command:

* the corpus: `jobs/generate_corpus.py hallmark` from HALLMARK dev_public's VALID entries
  (500 VALID + 500 HALLUCINATED of the 12 types those references support);
* the recording: `jobs/llm_replay_server.py`'s `build_hallmark_recording`, from per-entry answers of
  a simulated model (the true label with probability 0.85, seeded);
* the provider: `jobs/llm_replay_server.py serve` on 127.0.0.1 injecting, per request (seeded),
  429 (Retry-After), 500, timeouts (the client gives up first) and HTTP 200 bodies cut halfway;
* a partial outage: during the first submission 2 % of the prompts get a 500 on every attempt;
* the run: `jobs/run_corpus.py` with `llm_zero_shot`, submitted again until it says complete
  (an item whose every retry failed is UNCERTAIN-by-outage and retried by the next submission).

Figures: items in and rows out, duplicates, requests = answered + faulted, paid answers per prompt,
faults by kind, outage items per submission, and whether any outage answer reached the scores.

    python bench/bench_fault_suite.py [--items 1000] [--fault-share 0.2] [--workers 2] [--shard-size 100]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from jobs.llm_replay_server import build_hallmark_recording  # noqa: E402
from storage.outages import count_rows_per_item, outage_item_ids, outage_mask  # noqa: E402
from storage.store import Store  # noqa: E402

SHARED_HALLMARK = REPO_ROOT.parent / "shared" / "data" / "hallmark" / "dev_public.jsonl"
# The hallucination types HALLMARK's dev VALID entries support at this size (preprint_as_published
# and arxiv_version_mismatch need arXiv-only / arXiv+venue works the list does not have enough of).
TYPES = ("fabricated_doi", "nonexistent_venue", "placeholder_authors", "future_date", "chimeric_title", "wrong_venue",
         "swapped_authors", "hybrid_fabrication", "merged_citation", "partial_author_list", "near_miss_title",
         "plausible_fabrication")  # fmt: skip
FAULTS = ("429", "500", "timeout", "cut_body")
MODEL = "openai/fault-suite"
MAX_ATTEMPTS = 5  # the gateway's retry policy (clients/llm_gateway.py LLMServices.retry)


@dataclass
class SuiteSettings:
    items: int = 1000
    fault_share: float = 0.2
    """Share of requests that get a fault, split evenly over FAULTS."""
    outage_share: float = 0.02
    """Share of prompts that get a 500 on every attempt during the first submission (a partial
    provider outage that ends before the next one): those items must be retried by the resume."""
    workers: int = 2
    shard_size: int = 100
    seed: int = 7
    timeout_s: float = 2.0
    """Client timeout; the server's timeout fault answers only after twice this."""
    max_submissions: int = 4
    ray_address: str | None = None


@dataclass
class SuiteFigures:
    items_in: int = 0
    rows_out: int = 0
    duplicate_rows: int = 0
    shard_rows: int = 0
    """Rows in the shard files, superseded outage rows included (the audit trail)."""
    requests: int = 0
    answered: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    abandoned: int = 0
    paid_twice: int = 0
    answered_prompts: int = 0
    unmatched: int = 0
    inputs_tried: int = 0
    """Distinct prompts sent to the provider."""
    stored_outage_rows: int = 0
    """Outage rows in the shard files (each the end of MAX_ATTEMPTS faulted requests)."""
    client_attempts: int = 0
    """Attempts the stored outputs account for: attempts of every answer + MAX_ATTEMPTS per outage row."""
    outage_rows_per_submission: list[int] = field(default_factory=list)
    answered_per_submission: list[int] = field(default_factory=list)
    """Whole answers the provider sent during each submission."""
    exit_codes: list[int] = field(default_factory=list)
    outages_left: int = 0
    published: bool = False
    status: str = ""
    num_scored: int = 0
    num_uncertain: int = 0
    errored: int = 0
    seconds: float = 0.0
    detection_rate: float | None = None
    false_positive_rate: float | None = None

    @property
    def faults_total(self) -> int:
        return sum(self.faults.values())

    @property
    def random_fault_share(self) -> float:
        """Faulted share of the requests, leaving out those that ended in an outage row (the
        partial outage's, and any item whose every retry drew a fault)."""
        outage_requests = MAX_ATTEMPTS * self.stored_outage_rows
        return (self.faults_total - outage_requests) / max(self.requests - outage_requests, 1)

    def rows(self) -> list[tuple[str, str]]:
        share = self.faults_total / self.requests if self.requests else 0.0
        return [
            ("load held: items in / rows out", f"{self.items_in} / {self.rows_out}"),
            ("duplicate rows (read_outputs)", str(self.duplicate_rows)),
            ("provider requests", str(self.requests)),
            ("  answered (HTTP 200, whole body)", str(self.answered)),
            ("  faulted (retried)", f"{self.faults_total} ({share:.1%} of requests; "
                                    f"{self.random_fault_share:.1%} outside outage items)"),
            *((f"    {kind}", str(self.faults.get(kind, 0))) for kind in FAULTS),
            ("  timeouts the client gave up on", str(self.abandoned)),
            ("requests = answered + faulted", str(self.requests == self.answered + self.faults_total)),
            ("client attempts (stored) = requests", f"{self.client_attempts} = {self.requests}"),
            ("prompts answered / answered twice", f"{self.answered_prompts} / {self.paid_twice}"),
            ("submissions (exit codes)", " ".join(map(str, self.exit_codes))),
            ("outage items left after each submission", " ".join(map(str, self.outage_rows_per_submission))),
            ("answers sent in each submission", " ".join(map(str, self.answered_per_submission))),
            ("inputs tried (distinct prompts)", str(self.inputs_tried)),
            ("faults survived: in the run / by resume / not",
             f"{self.faults_total - MAX_ATTEMPTS * self.stored_outage_rows} / "
             f"{MAX_ATTEMPTS * (self.stored_outage_rows - self.outages_left)} / {MAX_ATTEMPTS * self.outages_left}"),
            ("items answered in the end", f"{self.rows_out - self.outages_left - self.errored} of {self.items_in}"),
            ("outage answers left / scored", f"{self.outages_left} / {0 if not self.published else self.outages_left}"),
            ("shard rows kept (audit trail)", str(self.shard_rows)),
            ("final status / scores published", f"{self.status} / {self.published}"),
            ("scored / UNCERTAIN / errored", f"{self.num_scored} / {self.num_uncertain} / {self.errored}"),
            ("DR / FPR of the simulated model", f"{_fmt(self.detection_rate)} / {_fmt(self.false_positive_rate)}"),
            ("wall time, s", f"{self.seconds:.0f}"),
        ]

    def table(self) -> str:
        width = max(len(k) for k, _ in self.rows())
        return "\n".join(f"{k:<{width}}  {v}" for k, v in self.rows())


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(f"{url}/stats", timeout=2).read()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _post(url: str, path: str, body: dict[str, Any]) -> None:
    request = urllib.request.Request(f"{url}{path}", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    urllib.request.urlopen(request, timeout=5).read()


def _stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/stats", timeout=5) as response:
        return json.loads(response.read())


def build_inputs(work: Path, settings: SuiteSettings) -> tuple[Path, Path]:
    """The corpus (generated) and the replay recording (simulated model answers) for it."""
    corpus = work / "corpus.jsonl"
    n_valid = settings.items // 2
    subprocess.run([sys.executable, str(REPO_ROOT / "jobs" / "generate_corpus.py"), "hallmark",
                    "--references", str(SHARED_HALLMARK), "--references-format", "hallmark",
                    "--n-valid", str(n_valid), "--n-hallucinated", str(settings.items - n_valid),
                    "--types", ",".join(TYPES), "--out", str(corpus)],
                   check=True, capture_output=True, text=True)  # fmt: skip
    rng = random.Random(settings.seed)
    predictions = work / "predictions.jsonl"
    with predictions.open("w") as out:
        for line in corpus.read_text().splitlines():
            row = json.loads(line)
            right = rng.random() < 0.85
            label = row["label"] if right else ("VALID" if row["label"] == "HALLUCINATED" else "HALLUCINATED")
            out.write(json.dumps({"bibtex_key": row["bibtex_key"], "label": label, "confidence": 0.9 if right else 0.6,
                                  "predicted_type": None, "reason": "simulated answer"}) + "\n")  # fmt: skip
    recording = work / "recording.jsonl"
    build_hallmark_recording(str(predictions), str(corpus), str(recording), model_id="fault-suite-model")
    return corpus, recording


def run_fault_suite(work: Path, settings: SuiteSettings) -> SuiteFigures:
    """Build the inputs, serve them with faults, run until complete; the figures of the whole."""
    started = time.monotonic()
    corpus, recording = build_inputs(work, settings)
    per_kind = settings.fault_share / len(FAULTS)
    # Independent draws per kind (llm_replay_server.fault_for): solve 1 - (1-p)^k = share for p.
    p = 1.0 - (1.0 - settings.fault_share) ** (1.0 / len(FAULTS)) if settings.fault_share else per_kind
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "jobs.llm_replay_server", "serve", "--port", str(port), "--recording", str(recording),
         "--fault-rate", ",".join(f"{kind}={p:.6f}" for kind in FAULTS), "--seed", str(settings.seed),
         "--fault-prompts", f"500={settings.outage_share}", "--retry-after", "0.2", "--timeout-delay", str(2 * settings.timeout_s)],
        cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    figures = SuiteFigures()
    try:
        _wait_for(url)
        storage = work / "runs"
        config = work / "fault_suite.toml"
        config.write_text(
            f'snapshot = "2026-11-30"\nbootstrap = 0\ntracking_uri = "none"\nshard_size = {settings.shard_size}\n'
            f'workers = {settings.workers}\nstorage = "{storage}"\n'
            f'[corpus]\npath = "{corpus}"\n'
            f'[llm]\ncache_dir = "{work / "cache"}"\ntimeout_s = {settings.timeout_s}\n'
            '[[systems]]\nname = "llm_zero_shot"\n'
            f'args = {{ model = "{MODEL}", api_base = "{url}/v1" }}\n'
        )  # fmt: skip
        env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "RAY_USAGE_STATS_ENABLED": "0"}
        if settings.ray_address:
            env["RAY_ADDRESS"] = settings.ray_address
        store = Store(str(storage))
        for _ in range(settings.max_submissions):
            done = subprocess.run([sys.executable, str(REPO_ROOT / "jobs" / "run_corpus.py"), "--config", str(config)],
                                  cwd=work, env=env, capture_output=True, text=True, timeout=1800)  # fmt: skip
            figures.exit_codes.append(done.returncode)
            (run_dir,) = [p for p in storage.iterdir() if (p / "manifest.json").exists()]
            figures.outage_rows_per_submission.append(len(outage_item_ids(store.read_outputs(run_dir.name))))
            figures.answered_per_submission.append(_stats(url).get("ok", 0) - sum(figures.answered_per_submission))
            if done.returncode not in (0, 1):
                raise RuntimeError(f"run_corpus.py exit {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
            if done.returncode == 0:
                break
            _post(url, "/faults", {"fault_rate": {kind: p for kind in FAULTS}})  # the partial outage ends
        stats = _stats(url)
    finally:
        server.terminate()
        server.wait(timeout=10)
    outputs = store.read_outputs(run_dir.name)
    import pyarrow.parquet as pq

    shards = [pq.read_table(p) for p in sorted((run_dir / "shards").glob("shard-*.parquet"))]
    stored_outage_rows = sum(sum(outage_mask(t)) for t in shards)
    answered_attempts = 0
    for t in shards:  # attempts behind every stored answer that was not a cache hit
        for detail, hits, down in zip(t.column("detail_json").to_pylist(), t.column("cache_hits").to_pylist(),
                                      outage_mask(t), strict=True):  # fmt: skip
            if not down and not hits and detail:
                answered_attempts += int(json.loads(detail).get("attempts") or 0)
    status = json.loads((run_dir / "status.json").read_text())
    scores = json.loads((run_dir / "scores.json").read_text())
    figures.items_in = sum(1 for line in corpus.read_text().splitlines() if line.strip())
    figures.rows_out = outputs.num_rows
    figures.duplicate_rows = count_rows_per_item(outputs)
    figures.shard_rows = sum(t.num_rows for t in shards)
    figures.requests = stats.get("requests", 0)
    figures.answered = stats.get("ok", 0)
    figures.faults = {kind: stats.get(f"fault_{kind}", 0) for kind in FAULTS}
    figures.abandoned = stats.get("abandoned", 0)
    figures.paid_twice = stats.get("paid_twice", 0)
    figures.answered_prompts = stats.get("answered_prompts", 0)
    figures.unmatched = stats.get("unmatched", 0)
    figures.inputs_tried = stats.get("prompts_tried", 0)
    figures.stored_outage_rows = stored_outage_rows
    figures.client_attempts = answered_attempts + MAX_ATTEMPTS * stored_outage_rows
    figures.outages_left = len(outage_item_ids(outputs))
    figures.published = bool(status.get("published"))
    figures.status = status.get("status", "")
    figures.errored = sum(e is not None for e in outputs.column("error").to_pylist())
    figures.num_scored = int(scores.get("num_scored") or 0)
    figures.num_uncertain = int(scores.get("num_uncertain") or 0)
    figures.detection_rate = scores.get("detection_rate")
    figures.false_positive_rate = scores.get("false_positive_rate")
    figures.seconds = time.monotonic() - started
    return figures


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=1000)
    p.add_argument("--fault-share", type=float, default=0.2)
    p.add_argument("--outage-share", type=float, default=0.02, help="share of prompts down for the first submission")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--shard-size", type=int, default=100)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--ray-address", help="Ray cluster to use (default: a local Ray per submission)")
    args = p.parse_args()
    settings = SuiteSettings(items=args.items, fault_share=args.fault_share, outage_share=args.outage_share,
                             workers=args.workers,
                             shard_size=args.shard_size, seed=args.seed, ray_address=args.ray_address)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="scrutineer-fault-suite-") as tmp:
        figures = run_fault_suite(Path(tmp), settings)
    print(f"Fault suite: {settings.items} items, llm_zero_shot via the replay server, "
          f"{settings.fault_share:.0%} of requests faulted ({', '.join(FAULTS)}), "
          f"{settings.outage_share:.0%} of prompts down for the first submission, "
          f"{settings.workers} workers, shards of {settings.shard_size}")  # fmt: skip
    print(figures.table())


if __name__ == "__main__":
    main()

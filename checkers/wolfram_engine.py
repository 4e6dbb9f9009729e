"""wolframscript as the first symbolic engine when it is installed; sympy otherwise.

Reference 002 (appendix A.2) runs symbolic equalities through wolframscript and falls back to
SymPy when it crashes. Here the expression handed to wolframscript is printed by sympy's own
Mathematica printer from an already-parsed sympy tree (never the raw input text), and it runs as a
subprocess with a timeout and no shell. `engine_note()` says which engine a result used and why.
"""

from __future__ import annotations

import shutil
import subprocess

import sympy as sp
from sympy.printing.mathematica import mathematica_code


def wolframscript_path() -> str | None:
    return shutil.which("wolframscript")


def engine_note() -> str:
    if wolframscript_path() is None:
        return "wolframscript not installed; sympy used"
    return "wolframscript used"


def wolfram_is_zero(expr: sp.Expr, timeout_s: float = 20.0) -> bool | None:
    """True/False when wolframscript's FullSimplify decides `expr == 0`; None when it cannot run."""
    path = wolframscript_path()
    if path is None:
        return None
    code = f"Print[FullSimplify[({mathematica_code(expr)}) == 0]]"
    try:
        done = subprocess.run(
            [path, "-code", code], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    answer = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
    if answer == ["True"]:
        return True
    if answer == ["False"]:
        return False
    return None

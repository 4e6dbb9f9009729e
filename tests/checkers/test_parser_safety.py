"""The whitelisted parser: what it reads, what it rejects, and proof that input is never executed."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

from checkers.latex_parser import Parser, Relation, parse, parse_expr
from checkers.registry import run_check
from checkers.result import CheckInputError
from tests.helpers.paths import REPO_ROOT

x, y = sp.symbols("x y")


@pytest.mark.parametrize(
    ("text", "syntax", "expected"),
    [
        (r"\frac{1}{2}x^2 + \sqrt{x}", "latex", x**2 / 2 + sp.sqrt(x)),
        (r"x^23", "latex", 3 * x**2),  # LaTeX: ^ takes one character
        (r"x**23", "plain", x**23),
        (r"\sqrt[3]{8}", "latex", sp.Integer(2)),
        (r"e^{x}", "latex", sp.exp(x)),
        (r"\left(x+y\right)\cdot 2", "latex", 2 * x + 2 * y),
        (r"0.7", "latex", sp.Rational(7, 10)),
        (r"\log_{10}(x)", "latex", sp.log(x, 10)),
        (r"\mathrm{Li}_2(x)", "latex", sp.polylog(2, x)),
        ("exp(x)*sqrt(y)", "plain", sp.exp(x) * sp.sqrt(y)),
    ],
)
def test_parses_to_the_expected_sympy_tree(text, syntax, expected):
    assert sp.simplify(parse_expr(text, syntax) - expected) == 0


def test_subscripts_and_relations():
    rel = parse(r"\log \alpha_{\rm CO} \le M_\star + R_{e}")
    assert isinstance(rel, Relation) and rel.op == "<="
    assert {s.name for s in rel.rhs.free_symbols} == {"M_star", "R_e"}
    assert rel.lhs == sp.log(sp.Symbol("alpha_CO"))


def test_huge_numeric_power_is_built_unevaluated():
    value = parse_expr(r"10^{10^{10}}")
    assert isinstance(value, sp.Pow) and value.exp == 10**10


@pytest.mark.parametrize(
    ("text", "syntax", "message"),
    [
        ("__import__('os').system('id')", "plain", "not allowed"),
        ("os.system", "plain", "not allowed"),
        ("(lambda: 1)()", "plain", "not allowed"),
        ("x" * 6000, "plain", "longer than"),
        ("(" * 100 + "x" + ")" * 100, "plain", "nested deeper"),
        (r"\input{/etc/passwd}", "latex", "not supported"),
        ("1" * 100, "plain", "digits"),
        ("x; y", "plain", "not allowed"),
        ('"x"', "plain", "not allowed"),
    ],
)
def test_rejects(text, syntax, message):
    with pytest.raises(CheckInputError, match=message):
        parse(text, syntax)


def _attacks(marker: Path) -> list[dict]:
    code = f"__import__('os').system('touch {marker}')"
    return [
        {"kind": "math.equality", "lhs": code, "rhs": "1", "syntax": "plain"},
        {"kind": "math.equality", "lhs": f"exec(compile('open(\"{marker}\",\"w\")','x','exec'))", "rhs": "1"},
        {"kind": "math.equality", "lhs": "x", "rhs": "x", "definitions": {"x": code}, "syntax": "plain"},
        {"kind": "math.equality", "lhs": "x", "rhs": "x", "domain": {code: [0, 1]}},
        {
            "kind": "math.equality",
            "lhs": "f(x)",
            "rhs": "f(x)",
            "functions": ["__import__"],
            "syntax": "plain",
        },
        {"kind": "units.dimensions", "equation": "E = m", "units": {"E": code, "m": "kg"}},
        {"kind": "numerics.ratio", "numerator": code, "denominator": "1", "stated": "1"},
        {"kind": "math.equality", "lhs": "system(x)", "rhs": "1", "syntax": "plain"},  # inert: a product
    ]


def test_nothing_is_executed_in_process(tmp_path):
    marker = tmp_path / "pwned"
    for attack in _attacks(marker):
        kind = attack.pop("kind")
        result = run_check(kind, attack)
        assert result.outcome in ("error", "refuted"), (attack, result)
        if result.outcome == "refuted":  # inert: parsed as the product of symbols system and x
            assert result.evidence["lhs"] == "system*x"
    assert not marker.exists()


@pytest.mark.integration
def test_nothing_is_executed_through_the_cli(tmp_path):
    marker = tmp_path / "pwned"
    attacks = _attacks(marker)
    done = subprocess.run([sys.executable, "jobs/check.py", "--timeout", "30"], input=json.dumps(attacks),
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    outcomes = [json.loads(line)["outcome"] for line in done.stdout.splitlines()]
    assert outcomes == ["error"] * 7 + ["refuted"]
    assert not marker.exists()


def test_checkers_room_never_evaluates_strings():
    """A static guard over the code (not the prose) of checkers/: no call of eval, exec, compile,
    __import__, sympify, lambdify, parse_latex, and no import of sympy.parsing."""
    banned_names = {"eval", "exec", "compile", "__import__", "sympify", "lambdify", "parse_latex", "S"}
    banned_attributes = {"sympify", "lambdify", "parse_latex", "S"}  # sp.S(...) is sympify
    offenders = []
    for path in sorted((REPO_ROOT / "checkers").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name, attr = getattr(node.func, "id", None), getattr(node.func, "attr", None)
                if name in banned_names or attr in banned_attributes:
                    offenders.append(f"{path.name}:{node.lineno} {name or attr}()")
            if isinstance(node, ast.ImportFrom | ast.Import):
                modules = (
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                )
                offenders += [
                    f"{path.name}:{node.lineno} import {m}" for m in modules if "sympy.parsing" in m
                ]
    assert offenders == []


def test_random_token_soup_only_ever_raises_check_input_error():
    """2,000 seeded random strings from the grammar's own pieces: a parse or a CheckInputError,
    never another exception (which would surface as an engine failure instead of `error`)."""
    import random

    pieces = ["x", "y", "1", "2.5", "+", "-", "*", "/", "^", "_", "(", ")", "{", "}", "[", "]", r"\frac",
              r"\sqrt", r"\sum", r"\prod", r"\left(", r"\right)", "=", "<", r"\le", r"\log", r"\exp",
              r"\mathrm{B}", r"\mathrm{Li}", ",", "!", "e", r"\infty", r"\alpha", r"\cdot", " ", "n=1", "^{", "_{"]  # fmt: skip
    rng = random.Random(7)
    parsed = 0
    for _ in range(1000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
        for syntax in ("latex", "plain"):
            try:
                parse(text, syntax)
                parsed += 1
            except CheckInputError:
                pass
    assert parsed > 100  # the soup is not all rejected: the parser is exercised on both paths


def test_calculus_token_soup_only_ever_raises_check_input_error():
    """The same soup with the calculus and paper pieces (issue 15): integrals, limits, derivatives,
    cases, bars, macros' leftovers. A parse or a CheckInputError (UnsureParse included), nothing else."""
    import random

    pieces = ["x", "y", "1", "+", "-", "^", "_", "(", ")", "{", "}", "=", r"\frac", r"\int", "dx", r"\mathrm{d}",
              r"\lim", r"\to", r"\partial", r"\sum", r"\prod", "n=1", r"\nabla", "|", r"\vert", "&", r"\\",
              r"\begin{cases}", r"\end{cases}", r"\underset", r"\stackrel", "'", r"^\prime", r"\equiv", ":=",
              r"\left.", r"\qty", ",", r"\infty", "d", " "]  # fmt: skip
    rng = random.Random(11)
    parsed = 0
    for _ in range(1500):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 8)))
        for coordinates in ((), ("x", "y")):
            try:
                Parser(text, functions=("f",), coordinates=coordinates).parse_chain()
                parsed += 1
            except CheckInputError:
                pass
    assert parsed > 50  # some readings succeed, so the new paths are exercised, not all rejected


@pytest.mark.parametrize("text", ["\u0663", "x^\u0662", "\uff13x", "1\u0967", "\U0001d7d9+x"])
@pytest.mark.parametrize("syntax", ["latex", "plain"])
def test_unicode_digits_are_rejected_as_the_docstring_says(text, syntax):
    # Arabic-Indic '٣', fullwidth '３', Devanagari '१', mathematical '𝟙': not ASCII digits
    with pytest.raises(CheckInputError, match="is not allowed"):
        parse_expr(text, syntax)

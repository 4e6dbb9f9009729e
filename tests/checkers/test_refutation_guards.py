"""Issue 15: a refutation needs a parse with no ambiguity and the independent numeric route's agreement."""

from __future__ import annotations

import pytest
import sympy as sp

from checkers import math_checks
from checkers.latex_parser import Parser, UnsureParse, parse
from checkers.numeric_route import value_at
from checkers.registry import run_check

x, y, n = sp.symbols("x y n")


@pytest.mark.parametrize(
    ("expr", "point", "expected"),
    [
        (sp.Derivative(sp.sin(x**2), x), {x: sp.Rational(1, 2)}, float(2 * 0.5 * sp.cos(0.25))),
        (sp.Derivative(x**3 * y, x, y), {x: 2, y: 5}, 12.0),
        (sp.Integral(x**2, (x, 0, 1)), {}, 1 / 3),
        (sp.Integral(sp.exp(-(x**2)), (x, -sp.oo, sp.oo)), {}, float(sp.sqrt(sp.pi))),
        (sp.Limit(sp.sin(x) / x, x, 0), {}, 1.0),
        (sp.Sum(1 / n**2, (n, 1, sp.oo)), {}, float(sp.pi**2 / 6)),
        (sp.Sum(n, (n, 1, 10)) * y, {y: 2}, 110.0),
    ],
)
def test_the_numeric_route_computes_calculus_without_the_symbolic_engine(expr, point, expected):
    value = value_at(expr, point)
    assert value is not None and abs(complex(value) - expected) < 1e-6 * max(1.0, abs(expected))


def test_the_numeric_route_answers_none_where_it_cannot_evaluate():
    f = sp.Function("f")
    assert value_at(sp.Integral(x, x), {x: 1}) is None  # indefinite
    assert value_at(sp.Derivative(f(x), x), {x: 1}) is None  # an unknown function
    assert value_at(sp.Limit(sp.sin(1 / x), x, 0), {}) is None  # does not settle


def test_no_refutation_when_the_numeric_route_disagrees_or_cannot_evaluate(monkeypatch):
    payload = {"statement": r"\frac{d}{dx}\sin(x^2) = 3x\cos(x^2)"}
    assert run_check("math.statement", payload).outcome == "refuted"
    monkeypatch.setattr(math_checks, "value_at", lambda expr, point: sp.Float(1))  # the routes disagree
    result = run_check("math.statement", payload)
    assert result.outcome == "inconclusive" and "numeric route finds the sides equal" in result.reason
    monkeypatch.setattr(math_checks, "value_at", lambda expr, point: None)
    result = run_check("math.statement", payload)
    assert result.outcome == "inconclusive" and "cannot evaluate" in result.reason


@pytest.mark.parametrize(
    ("statement", "ambiguity"),
    [
        (r"S(\omega) = 2\omega", "S(...) read as a product"),
        (r"\log 100 = 2", "\\log of unstated base"),
        (r"e^{i x} = \cos x + i \sin x", "imaginary unit"),
        (r"\mathbf{A}^T \mathbf{b} = \mathbf{b}^T \mathbf{A} + 1", "vector or a matrix"),
    ],
)
def test_ambiguous_parses_are_never_refuted(statement, ambiguity):
    result = run_check("math.statement", {"statement": statement})
    assert result.outcome == "inconclusive", result
    assert any(ambiguity in a for a in result.evidence.get("ambiguities", [])), result.evidence


def test_a_stated_log_base_removes_the_ambiguity():
    assert run_check("math.statement", {"statement": r"\log 100 = 2", "log_base": 10}).outcome == "confirmed"
    assert run_check("math.statement", {"statement": r"\log_{10} 100 = 3"}).outcome == "refuted"


@pytest.mark.parametrize(
    "text",
    [
        r"\frac{df}{dx}",  # f may depend on x implicitly
        r"\partial_x V",
        r"y'(x)",  # undeclared function
        r"\sum_{i=1}^{n} a_i",  # a sequence
        r"\sum_i x",  # no index range
        r"\int f(x)",  # no differential
        r"\int_0^1 d x\, d y",  # two differentials
        r"\lim_{x} f",  # no arrow
        r"\nabla f",  # no coordinates
        r"\begin{pmatrix} a \end{pmatrix}",
        r"\mathrm{Re}(z)",
        r"\frac{\delta F}{\delta \phi}",
    ],
)
def test_notation_the_parser_cannot_read_with_confidence_is_unsure(text):
    with pytest.raises(UnsureParse):
        parse(text)


def test_a_statement_must_use_every_token():
    assert run_check("math.statement", {"statement": r"x + 1 = x + 2 )"}).outcome == "error"
    assert run_check("math.statement", {"statement": r"x = x = x + 1 + }"}).outcome == "error"


def test_definitions_and_derivations_are_not_identities():
    for text in (
        r"k = 2\pi/\lambda",
        r"k := 2\pi/\lambda",
        r"\mathcal{M} \equiv m^{3/5}",
        r"x \stackrel{\text{def}}{=} y + 1",
    ):
        assert run_check("math.statement", {"statement": text}).outcome == "skipped", text
    chain = r"\frac{U}{k\nu} = 1 \Rightarrow U = k\nu"
    assert run_check("math.statement", {"statement": chain}).outcome == "inconclusive"
    assert run_check("math.equality", {"lhs": "k", "rhs": r"2\pi/\lambda"}).outcome == "skipped"


def test_printed_precision_sets_the_tolerance():
    assert run_check("math.statement", {"statement": r"\sqrt{2} = 1.41"}).outcome == "confirmed"
    assert run_check("math.statement", {"statement": r"\sqrt{2} = 1.5"}).outcome == "refuted"
    assert run_check("math.statement", {"statement": r"\sqrt{2} = 1.4142"}).outcome == "confirmed"
    assert run_check("math.statement", {"statement": r"\sqrt{2} = 1.4152"}).outcome == "refuted"


def test_leibniz_prime_and_partial_forms_build_derivatives():
    assert parse(r"\frac{d^2}{dx^2} x^3").equals(sp.Derivative(x**3, (x, 2)))
    f = sp.Function("f")
    assert Parser(r"f'(x)", functions=("f",)).parse_expr() == sp.Derivative(f(x), x)
    assert Parser(r"f^{\prime\prime}(y)", functions=("f",)).parse_expr() == sp.Derivative(f(y), (y, 2))
    assert Parser(r"\frac{df}{dx}", functions=("f",)).parse_expr() == sp.Derivative(f(x), x)
    result = run_check("math.statement", {"statement": r"f'(x) = 2x", "functions": ["f"]})
    assert result.outcome == "inconclusive"  # an unknown f is never evaluated

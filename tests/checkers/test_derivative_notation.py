"""Issue 15: calculus notation is read; a parse the parser cannot trust never refutes."""

from __future__ import annotations

import pytest
import sympy as sp

from checkers.registry import run_check


@pytest.mark.parametrize(
    ("statement", "outcome"),
    [
        ("\\frac{d}{dx}\\sin(x^2) = 2x\\cos(x^2)", "confirmed"),  # was read as sin(x^2)/x and refuted
        ("\\frac{d}{dx}\\sin(x^2) = 3x\\cos(x^2)", "refuted"),
        ("\\frac{\\mathrm{d}}{\\mathrm{d}t} e^{t} = e^{t}", "confirmed"),
        ("\\frac{\\partial^2 (x^2 y^3)}{\\partial x \\partial y} = 6 x y^2", "confirmed"),
        ("\\partial_x (x^2 y) = 2xy", "confirmed"),
        ("\\frac{df}{dx} = 2x", "inconclusive"),  # f may depend on x implicitly
        ("\\frac{d^2 y}{dx^2} = -y", "inconclusive"),
        ("\\int_0^1 x^2\\,dx = \\frac{1}{3}", "confirmed"),
        ("\\int_0^1 x^2\\,dx = \\frac{1}{2}", "refuted"),
        ("\\int \\cos x \\, \\mathrm{d}x = \\sin x + C", "confirmed"),
        ("\\int \\cos x \\, \\mathrm{d}x = -\\sin x", "refuted"),
        ("\\lim_{x\\to 0} \\frac{\\sin x}{x} = 1", "confirmed"),
        ("\\underset{x \\to 0}{\\lim} \\frac{\\sin x}{x} = 2", "refuted"),
        ("\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}", "confirmed"),
        ("\\sum_{i=1}^{n} x_i = n x_i", "inconclusive"),  # a sequence, not a symbol
        ("\\prod_{k=1}^{n} k = n!", "confirmed"),
        ("|x| = \\begin{cases} x & x \\ge 0 \\\\ -x & x < 0 \\end{cases}", "confirmed"),
        ("k(\\tau) = 2\\tau", "inconclusive"),  # k(tau) read as a product: never refuted
        ("a := b + 1", "skipped"),
        ("\\mathbf{G}^T \\mathbf{p} = \\mathbf{G}^T \\mathbf{h}", "inconclusive"),
    ],
)
def test_statement_outcomes(statement, outcome):
    assert run_check("math.statement", {"statement": statement}).outcome == outcome


def test_bounds_are_one_group_each_and_package_derivatives_are_read():
    from checkers.latex_parser import parse_expr

    x = sp.Symbol("x")
    assert parse_expr(r"\int_{-\infty}^\infty e^{-x^2} dx") == sp.Integral(
        sp.exp(-(x**2)), (x, -sp.oo, sp.oo)
    )
    assert parse_expr(r"\int_{0.9}^{1.0} x\,dx") == sp.Integral(x, (x, sp.Rational(9, 10), 1))
    assert (
        run_check(
            "math.statement", {"statement": r"\int_{-\infty}^{\infty} e^{-x^2} dx = \sqrt{\pi}"}
        ).outcome
        == "confirmed"
    )
    assert run_check("math.statement", {"statement": r"\dv[2]{x^3}{x} = 6x"}).outcome == "confirmed"
    assert run_check("math.statement", {"statement": r"\dv{x}(x^3) = 2x^2"}).outcome == "refuted"
    assert run_check("math.statement", {"statement": r"\dv{a}{t}_{e=0} = 1"}).outcome == "inconclusive"


def test_nabla_over_declared_coordinates_and_macros_from_the_preamble():
    grad = {"statement": "\\nabla (x^2 + y^2) = (2x, 2y)", "coordinates": ["x", "y"]}
    assert run_check("math.statement", grad).outcome == "confirmed"
    assert run_check("math.statement", {"statement": "\\nabla (x^2) = 2x"}).outcome == "inconclusive"
    preamble = "\\newcommand{\\dd}{\\ensuremath{\\,\\mathrm{d}}}\\newcommand{\\sq}[1]{{#1}^2}\\def\\half{\\frac{1}{2}}"
    payload = {"statement": "\\int_0^1 \\sq{x} \\dd x = \\half - \\frac{1}{6}", "preamble": preamble}
    assert run_check("math.statement", payload).outcome == "confirmed"


@pytest.mark.parametrize(
    ("lhs", "rhs", "outcome"),
    [
        ("\\frac{a}{b}", "a/b", "confirmed"),
        ("\\frac{dx}{2}", "dx/2", "confirmed"),  # a product d*x over a number is not Leibniz notation
        ("\\frac{d}{2}", "d/2", "confirmed"),
        ("\\frac{1}{2} + \\frac{1}{3}", "\\frac{5}{7}", "refuted"),
    ],
)
def test_ordinary_fractions_are_still_checked(lhs, rhs, outcome):
    assert run_check("math.equality", {"lhs": lhs, "rhs": rhs}).outcome == outcome


def test_injection_equivalence_reads_calculus_through_the_numeric_route():
    from checkers.equivalence import same_at_sample_points

    assert same_at_sample_points(r"\frac{d}{dx} x^2", "2x")  # an edit to this form changes nothing
    assert same_at_sample_points(r"\int_0^1 x\,dx", r"\frac{1}{2}")
    assert not same_at_sample_points(r"\frac{d}{dx} x^2", "3x")
    assert not same_at_sample_points(r"\frac{df}{dx}", "0")  # unsure parse: cannot tell, never "same"

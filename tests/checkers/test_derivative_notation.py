"""Issue 15: a parse the parser cannot trust never refutes (Leibniz derivatives are inconclusive)."""

from __future__ import annotations

import pytest

from checkers.registry import run_check


@pytest.mark.parametrize(("lhs", "rhs"), [
    ("\\frac{d}{dx}\\sin(x^2)", "2x\\cos(x^2)"),      # true; was read as sin(x^2)/x and refuted
    ("\\frac{d}{dx}\\sin(x^2)", "3x\\cos(x^2)"),      # false, but the parser cannot tell either
    ("\\frac{df}{dx}", "2x"),
    ("\\frac{d^2 y}{dx^2}", "-y"),
    ("\\frac{\\mathrm{d}}{\\mathrm{d}t} e^{t}", "e^{t}"),
])
def test_derivatives_are_inconclusive_never_refuted(lhs, rhs):
    result = run_check("math.equality", {"lhs": lhs, "rhs": rhs})
    assert result.outcome == "inconclusive" and "derivative" in result.reason


@pytest.mark.parametrize(("lhs", "rhs", "outcome"), [
    ("\\frac{a}{b}", "a/b", "confirmed"),
    ("\\frac{dx}{2}", "dx/2", "confirmed"),  # a product d*x over a number is not Leibniz notation
    ("\\frac{d}{2}", "d/2", "confirmed"),
    ("\\frac{1}{2} + \\frac{1}{3}", "\\frac{5}{7}", "refuted"),
])
def test_ordinary_fractions_are_still_checked(lhs, rhs, outcome):
    assert run_check("math.equality", {"lhs": lhs, "rhs": rhs}).outcome == outcome

"""Units and numerics beyond appendix C: dimension rules, printed precision, severity, outcomes."""

from __future__ import annotations

import pytest

from checkers.printed_number import read_number
from checkers.registry import run_check
from checkers.result import OUTCOMES, CheckResult

UNITS = {"E": "J", "m": "kg", "c": "m/s", "p": "kg*m/s", "v": "m/s", "t": "s"}


@pytest.mark.parametrize(
    ("equation", "outcome", "problem"),
    [
        ("E = m c^2 + p c", "confirmed", None),
        ("E = m c^2 + p", "refuted", "but `p` has [mass] * [length] / [time]"),
        (r"E = m c^2 \exp(v)", "refuted", "argument of exp"),
        (r"E = m c^2 \exp(v t / (c t))", "confirmed", None),
        (r"E = m v^{t}", "refuted", "exponent `t`"),
        ("E = m c", "refuted", "left side"),
    ],
)
def test_dimension_rules(equation, outcome, problem):
    result = run_check("units.dimensions", {"equation": equation, "units": UNITS})
    assert result.outcome == outcome, result
    assert result.engine == "pint"
    if problem:
        assert problem in result.reason


def test_units_skipped_without_declarations_and_error_on_unknown_unit():
    assert run_check("units.dimensions", {"equation": "E = m"}).outcome == "skipped"
    bad = run_check("units.dimensions", {"equation": "E = m", "units": {"E": "flurbs"}})
    assert bad.outcome == "error" and "flurbs" in bad.reason


def test_undeclared_symbols_are_listed():
    result = run_check("units.dimensions", {"equation": "E = k m c^2", "units": UNITS})
    assert result.outcome == "confirmed"
    assert result.evidence["assumed_dimensionless"] == ["k"]


@pytest.mark.parametrize(
    ("text", "value", "half", "unit", "approx"),
    [
        ("∼290k", 290_000, 500, "", True),
        ("47,279", 47_279, 0.5, "", False),
        ("0.34", 0.34, 0.005, "", False),
        ("−1.5", -1.5, 0.05, "", False),
        ("1.2e5", 120_000, 5_000, "", False),
        (r"3.9\times10^{4}", 39_000, 500, "", False),
        ("40%", 40, 0.5, "%", False),
        ("about 13 hours", 13, 0.5, "hours", True),
    ],
)
def test_printed_numbers(text, value, half, unit, approx):
    number = read_number(text)
    assert number.value == pytest.approx(value)
    assert number.half_unit == pytest.approx(half)
    assert (number.unit, number.approx) == (unit, approx)


@pytest.mark.parametrize(
    ("kind", "payload", "outcome", "severity"),
    [
        ("numerics.table_row_total", {"values": ["12", "30", "58"], "total": "100"}, "confirmed", None),
        ("numerics.table_row_total", {"values": ["12", "30", "58"], "total": "103"}, "refuted", "low"),
        ("numerics.sum_total", {"values": ["1.25", "2.25"], "total": "3.5"}, "confirmed", None),
        ("numerics.percentage_of", {"percent": "12%", "of": "250", "stated": "30"}, "confirmed", None),
        ("numerics.percentage_of", {"percent": "12%", "of": "250", "stated": "300"}, "refuted", "high"),
        (
            "numerics.difference",
            {"minuend": "5 km", "subtrahend": "300 m", "stated": "4.7 km"},
            "confirmed",
            None,
        ),
        (
            "numerics.difference",
            {"minuend": "5.0", "subtrahend": "3.0", "stated": "2.5"},
            "refuted",
            "medium",
        ),
        ("numerics.rounded_value", {"value": "0.3449", "rounded": "0.34"}, "confirmed", None),
        ("numerics.rounded_value", {"value": "0.3461", "rounded": "0.34"}, "refuted", "low"),
        (
            "numerics.percentages_sum",
            {"percentages": ["30%", "50%"], "relation": "at_most"},
            "confirmed",
            None,
        ),
        ("numerics.integer_equality", {"values": ["3.5", "3.5"]}, "error", None),
        ("numerics.ratio", {"numerator": "13 h", "denominator": "4 kg", "stated": "3"}, "error", None),
    ],
)
def test_numerics_kinds(kind, payload, outcome, severity):
    result = run_check(kind, payload)
    assert result.outcome == outcome, result
    assert result.severity == severity


def test_every_result_is_one_of_six_outcomes():
    assert OUTCOMES == ("confirmed", "refuted", "inconclusive", "error", "skipped", "unavailable")
    with pytest.raises(ValueError):
        CheckResult("x", "maybe")  # type: ignore[arg-type]
    unavailable = run_check("math.equality", {"lhs": "x", "rhs": "x", "engine": "wolframscript"})
    assert unavailable.outcome == "unavailable"  # wolframscript is not installed on this machine
    assert run_check("no.such.kind", {}).outcome == "error"


def test_inequality_and_approximation():
    assert run_check("math.inequality", {"statement": r"\sin x \le x"}).outcome == "confirmed"
    refuted = run_check("math.inequality", {"statement": r"x^2 \le x", "domain": {"x": [0.5, 3]}})
    assert refuted.outcome == "refuted" and refuted.evidence["counterexample"]["x"] > 1

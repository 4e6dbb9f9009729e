"""The eleven numerics check kinds of reference 002 (appendix A.3), each a fixed function.

Numbers arrive as printed (strings such as "∼290k", "47,279", "0.34", "13 h", "40%"); each carries
the precision its printing implies (see `checkers.printed_number`), and arithmetic runs on
intervals, so a statement is refuted only when no reading within printed precision makes it true.
Numbers marked approximate (∼, ≈, "about") are widened by `approx_tolerance` (relative, default
0.05). Quantities with units (`13 h` / `4 min`) are converted with pint before arithmetic.

Severity of a refuted check (fixed rule, from kind and size): `high` when the computed and printed
values differ by a factor of 3 or more (order of magnitude, digit swap into another scale), differ
in sign, or percentages miss their total by more than 5 points; `medium` when the relative
discrepancy exceeds 10% (or percentages miss by more than 1 point); `low` otherwise.
"""

from __future__ import annotations

from typing import Any

from checkers.printed_number import Interval, PrintedNumber, agree, read_number
from checkers.registry import check
from checkers.result import CheckInputError, CheckResult, Severity

COMMON_DOC = (
    "  numbers are strings as printed; optional approx_tolerance (0.05) widens numbers marked ∼/≈/about"
)


def severity(kind: str, computed: float, printed: float) -> Severity:
    gap = abs(computed - printed)
    if kind == "numerics.percentages_sum":
        return "high" if gap > 5 else "medium" if gap > 1 else "low"
    if computed * printed < 0:
        return "high"
    small, large = sorted((abs(computed), abs(printed)))
    if small == 0 or large / small >= 3:
        return "high"
    return "medium" if gap / large > 0.10 else "low"


def _approx(payload: dict[str, Any]) -> float:
    value = payload.get("approx_tolerance", 0.05)
    if not isinstance(value, int | float) or not 0 <= value < 1:
        raise CheckInputError("approx_tolerance must be a number in [0, 1)")
    return float(value)


def _number(payload: dict[str, Any], name: str) -> PrintedNumber:
    if name not in payload:
        raise CheckInputError(f"missing field {name!r}")
    return read_number(payload[name])


def _numbers(payload: dict[str, Any], name: str, minimum: int = 2) -> list[PrintedNumber]:
    raw = payload.get(name)
    if not isinstance(raw, list) or len(raw) < minimum or len(raw) > 1000:
        raise CheckInputError(f"{name} must be a list of at least {minimum} printed numbers")
    return [read_number(v) for v in raw]


def _base(number: PrintedNumber, approx: float) -> tuple[Interval, Any]:
    """The interval in SI base units, and those units (None when dimensionless or a percentage)."""
    interval = number.interval(approx)
    if number.unit in ("", "%"):
        return interval, None
    from checkers.unit_checks import registry

    try:
        one = registry().Quantity(1.0, number.unit).to_base_units()
    except Exception as exc:  # pint raises several error types for unknown units
        raise CheckInputError(f"unknown unit {number.unit!r}: {type(exc).__name__}") from None
    return interval.scale(float(one.magnitude)), one.units


def _verdict(kind: str, computed: Interval, printed: PrintedNumber, approx: float, what: str,
             extra: dict[str, Any] | None = None) -> CheckResult:  # fmt: skip
    stated = printed.interval(approx)
    evidence = {"computed": round(computed.mid, 12), "computed_interval": [computed.low, computed.high],
                "printed": printed.text, "printed_interval": [stated.low, stated.high], **(extra or {})}  # fmt: skip
    if computed.overlaps(stated):
        return CheckResult(kind, "confirmed", f"{what} agrees with the printed value within printed precision",
                           "python", evidence)  # fmt: skip
    evidence["discrepancy"] = computed.mid - printed.value
    return CheckResult(kind, "refuted", f"{what} is {computed.mid:.6g}, printed {printed.text}", "python", evidence,
                       severity(kind, computed.mid, printed.value))  # fmt: skip


def _sum_to_total(kind: str, payload: dict[str, Any]) -> CheckResult:
    approx = _approx(payload)
    values = _numbers(payload, "values")
    total = Interval(0.0, 0.0)
    for v in values:
        total = total + v.interval(approx)
    return _verdict(kind, total, _number(payload, "total"), approx, "the sum of the values")


SUM_DOC = "{values: [printed numbers], total: printed number}\n" + COMMON_DOC


@check("numerics.table_row_total", doc=SUM_DOC)
def check_table_row_total(payload: dict[str, Any]) -> CheckResult:
    return _sum_to_total("numerics.table_row_total", payload)


@check("numerics.table_column_total", doc=SUM_DOC)
def check_table_column_total(payload: dict[str, Any]) -> CheckResult:
    return _sum_to_total("numerics.table_column_total", payload)


@check("numerics.sum_total", doc=SUM_DOC)
def check_sum_total(payload: dict[str, Any]) -> CheckResult:
    return _sum_to_total("numerics.sum_total", payload)


@check("numerics.percentages_sum", doc="{percentages: ['40%', '75%'], total: '100' (default), "
       "relation: 'equal' | 'at_most'}\n" + COMMON_DOC)  # fmt: skip
def check_percentages_sum(payload: dict[str, Any]) -> CheckResult:
    kind = "numerics.percentages_sum"
    approx = _approx(payload)
    parts = _numbers(payload, "percentages", minimum=1)
    total = read_number(payload.get("total", "100"))
    relation = payload.get("relation", "equal")
    if relation not in ("equal", "at_most"):
        raise CheckInputError("relation must be 'equal' or 'at_most'")
    summed = Interval(0.0, 0.0)
    for p in parts:
        summed = summed + p.interval(approx)
    if relation == "at_most" and summed.low <= total.interval(approx).high:
        evidence = {"computed": summed.mid, "printed": total.text, "relation": relation}
        return CheckResult(kind, "confirmed", "the percentages do not exceed the total", "python", evidence)
    return _verdict(kind, summed, total, approx, "the sum of the percentages", {"relation": relation})


@check("numerics.percentage_of", doc="{percent: '12%', of: '250', stated: '30'}: stated = percent/100 * of\n"
       + COMMON_DOC)  # fmt: skip
def check_percentage_of(payload: dict[str, Any]) -> CheckResult:
    approx = _approx(payload)
    percent, whole = _base(_number(payload, "percent"), approx), _base(_number(payload, "of"), approx)
    stated = _number(payload, "stated")
    computed = percent[0].scale(0.01) * whole[0]
    return _verdict("numerics.percentage_of", computed, stated, approx, "percent × quantity")


def _quotient_or_difference(kind: str, payload: dict[str, Any], a: str, b: str, divide: bool) -> CheckResult:
    approx = _approx(payload)
    (first, first_units), (second, second_units) = (
        _base(_number(payload, a), approx),
        _base(_number(payload, b), approx),
    )
    stated = _number(payload, "stated")
    stated_interval, stated_units = _base(stated, approx)
    if divide:
        computed = first / second
        units = (first_units or 1) / (second_units or 1) if (first_units or second_units) else None
        if units is not None and not getattr(units, "dimensionless", False) and stated_units is None:
            raise CheckInputError(f"{a}/{b} has units {units} but the stated value has none")
    else:
        both = first_units is not None and second_units is not None
        if both and first_units.dimensionality != second_units.dimensionality:
            raise CheckInputError(f"cannot subtract {second_units} from {first_units}")
        computed = first - second
    printed = stated
    if stated_units is not None:  # compare in base units
        printed = PrintedNumber(
            stated.text, stated_interval.mid, (stated_interval.high - stated_interval.low) / 2
        )
        approx = 0.0
    what = f"{a} / {b}" if divide else f"{a} − {b}"
    return _verdict(kind, computed, printed, approx, what)


@check("numerics.ratio", doc="{numerator: '13 h', denominator: '4 min', stated: '∼200'}: units converted with pint\n"
       + COMMON_DOC)  # fmt: skip
def check_ratio(payload: dict[str, Any]) -> CheckResult:
    return _quotient_or_difference("numerics.ratio", payload, "numerator", "denominator", divide=True)


@check(
    "numerics.difference", doc="{minuend, subtrahend, stated}: stated = minuend − subtrahend\n" + COMMON_DOC
)
def check_difference(payload: dict[str, Any]) -> CheckResult:
    return _quotient_or_difference("numerics.difference", payload, "minuend", "subtrahend", divide=False)


def _all_agree(kind: str, values: list[PrintedNumber], approx: float, integers: bool) -> CheckResult:
    if integers:
        for v in values:
            if abs(v.value - round(v.value)) > 1e-9 * max(1.0, abs(v.value)):
                raise CheckInputError(f"{v.text!r} is not an integer")

    def same(a: PrintedNumber, b: PrintedNumber) -> bool:
        slack = approx * max(abs(a.value), abs(b.value)) if (a.approx or b.approx) else 0.0
        return agree(a, b) or abs(a.value - b.value) <= max(a.half_unit, b.half_unit) + slack

    reference = max(values, key=lambda v: sum(same(v, w) for w in values))
    outliers = [v for v in values if not same(v, reference)]
    evidence = {"values": [v.text for v in values], "reference": reference.text}
    if not outliers:
        return CheckResult(
            kind, "confirmed", "all printings agree within printed precision", "python", evidence
        )
    worst = max(outliers, key=lambda v: abs(v.value - reference.value))
    evidence.update(disagreeing=[v.text for v in outliers], discrepancy=worst.value - reference.value)
    return CheckResult(kind, "refuted", f"{worst.text} disagrees with {reference.text}", "python", evidence,
                       severity(kind, worst.value, reference.value))  # fmt: skip


@check("numerics.abstract_body", doc="{abstract: printed number, body: printed number}\n" + COMMON_DOC)
def check_abstract_body(payload: dict[str, Any]) -> CheckResult:
    values = [_number(payload, "abstract"), _number(payload, "body")]
    result = _all_agree("numerics.abstract_body", values, _approx(payload), integers=False)
    if result.outcome == "refuted":  # report from the body's point of view: the abstract is what is checked
        gap = values[0].value - values[1].value
        evidence = {
            **result.evidence,
            "reference": values[1].text,
            "disagreeing": [values[0].text],
            "discrepancy": gap,
        }
        return CheckResult(result.kind, "refuted", f"abstract {values[0].text} vs body {values[1].text}", "python",
                           evidence, severity(result.kind, values[0].value, values[1].value))  # fmt: skip
    return result


@check("numerics.integer_equality", doc="{values: [printed integers that must be equal, e.g. '∼290k', '290,000']}\n"
       + COMMON_DOC)  # fmt: skip
def check_integer_equality(payload: dict[str, Any]) -> CheckResult:
    return _all_agree(
        "numerics.integer_equality", _numbers(payload, "values"), _approx(payload), integers=True
    )


@check(
    "numerics.repeated_constant",
    doc="{values: [each printing of one constant across the paper]}\n" + COMMON_DOC,
)
def check_repeated_constant(payload: dict[str, Any]) -> CheckResult:
    return _all_agree(
        "numerics.repeated_constant", _numbers(payload, "values"), _approx(payload), integers=False
    )


@check(
    "numerics.rounded_value", doc="{value: more precise number, rounded: its printed rounding}\n" + COMMON_DOC
)
def check_rounded_value(payload: dict[str, Any]) -> CheckResult:
    value, rounded = _number(payload, "value"), _number(payload, "rounded")
    computed = Interval(value.value, value.value)
    exact = PrintedNumber(rounded.text, rounded.value, rounded.half_unit + value.half_unit * 1e-9)
    return _verdict("numerics.rounded_value", computed, exact, 0.0, f"{value.text} rounded")

"""A number as printed in a paper, with the precision its printing implies, and interval arithmetic.

`read_number("∼290k")` is 290000 ± 500 (approximate); `"0.34"` is 0.34 ± 0.005; `"47,279"` is
47279 ± 0.5; `"1.2e5"` and `"1.2\\times10^{5}"` are 120000 ± 5000; `"40%"` is 40 ± 0.5 with unit `%`;
`"13 h"` is 13 ± 0.5 hours (a pint unit). Trailing zeros of an integer are taken as significant.
An approximate marker (∼, ~, ≈, approximately, about, roughly) is recorded, and the checks widen
such a number by a relative tolerance. Values are plain floats: no expression evaluation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from checkers.result import CheckInputError

_APPROX = re.compile(
    r"^(?:∼|~|≈|\\sim|\\approx|approximately|approx\.?|about|roughly|around|nearly)\s*", re.I
)
_NUMBER = re.compile(
    r"^(?P<sign>[-+−–]?)\s*(?P<digits>\d{1,3}(?:[,\u2009\u202f]\d{3})+|\d+)?(?P<frac>\.\d+)?"
    r"(?:\s*(?:[eE](?P<exp>[-+−]?\d+)|(?:\\times|×|x)\s*10\^\{?(?P<exp2>[-+−]?\d+)\}?))?"
    r"\s*(?P<suffix>[kKMG](?![A-Za-z]))?\s*(?P<unit>.*)$"
)
_SUFFIX = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
_UNIT_CHARS = re.compile(r"[A-Za-z0-9_ */^().%\-]*")


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def __add__(self, other: Interval) -> Interval:
        return Interval(self.low + other.low, self.high + other.high)

    def __sub__(self, other: Interval) -> Interval:
        return Interval(self.low - other.high, self.high - other.low)

    def __mul__(self, other: Interval) -> Interval:
        products = [a * b for a in (self.low, self.high) for b in (other.low, other.high)]
        return Interval(min(products), max(products))

    def __truediv__(self, other: Interval) -> Interval:
        if other.low <= 0 <= other.high:
            raise CheckInputError("division by an interval that contains zero")
        return self * Interval(1 / other.high, 1 / other.low)

    def scale(self, factor: float) -> Interval:
        return Interval(
            min(self.low * factor, self.high * factor), max(self.low * factor, self.high * factor)
        )

    def overlaps(self, other: Interval) -> bool:
        return self.low <= other.high and other.low <= self.high

    @property
    def mid(self) -> float:
        return (self.low + self.high) / 2


@dataclass(frozen=True)
class PrintedNumber:
    text: str
    value: float
    half_unit: float
    """Half of one unit in the last printed place."""
    unit: str = ""
    approx: bool = False

    def interval(self, approx_rel: float = 0.0) -> Interval:
        spread = self.half_unit + (abs(self.value) * approx_rel if self.approx else 0.0)
        return Interval(self.value - spread, self.value + spread)


def read_number(text: str | int | float) -> PrintedNumber:
    """Parse one printed number (see module docstring); raises CheckInputError otherwise."""
    if isinstance(text, bool):
        raise CheckInputError("a boolean is not a number")
    if isinstance(text, int | float):
        text = repr(text)
    if not isinstance(text, str) or len(text) > 80:
        raise CheckInputError("a printed number must be a short string")
    raw = text.strip().replace("$", "").replace("{,}", "").replace("\\,", "").replace("\\%", "%")
    approx = bool(_APPROX.match(raw))
    raw = _APPROX.sub("", raw)
    m = _NUMBER.match(raw)
    if m is None or not (m.group("digits") or m.group("frac")):
        raise CheckInputError(f"cannot read a number from {text!r}")
    digits = re.sub(r"[,\u2009\u202f]", "", m.group("digits") or "0")
    frac = m.group("frac") or ""
    decimals = len(frac) - 1 if frac else 0
    value = float(digits + frac)
    half = 0.5 * 10.0**-decimals
    exp_text = m.group("exp") or m.group("exp2")
    if exp_text:
        factor = 10.0 ** int(exp_text.replace("−", "-"))
        value, half = value * factor, half * factor
    if m.group("suffix"):
        factor = _SUFFIX[m.group("suffix")]
        value, half = value * factor, half * factor
    if m.group("sign") in ("-", "−", "–"):
        value = -value
    unit = m.group("unit").strip()
    if not _UNIT_CHARS.fullmatch(unit):
        raise CheckInputError(f"unreadable unit {unit!r} in {text!r}")
    return PrintedNumber(text, value, half, unit, approx)


def agree(a: PrintedNumber, b: PrintedNumber) -> bool:
    """Do two printings of one quantity agree, rounding the more precise to the less precise?"""
    step = max(a.half_unit, b.half_unit)
    return abs(a.value - b.value) <= step * (1 + 1e-9)

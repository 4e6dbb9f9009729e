"""Random points in the declared domain of an expression's free symbols, and numeric comparison.

Every free symbol is sampled uniformly from its declared interval (default [0.1, 3]: physical
parameters are usually positive) as an exact rational, so evaluation does not depend on float
rounding of the inputs. Comparison is relative, at 30 significant digits, with `tolerance`.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import sympy as sp

from checkers.result import CheckInputError

DEFAULT_DOMAIN = (0.1, 3.0)
DIGITS = 30


@dataclass(frozen=True)
class Domain:
    """Sampling intervals per symbol name."""

    intervals: dict[str, tuple[float, float]]

    @classmethod
    def from_payload(cls, raw: Any, symbol_name) -> Domain:
        """`raw` maps a symbol (as written, e.g. `\\xi_M` or `xi_M`) to `[low, high]`."""
        if raw is None:
            return cls({})
        if not isinstance(raw, dict):
            raise CheckInputError("domain must map symbols to [low, high]")
        out: dict[str, tuple[float, float]] = {}
        for key, value in raw.items():
            if not (isinstance(value, list | tuple) and len(value) == 2
                    and all(isinstance(v, int | float) for v in value) and value[0] < value[1]):  # fmt: skip
                raise CheckInputError(f"domain of {key!r} must be [low, high] with low < high")
            out[symbol_name(key)] = (float(value[0]), float(value[1]))
        return cls(out)

    def interval(self, name: str) -> tuple[float, float]:
        return self.intervals.get(name, DEFAULT_DOMAIN)


def with_assumptions(expr: sp.Expr, domain: Domain) -> tuple[sp.Expr, dict[sp.Symbol, sp.Symbol]]:
    """Replace each free symbol by one carrying what its domain implies (positive or real; integer
    for a symbol used as a summation bound)."""
    mapping: dict[sp.Symbol, sp.Symbol] = {}
    bounds = {
        s
        for op in expr.atoms(sp.Sum, sp.Product)
        for lim in op.limits
        for s in lim[1:]
        if isinstance(s, sp.Symbol)
    }
    for sym in expr.free_symbols:
        if not isinstance(sym, sp.Symbol):
            continue
        low, _ = domain.interval(sym.name)
        kind = {"integer": True} if sym in bounds else {}
        mapping[sym] = (
            sp.Symbol(sym.name, positive=True, **kind) if low > 0 else sp.Symbol(sym.name, real=True, **kind)
        )
    return expr.xreplace(mapping), mapping


def sample_points(
    symbols: list[sp.Symbol], domain: Domain, count: int, seed: int
) -> list[dict[sp.Symbol, sp.Rational]]:
    rng = random.Random(seed)
    points = []
    for _ in range(count):
        point = {}
        for sym in sorted(symbols, key=lambda s: s.name):
            low, high = domain.interval(sym.name)
            if sym.is_integer:  # a summation bound: a whole number in the domain
                point[sym] = sp.Integer(rng.randint(math.ceil(low), max(math.ceil(low), math.floor(high))))
            else:
                point[sym] = sp.Rational(round((low + (high - low) * rng.random()) * 10_000), 10_000)
        points.append(point)
    return points


def numeric(expr: sp.Expr, point: dict[sp.Symbol, sp.Expr]) -> sp.Expr | None:
    """The value of `expr` at `point` to DIGITS digits, or None when undefined or not a number."""
    value = expr.evalf(DIGITS, subs={k: sp.Float(v, DIGITS) for k, v in point.items()})
    if value.has(sp.nan, sp.zoo) or not value.is_number or value.has(sp.Sum, sp.Product, sp.Limit):
        return None
    if value.is_infinite:
        return value
    return value


def close(a: sp.Expr, b: sp.Expr, tolerance: float) -> bool:
    if a.is_infinite or b.is_infinite:
        return bool(a == b)
    scale = max(1.0, abs(complex(a)), abs(complex(b)))
    return abs(complex(a) - complex(b)) <= tolerance * scale


def show_point(point: dict[sp.Symbol, sp.Expr]) -> dict[str, float]:
    return {sym.name: float(value) for sym, value in point.items()}


def show(value: sp.Expr | None) -> str:
    if value is None:
        return "undefined"
    return str(sp.N(value, 12)) if value.is_number else str(value)


def _approach_points(to: sp.Expr, direction: str) -> list[sp.Expr]:
    if to is sp.oo:
        return [sp.Integer(10) ** k for k in (3, 6, 9, 12)]
    if to is sp.S.NegativeInfinity:
        return [-(sp.Integer(10) ** k) for k in (3, 6, 9, 12)]
    step = [sp.Integer(10) ** -k for k in (3, 6, 9, 12)]
    return [to - s for s in step] if direction == "-" else [to + s for s in step]


def numeric_limit(expr: sp.Expr, var: sp.Symbol, to: sp.Expr, direction: str) -> sp.Expr | None:
    """A limit estimated from values approaching `to`, or None when they do not settle."""
    values = [numeric(expr, {var: t}) for t in _approach_points(to, direction)]
    if any(v is None or v.is_infinite for v in values):
        return None
    last, before = complex(values[-1]), complex(values[-2])
    if abs(last) > 1e8 and abs(last) > 100 * abs(before):
        if last.imag == 0 and before.imag == 0:
            return sp.oo if last.real > 0 else sp.S.NegativeInfinity
        return sp.zoo
    if abs(last - before) <= 1e-6 * (1 + abs(last)):
        return values[-1]
    return None

"""Dimensional analysis with pint (reference 002, appendix A.2): `units.dimensions`.

The statement is parsed with the same whitelisted parser; each symbol carries a declared unit
(`"m": "kg"`, `"c": "m/s"`) or is the decimal logarithm of a unit (`"M_\\star": "log10(Msun)"`, the
astronomer's M = log10(M/Msun)). Walking the sympy tree gives each node a dimension: linear
(pint units) or logarithmic (log of pint units). Rules: every term of a sum has one dimension (a
sum of logarithms is the logarithm of a product, a plain number in such a sum is log of 1);
arguments of exp, sin, ... and exponents are dimensionless; 10 raised to log10(U) is U; log(U)
is logarithmic in U; both sides of the equation agree. Undeclared symbols are taken as
dimensionless and listed in the evidence. Unit strings are read by pint's own unit parser (no
Python evaluation) after a character whitelist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sympy as sp

from checkers.latex_parser import Relation, parse, parse_expr
from checkers.registry import check
from checkers.result import CheckInputError, CheckResult

_UNIT_CHARS = re.compile(r"[A-Za-z0-9_ */^().\-]*")
_LOG_UNIT = re.compile(r"log(?:10)?\((.*)\)")
_EXTRA = ("Msun = 1.98847e30 * kilogram", "Lsun = 3.828e26 * watt", "Rsun = 6.957e8 * meter",
          "Zsun = []")  # fmt: skip


@lru_cache(maxsize=1)
def registry():
    import pint

    ureg = pint.UnitRegistry()
    for line in _EXTRA:
        ureg.define(line)
    return ureg


@dataclass(frozen=True)
class Dim:
    """A dimension: `units` (a pint Unit/Quantity), linear or as the argument of a logarithm."""

    units: Any
    log: bool = False

    @property
    def dimensionless(self) -> bool:
        return bool(self.units.dimensionless)

    def text(self) -> str:
        dims = "dimensionless" if self.dimensionless else str(self.units.dimensionality)
        return f"log({dims})" if self.log else dims

    def same(self, other: Dim) -> bool:
        if self.log == other.log:
            return self.units.dimensionality == other.units.dimensionality
        return self.dimensionless and other.dimensionless


class DimensionWalk:
    """Assigns a Dim to each node; records every inconsistency found."""

    def __init__(self, units: dict[str, Dim]) -> None:
        self.units = units
        self.one = Dim(registry().dimensionless)
        self.problems: list[str] = []
        self.assumed: set[str] = set()

    def dim(self, node: sp.Expr) -> Dim:
        if node.is_number and not node.has(sp.Symbol):
            return self.one
        if isinstance(node, sp.Symbol):
            if node.name not in self.units:
                self.assumed.add(node.name)
                return self.one
            return self.units[node.name]
        if isinstance(node, sp.Add):
            return self.add(node)
        if isinstance(node, sp.Mul):
            return self.mul(node)
        if isinstance(node, sp.Pow):
            return self.pow(node)
        if isinstance(node, sp.log):
            inner = self.dim(node.args[0])
            if inner.log:
                self.problems.append(f"logarithm of a logarithmic quantity in {node}")
            return Dim(inner.units, log=True)
        if isinstance(node, sp.Sum | sp.Product):
            body = self.dim(node.function)
            if isinstance(node, sp.Product) and not body.dimensionless:
                self.problems.append(f"product of dimensional factors {node}")
            return body
        if isinstance(node, sp.Function):
            for arg in node.args:
                self.require_dimensionless(arg, f"argument of {node.func.__name__}")
            return self.one
        raise CheckInputError(f"cannot assign dimensions to {type(node).__name__}")

    def require_dimensionless(self, node: sp.Expr, where: str) -> None:
        d = self.dim(node)
        if not d.dimensionless:
            self.problems.append(f"{where} `{node}` has dimension {d.text()}, expected dimensionless")

    def add(self, node: sp.Add) -> Dim:
        terms = [(term, self.dim(term)) for term in node.args]
        if any(d.log for _, d in terms):
            total = registry().dimensionless
            for term, d in terms:
                if d.log:
                    total = total * d.units
                elif not d.dimensionless:
                    self.problems.append(
                        f"term `{term}` has dimension {d.text()} in a sum of logarithmic terms"
                    )
            return Dim(total, log=True)
        first_term, first = terms[0]
        for term, d in terms[1:]:
            if not d.same(first):
                self.problems.append(
                    f"term `{term}` has dimension {d.text()} but `{first_term}` has {first.text()}"
                )
        return first

    def mul(self, node: sp.Mul) -> Dim:
        coeff, factors = node.as_coeff_mul()
        dims = [(f, self.dim(f)) for f in factors]
        logs = [(f, d) for f, d in dims if d.log]
        linear = registry().dimensionless
        for _, d in dims:
            if not d.log:
                linear = linear * d.units
        if not logs:
            return Dim(linear)
        if len(logs) > 1 or not Dim(linear).dimensionless:
            if any(not d.dimensionless for _, d in logs):
                self.problems.append(f"logarithm of a dimensional quantity multiplied in `{node}`")
            return self.one
        scale = coeff if coeff.is_Rational else sp.Integer(1)
        others = [f for f, d in dims if not d.log and not f.is_number]
        if others and not logs[0][1].dimensionless:
            self.problems.append(f"logarithm of a dimensional quantity scaled by symbols in `{node}`")
        return Dim(logs[0][1].units ** float(scale), log=True)

    def pow(self, node: sp.Pow) -> Dim:
        base, exp = node.args
        exp_dim = self.dim(exp)
        if base.is_number and not base.has(sp.Symbol):
            if exp_dim.log:  # 10**(log10 U) -> U
                return Dim(exp_dim.units)
            if not exp_dim.dimensionless:
                self.problems.append(f"exponent `{exp}` has dimension {exp_dim.text()}")
            return self.one
        base_dim = self.dim(base)
        if not exp_dim.dimensionless:
            self.problems.append(f"exponent `{exp}` has dimension {exp_dim.text()}")
        if base_dim.log:
            if not base_dim.dimensionless:
                self.problems.append(f"power of a logarithmic quantity `{node}`")
            return self.one
        if exp.is_Rational:
            return Dim(base_dim.units ** float(exp))
        if not base_dim.dimensionless:
            self.problems.append(f"dimensional base `{base}` raised to a symbolic power `{exp}`")
        return self.one


def _declared(raw: Any, syntax: str) -> dict[str, Dim]:
    if not isinstance(raw, dict) or not raw:
        return {}
    ureg = registry()
    out: dict[str, Dim] = {}
    for key, text in raw.items():
        name = parse_expr(key, syntax)
        if not isinstance(name, sp.Symbol):
            raise CheckInputError(f"unit key {key!r} is not a single symbol")
        if not isinstance(text, str) or not _UNIT_CHARS.fullmatch(text) or len(text) > 100:
            raise CheckInputError(f"unit of {key!r} must be a short unit string")
        log_match = _LOG_UNIT.fullmatch(text.strip())
        unit_text = log_match.group(1) if log_match else text
        try:
            units = (
                ureg.parse_units(unit_text.strip())
                if unit_text.strip() not in ("", "1")
                else ureg.dimensionless
            )
        except Exception as exc:  # pint raises several error types for unknown units
            raise CheckInputError(f"unknown unit {unit_text!r} for {key!r}: {type(exc).__name__}") from None
        out[name.name] = Dim(units, log=bool(log_match))
    return out


@check(
    "units.dimensions",
    doc="{equation: 'E = m c^2 + p c' (or an expression), units: {symbol: unit | 'log10(unit)'}, syntax}\n"
    "  units are pint names (kg, m/s, Msun, Lsun, yr, ...); '' is dimensionless; undeclared symbols are\n"
    "  taken as dimensionless and listed in the evidence",
)
def check_dimensions(payload: dict[str, Any]) -> CheckResult:
    syntax = payload.get("syntax", "latex")
    text = payload.get("equation")
    if not isinstance(text, str):
        raise CheckInputError("missing string field 'equation'")
    units = _declared(payload.get("units"), syntax)
    if not units:
        return CheckResult("units.dimensions", "skipped", "no units declared: nothing to check", "pint")
    statement = parse(text, syntax)
    walk = DimensionWalk(units)
    evidence: dict[str, Any] = {}
    if isinstance(statement, Relation):
        sides = {"lhs": statement.lhs, "rhs": statement.rhs}
        found = {side: walk.dim(expr) for side, expr in sides.items()}
        for side, expr in sides.items():
            if isinstance(expr, sp.Add):
                evidence[f"{side}_terms"] = {str(t): walk.dim(t).text() for t in expr.args}
        evidence.update({side: d.text() for side, d in found.items()})
        if not found["lhs"].same(found["rhs"]):
            walk.problems.append(
                f"left side is {found['lhs'].text()} but right side is {found['rhs'].text()}"
            )
    else:
        evidence["expression"] = walk.dim(statement).text()
        if isinstance(statement, sp.Add):
            evidence["terms"] = {str(t): walk.dim(t).text() for t in statement.args}
    evidence["assumed_dimensionless"] = sorted(walk.assumed)
    problems = list(dict.fromkeys(walk.problems))
    if problems:
        evidence["problems"] = problems
        return CheckResult("units.dimensions", "refuted", problems[0], "pint", evidence)
    return CheckResult(
        "units.dimensions", "confirmed", "every term and both sides agree in dimension", "pint", evidence
    )

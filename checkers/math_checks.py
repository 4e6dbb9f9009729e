"""Mechanical checks of mathematical statements (reference 002, appendix A.2, stage 3).

Kinds: `math.equality` (two sides or two expressions are equal), `math.series` (a sum or product
equals a closed form, every term defined), `math.limit` (a limit has the stated value),
`math.limiting_form` (a general form reduces to a stated limiting form), `math.approximation`
(`a \\approx b` as `var -> to`, i.e. lim a/b = 1) and `math.inequality` (holds at sample points).

Method: simplify the difference symbolically (wolframscript's FullSimplify when installed, sympy
otherwise); when free symbols remain, evaluate at ten random points of their declared domain. A
point where the two sides differ refutes, with the point as evidence; an exact zero residual or
agreement at every point confirms (the evidence says which); nothing evaluable is inconclusive.
"""

from __future__ import annotations

import re
from typing import Any

import sympy as sp

from checkers.latex_parser import Relation, UnsureParse, parse, parse_expr
from checkers.registry import check
from checkers.result import CheckInputError, CheckResult
from checkers.sampling import Domain, close, numeric, sample_points, show, show_point, with_assumptions
from checkers.time_budget import BudgetExceeded, time_budget
from checkers.wolfram_engine import engine_note, wolfram_is_zero, wolframscript_path

COMMON_DOC = (
    "  common optional fields: syntax ('latex' | 'plain'), log_base ('e' | 10), functions (names used as f(x)),\n"
    "  definitions {symbol: expression} substituted first, domain {symbol: [low, high]} (default [0.1, 3]),\n"
    "  points (10), seed (0), tolerance (1e-9 relative), engine ('auto' | 'sympy' | 'wolframscript')"
)


class MathInput:
    """The parsing settings and sampling options shared by every math check."""

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload
        self.syntax = payload.get("syntax", "latex")
        self.log_base = payload.get("log_base", "e")
        functions = payload.get("functions", [])
        if not isinstance(functions, list) or not all(
            isinstance(f, str) and re.fullmatch(r"\\?[A-Za-z][A-Za-z0-9_]{0,30}", f) for f in functions
        ):
            raise CheckInputError("functions must be a list of names (letters, digits, _)")
        self.functions = tuple(self.symbol_name(f) if f.startswith("\\") else f for f in functions)
        self.domain = Domain.from_payload(payload.get("domain"), self.symbol_name)
        self.points = int(payload.get("points", 10))
        self.seed = int(payload.get("seed", 0))
        self.tolerance = float(payload.get("tolerance", 1e-9))
        if not 1 <= self.points <= 100:
            raise CheckInputError("points must be between 1 and 100")
        self.engine = payload.get("engine", "auto")
        if self.engine not in ("auto", "sympy", "wolframscript"):
            raise CheckInputError("engine must be 'auto', 'sympy' or 'wolframscript'")
        self.definitions = self._definitions(payload.get("definitions", {}))

    def field(self, *names: str) -> str:
        for name in names:
            if isinstance(self.payload.get(name), str):
                return self.payload[name]
        raise CheckInputError(f"missing string field {' or '.join(repr(n) for n in names)}")

    def expr(self, text: str) -> sp.Expr:
        value = parse_expr(text, self.syntax, self.functions, self.log_base)
        return self.substitute(value)

    def relation(self, text: str) -> Relation:
        value = parse(text, self.syntax, self.functions, self.log_base)
        if not isinstance(value, Relation):
            raise CheckInputError("statement has no relation (=, <, >, \\le, \\ge, \\approx)")
        return Relation(self.substitute(value.lhs), value.op, self.substitute(value.rhs))

    def symbol_name(self, text: str) -> str:
        value = parse_expr(text, self.syntax)
        if not isinstance(value, sp.Symbol):
            raise CheckInputError(f"{text!r} is not a single symbol")
        return value.name

    def substitute(self, value: sp.Expr) -> sp.Expr:
        if not self.definitions:
            return value
        by_name = {s: self.definitions[s.name] for s in value.free_symbols if s.name in self.definitions}
        return value.xreplace(by_name) if by_name else value

    def _definitions(self, raw: Any) -> dict[str, sp.Expr]:
        if not isinstance(raw, dict):
            raise CheckInputError("definitions must map a symbol to an expression")
        return {
            self.symbol_name(k): parse_expr(v, self.syntax, self.functions, self.log_base)
            for k, v in raw.items()
        }

    def sides(self) -> tuple[sp.Expr, sp.Expr]:
        if "statement" in self.payload:
            rel = self.relation(self.field("statement"))
            if rel.op != "=":
                raise CheckInputError(f"an equality needs '=', found {rel.op!r}")
            return rel.lhs, rel.rhs
        return self.expr(self.field("lhs", "expr")), self.expr(self.field("rhs", "equals"))


def singular_terms(expr: sp.Expr) -> list[dict[str, str]]:
    """Terms of a sum or product that are undefined (e.g. 1/0 at a shifted lower bound)."""
    found = []
    for op in expr.atoms(sp.Sum, sp.Product):
        var, low, high = op.limits[0]
        if not low.is_Integer:
            continue
        for k in range(int(low), int(low) + 3):
            if high.is_Integer and k > int(high):
                break
            term = op.function.xreplace({var: sp.Integer(k)})
            if term.has(sp.zoo, sp.nan) or term.is_infinite:
                found.append({"operator": str(op), "index": f"{var.name}={k}", "term": str(term)})
                break
    return found


def _symbolic_zero(diff: sp.Expr, engine: str) -> tuple[bool | None, str, str]:
    """(is zero: True / False / None undecided, residual text, engine used)."""
    if engine != "sympy" and wolframscript_path() is not None:
        decided = wolfram_is_zero(diff)
        if decided is not None:
            return decided, "0" if decided else "nonzero", "wolframscript"
    residual = sp.simplify(diff.doit())
    if residual == 0:
        return True, "0", "sympy"
    if residual.is_number and not residual.has(sp.Sum, sp.Product, sp.Integral):
        value = sp.N(residual, 30)
        if value.is_number and value != 0 and not value.has(sp.nan):
            return False, str(residual), "sympy"
    return None, str(residual), "sympy"


def _unavailable(kind: str, engine: str) -> CheckResult | None:
    if engine == "wolframscript" and wolframscript_path() is None:
        return CheckResult(
            kind, "unavailable", "wolframscript was requested and is not installed", "wolframscript"
        )
    return None


def compare_sides(kind: str, inp: MathInput, lhs: sp.Expr, rhs: sp.Expr) -> CheckResult:
    """The equality method shared by `math.equality` and `math.series`."""
    if (missing := _unavailable(kind, inp.engine)) is not None:
        return missing
    pair, _ = with_assumptions(sp.Tuple(lhs, rhs), inp.domain)
    lhs, rhs = pair
    evidence: dict[str, Any] = {"lhs": str(lhs), "rhs": str(rhs), "engine_note": engine_note()}
    if bad := singular_terms(sp.Tuple(lhs, rhs)):
        evidence["undefined_terms"] = bad
        return CheckResult(kind, "refuted", f"term {bad[0]['index']} of {bad[0]['operator']} is undefined",
                           "sympy", evidence)  # fmt: skip
    zero, residual, engine = _symbolic_zero(lhs - rhs, inp.engine)
    if engine == "sympy" and wolframscript_path() is not None:
        evidence["engine_note"] = (
            "sympy requested"
            if inp.engine == "sympy"
            else "wolframscript failed or could not decide; sympy used"
        )
    evidence["residual"] = residual
    free = sorted((lhs - rhs).free_symbols, key=lambda s: s.name)
    evidence["symbols"] = [s.name for s in free]
    if zero is False and not free:
        return CheckResult(kind, "refuted", f"the two sides differ by {residual}", engine, evidence)
    evaluated = 0
    for point in sample_points(free, inp.domain, inp.points if free else 1, inp.seed):
        left, right = numeric(lhs, point), numeric(rhs, point)
        if left is None or right is None:
            continue
        evaluated += 1
        if not close(left, right, inp.tolerance):
            evidence.update(counterexample=show_point(point), lhs_value=show(left), rhs_value=show(right))
            if zero is True:
                return CheckResult(kind, "inconclusive", "simplification gives 0 but a sample point differs",
                                   engine, evidence)  # fmt: skip
            return CheckResult(kind, "refuted", "the two sides differ at a sample point", engine, evidence)
    evidence["points_evaluated"] = evaluated
    if zero is True:
        return CheckResult(kind, "confirmed", "the difference simplifies to 0", engine, evidence)
    if evaluated == 0:
        return CheckResult(kind, "inconclusive", "not simplified to 0 and no sample point could be evaluated",
                           engine, evidence)  # fmt: skip
    return CheckResult(kind, "confirmed", f"equal at all {evaluated} random points (residual not simplified to 0)",
                       engine, evidence)  # fmt: skip


@check("math.equality", doc="{lhs, rhs} or {statement: 'lhs = rhs'} (LaTeX by default)\n" + COMMON_DOC)
def check_equality(payload: dict[str, Any]) -> CheckResult:
    inp = MathInput(payload)
    try:
        lhs, rhs = inp.sides()
    except UnsureParse as exc:  # a parse the parser cannot trust decides nothing
        return CheckResult("math.equality", "inconclusive", f"not parsed with confidence: {exc}", "sympy", {})
    return compare_sides("math.equality", inp, lhs, rhs)


@check("math.series", doc="{series: '\\sum_{n=1}^{\\infty} ...', equals: closed form}; every term must be defined\n"
       + COMMON_DOC)  # fmt: skip
def check_series(payload: dict[str, Any]) -> CheckResult:
    inp = MathInput(payload)
    try:
        series, closed = inp.expr(inp.field("series")), inp.expr(inp.field("equals"))
    except UnsureParse as exc:
        return CheckResult("math.series", "inconclusive", f"not parsed with confidence: {exc}", "sympy", {})
    if not series.has(sp.Sum, sp.Product):
        raise CheckInputError("series has no \\sum or \\prod")
    return compare_sides("math.series", inp, series, closed)


def _approach_points(to: sp.Expr, direction: str) -> list[sp.Expr]:
    if to is sp.oo:
        return [sp.Integer(10) ** k for k in (3, 6, 9, 12)]
    if to is sp.S.NegativeInfinity:
        return [-(sp.Integer(10) ** k) for k in (3, 6, 9, 12)]
    step = [sp.Integer(10) ** -k for k in (3, 6, 9, 12)]
    return [to - s for s in step] if direction == "-" else [to + s for s in step]


def _numeric_limit(expr: sp.Expr, var: sp.Symbol, to: sp.Expr, direction: str) -> sp.Expr | None:
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


def _symbolic_limit(
    expr: sp.Expr, var: sp.Symbol, to: sp.Expr, direction: str, budget: float
) -> sp.Expr | None:
    try:
        with time_budget(budget):
            value = sp.limit(expr, var, to, direction)
    except (NotImplementedError, ValueError, TypeError, BudgetExceeded):
        return None
    if value.has(sp.Limit, sp.AccumBounds) or any(p.base == 0 for p in value.atoms(sp.Pow)):
        return None  # unevaluated, or 0**(symbol): sympy substituted instead of taking the limit
    return value


def _one_limit(expr: sp.Expr, var: sp.Symbol, to: sp.Expr, direction: str) -> tuple[sp.Expr | None, str]:
    """At one numeric point: values approaching `to` first (cheap), `sympy.limit` when they do not settle."""
    value = _numeric_limit(expr, var, to, direction)
    if value is not None:
        return value, "numeric approach"
    return _symbolic_limit(expr, var, to, direction, 3.0), "sympy.limit"


def compare_limit(kind: str, inp: MathInput, expr: sp.Expr, expected: sp.Expr) -> CheckResult:
    """Is lim_{var -> to} expr equal to expected (which may contain the other free symbols)?"""
    var_name = inp.symbol_name(inp.field("var"))
    to_raw = inp.expr(inp.field("to"))
    direction = inp.payload.get("dir", "+")
    if direction not in ("+", "-", "+-"):
        raise CheckInputError("dir must be '+', '-' or '+-'")
    triple, mapping = with_assumptions(sp.Tuple(expr, expected, to_raw), inp.domain)
    expr, expected, to = triple
    var = next((s for s in mapping.values() if s.name == var_name), sp.Symbol(var_name))
    if var not in expr.free_symbols:
        raise CheckInputError(f"{var_name} does not occur in the expression")
    evidence: dict[str, Any] = {"expr": str(expr), "expected": str(expected), "var": var_name,
                                "to": str(to), "dir": direction, "engine_note": engine_note()}  # fmt: skip
    others = sorted(
        (expr.free_symbols | expected.free_symbols | to.free_symbols) - {var}, key=lambda s: s.name
    )
    if len(others) <= 2:
        value, method = _symbolic_limit(expr, var, to, direction, 5.0), "sympy.limit"
        if value is not None and not value.free_symbols - set(others):
            if value.is_infinite:  # oo - expected does not simplify meaningfully: compare directly
                zero, residual = bool(value == expected), ""
            else:
                zero, residual, _ = _symbolic_zero(value - expected, "sympy")
            evidence.update(limit=str(value), method=method, residual=residual)
            if zero is True:
                return CheckResult(kind, "confirmed", f"the limit is {value}", "sympy", evidence)
            if zero is False and not others:
                return CheckResult(
                    kind, "refuted", f"the limit is {value}, not {expected}", "sympy", evidence
                )
    evaluated = 0
    for point in sample_points(others, inp.domain, inp.points if others else 1, inp.seed):
        at_expr, at_to = expr.xreplace(point), to.xreplace(point)
        value, method = _one_limit(at_expr, var, at_to, direction)
        want = numeric(expected, point) if expected.free_symbols else sp.N(expected, 30)
        if value is None or want is None:
            continue
        got = value if value.is_infinite else numeric(value, {})
        if got is None:
            continue
        evaluated += 1
        if not close(got, want, 1e-6):
            evidence.update(counterexample=show_point(point), limit_value=show(got), expected_value=show(want),
                            method=method)  # fmt: skip
            return CheckResult(kind, "refuted", "the limit differs from the stated value at a sample point",
                               "sympy", evidence)  # fmt: skip
    evidence["points_evaluated"] = evaluated
    if evaluated == 0:
        return CheckResult(
            kind, "inconclusive", "the limit could not be computed at any sample point", "sympy", evidence
        )
    return CheckResult(
        kind, "confirmed", f"the limit matches at all {evaluated} sample points", "sympy", evidence
    )


@check(
    "math.limit", doc="{expr, var, to ('0', '\\infty', ...), dir ('+' | '-' | '+-'), equals}\n" + COMMON_DOC
)
def check_limit(payload: dict[str, Any]) -> CheckResult:
    inp = MathInput(payload)
    return compare_limit("math.limit", inp, inp.expr(inp.field("expr")), inp.expr(inp.field("equals")))


@check("math.limiting_form", doc="{general, var, to, dir, limiting}: does lim general = limiting follow?\n"
       + COMMON_DOC)  # fmt: skip
def check_limiting_form(payload: dict[str, Any]) -> CheckResult:
    inp = MathInput(payload)
    return compare_limit(
        "math.limiting_form", inp, inp.expr(inp.field("general")), inp.expr(inp.field("limiting"))
    )


@check(
    "math.approximation",
    doc="{statement: 'a \\approx b', var, to, dir}: lim a/b = 1 as var -> to\n" + COMMON_DOC,
)
def check_approximation(payload: dict[str, Any]) -> CheckResult:
    inp = MathInput(payload)
    rel = inp.relation(inp.field("statement"))
    if rel.op not in ("~", "="):
        raise CheckInputError("an approximation needs \\approx, \\simeq or =")
    return compare_limit("math.approximation", inp, rel.lhs / rel.rhs, sp.Integer(1))


@check(
    "math.inequality",
    doc="{statement: 'lhs < rhs'} (<, >, \\le, \\ge): tested at sample points\n" + COMMON_DOC,
)
def check_inequality(payload: dict[str, Any]) -> CheckResult:
    inp = MathInput(payload)
    rel = inp.relation(inp.field("statement"))
    tests = {
        "<": lambda a, b: a < b,
        ">": lambda a, b: a > b,
        "<=": lambda a, b: a <= b,
        ">=": lambda a, b: a >= b,
    }
    if rel.op not in tests:
        raise CheckInputError(f"an inequality needs <, >, \\le or \\ge, found {rel.op!r}")
    pair, _ = with_assumptions(sp.Tuple(rel.lhs, rel.rhs), inp.domain)
    lhs, rhs = pair
    free = sorted((lhs - rhs).free_symbols, key=lambda s: s.name)
    evidence: dict[str, Any] = {
        "lhs": str(lhs),
        "op": rel.op,
        "rhs": str(rhs),
        "symbols": [s.name for s in free],
    }
    evaluated = 0
    for point in sample_points(free, inp.domain, inp.points if free else 1, inp.seed):
        left, right = numeric(lhs, point), numeric(rhs, point)
        if left is None or right is None or not (left.is_real and right.is_real):
            continue
        evaluated += 1
        if not tests[rel.op](left, right):
            evidence.update(counterexample=show_point(point), lhs_value=show(left), rhs_value=show(right))
            return CheckResult("math.inequality", "refuted", "violated at a sample point", "sympy", evidence)
    evidence["points_evaluated"] = evaluated
    if evaluated == 0:
        return CheckResult(
            "math.inequality", "inconclusive", "no sample point could be evaluated", "sympy", evidence
        )
    how = "exactly (no free symbols)" if not free else f"at all {evaluated} sample points (not a proof)"
    return CheckResult("math.inequality", "confirmed", f"holds {how}", "sympy", evidence)

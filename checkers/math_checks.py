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
from contextlib import nullcontext
from dataclasses import replace
from typing import Any

import sympy as sp

from checkers.latex_macros import expand_macros, parse_macros
from checkers.latex_parser import Parser, Relation, UnknownCommand, UnsureParse, parse_chain, parse_expr
from checkers.numeric_route import value_at
from checkers.registry import check
from checkers.result import CheckInputError, CheckResult
from checkers.sampling import (
    Domain,
    close,
    numeric,
    numeric_limit,
    sample_points,
    show,
    show_point,
    with_assumptions,
)
from checkers.time_budget import BudgetExceeded, time_budget
from checkers.wolfram_engine import engine_note, wolfram_is_zero, wolframscript_path

COMMON_DOC = (
    "  common optional fields: syntax ('latex' | 'plain'), log_base ('e' | 10), functions (names used as f(x)),\n"
    "  definitions {symbol: expression} substituted first, domain {symbol: [low, high]} (default [0.1, 3]),\n"
    "  points (10), seed (0), tolerance (1e-9 relative), engine ('auto' | 'sympy' | 'wolframscript'),\n"
    "  coordinates (names for \\nabla), preamble (LaTeX whose \\newcommand/\\def macros are expanded first)"
)
PAPER_BUDGET_S = 10.0
"""Soft budget of one symbolic step (simplify, doit) in `math.statement`: a real paper's statement must not
hold a worker; the older kinds keep only the sandbox's hard limit."""


class MathInput:
    """The parsing settings and sampling options shared by every math check."""

    def __init__(self, payload: dict[str, Any], paper: bool = False) -> None:
        self.payload = payload
        self.ambiguities: list[str] = []
        # In paper statements an unstated \log base is an ambiguity (astronomy often means log10).
        self.log_base_stated = not paper or "log_base" in payload
        self.budget = PAPER_BUDGET_S if paper else None
        preamble = payload.get("preamble", "")
        if not isinstance(preamble, str):
            raise CheckInputError("preamble must be LaTeX text")
        self.macros = parse_macros(preamble) if preamble else {}
        self.syntax = payload.get("syntax", "latex")
        self.log_base = payload.get("log_base", "e")
        functions = payload.get("functions", [])
        if not isinstance(functions, list) or not all(
            isinstance(f, str) and re.fullmatch(r"\\?[A-Za-z][A-Za-z0-9_]{0,30}", f) for f in functions
        ):
            raise CheckInputError("functions must be a list of names (letters, digits, _)")
        self.functions = tuple(self.symbol_name(f) if f.startswith("\\") else f for f in functions)
        coordinates = payload.get("coordinates", [])
        if not isinstance(coordinates, list) or not all(isinstance(c, str) for c in coordinates):
            raise CheckInputError("coordinates must be a list of symbols")
        self.coordinates = tuple(self.symbol_name(c) for c in coordinates)
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

    def parser(self, text: str) -> Parser:
        if not isinstance(text, str):
            raise CheckInputError("expression must be a string")
        text = expand_macros(text, self.macros) if self.macros else text
        parser = Parser(text, self.syntax, self.functions, self.log_base, getattr(self, "coordinates", ()),
                        self.log_base_stated)  # fmt: skip
        # a symbol given by `definitions` (r = sqrt(x^2+...)) depends on the variables it is defined in
        parser.defined = set(getattr(self, "definitions", {}) or {})
        return parser

    def expr(self, text: str) -> sp.Expr:
        parser = self.parser(text)
        value = parse_chain(parser)
        if value[1]:
            raise CheckInputError(f"unexpected relation {value[1][0]!r} in an expression")
        self.ambiguities += [a for a in parser.ambiguities if a not in self.ambiguities]
        return self.substitute(value[0][0])

    def chain(self, text: str) -> tuple[list[sp.Expr], list[str]]:
        parser = self.parser(text)
        exprs, ops = parse_chain(parser)
        self.ambiguities += [a for a in parser.ambiguities if a not in self.ambiguities]
        return [self.substitute(e) for e in exprs], ops

    def relation(self, text: str) -> Relation:
        exprs, ops = self.chain(text)
        if len(ops) != 1:
            raise CheckInputError("statement has no relation (=, <, >, \\le, \\ge, \\approx)" if not ops
                                  else "statement has more than one relation")  # fmt: skip
        return Relation(exprs[0], ops[0], exprs[1])

    def symbol_name(self, text: str) -> str:
        value = parse_expr(text, self.syntax)
        if not isinstance(value, sp.Symbol):
            raise CheckInputError(f"{text!r} is not a single symbol")
        return value.name

    def substitute(self, value: sp.Expr) -> sp.Expr:
        if not getattr(self, "definitions", None):
            return value
        for _ in range(5):  # a definition may use another (eta in terms of Q)
            by_name = {s: self.definitions[s.name] for s in value.free_symbols if s.name in self.definitions}
            if not by_name:
                break
            value = value.xreplace(by_name)
        return value

    def _definitions(self, raw: Any) -> dict[str, sp.Expr]:
        if not isinstance(raw, dict):
            raise CheckInputError("definitions must map a symbol to an expression")
        return {
            self.symbol_name(k): parse_expr(v, self.syntax, self.functions, self.log_base)
            for k, v in raw.items()
        }

    def sides(self) -> tuple[sp.Expr, sp.Expr]:
        if "statement" in self.payload:
            rel = self.relation(clean_statement(self.field("statement")))
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


def _budget(seconds: float | None):
    return time_budget(seconds) if seconds else nullcontext()


def _symbolic_zero(diff: sp.Expr, engine: str, budget: float | None = None) -> tuple[bool | None, str, str]:
    """(is zero: True / False / None undecided, residual text, engine used)."""
    if engine != "sympy" and wolframscript_path() is not None:
        decided = wolfram_is_zero(diff)
        if decided is not None:
            return decided, "0" if decided else "nonzero", "wolframscript"
    try:
        with _budget(budget):
            residual = sp.simplify(diff.doit())
    except BudgetExceeded:
        return None, "simplification ran past its time budget", "sympy"
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


def _doit(expr: sp.Expr, budget: float | None = None) -> sp.Expr:
    """The symbolic route's calculus (derivatives, integrals, limits, sums done by sympy), bounded."""
    if not expr.atoms(sp.Derivative, sp.Integral, sp.Limit, sp.Sum, sp.Product, sp.Subs):
        return expr
    try:
        with _budget(budget):
            return expr.doit()
    except (BudgetExceeded, NotImplementedError, ValueError, TypeError):
        return expr


def _indefinite_vars(expr: sp.Expr) -> set[sp.Symbol]:
    return {lim[0] for op in expr.atoms(sp.Integral) for lim in op.limits if len(lim) == 1}


def _d_indefinite(expr: sp.Expr, var: sp.Symbol) -> sp.Expr:
    """d/dvar of a sum of terms, where d/dx of `\\int f dx` is f exactly (no engine involved)."""
    out = []
    for t in sp.Add.make_args(expr):
        if isinstance(t, sp.Integral) and t.limits == ((var,),):
            out.append(t.function)
        elif _indefinite_vars(t):
            raise UnsureParse("an indefinite integral inside a product or a function")
        else:
            out.append(sp.Derivative(t, var))
    return sp.Add(*out)


def _withheld(kind: str, inp: MathInput, reason: str, engine: str, evidence: dict[str, Any],
              point: dict[sp.Symbol, sp.Expr] | None, lhs: sp.Expr, rhs: sp.Expr) -> CheckResult:  # fmt: skip
    """A refutation only stands when the parse had no ambiguity and the numeric route agrees."""
    if inp.ambiguities:
        evidence["ambiguities"] = list(inp.ambiguities)
        return CheckResult(kind, "inconclusive", f"{reason}, but the parse is ambiguous ({inp.ambiguities[0]}): "
                           "not refuted", engine, evidence)  # fmt: skip
    left, right = value_at(lhs, point or {}), value_at(rhs, point or {})
    evidence["numeric_route"] = {"lhs": show(left), "rhs": show(right)}
    if left is None or right is None:
        return CheckResult(kind, "inconclusive", f"{reason}, but the independent numeric route cannot evaluate "
                           "the point: not refuted", engine, evidence)  # fmt: skip
    if close(left, right, 1e-6):
        return CheckResult(kind, "inconclusive", f"{reason}, but the independent numeric route finds the sides "
                           "equal: not refuted", engine, evidence)  # fmt: skip
    return CheckResult(kind, "refuted", f"{reason} (the independent numeric route agrees)", engine, evidence)


def _compare_vectors(kind: str, inp: MathInput, lhs: Any, rhs: Any) -> CheckResult:
    if not (isinstance(lhs, sp.MatrixBase) and isinstance(rhs, sp.MatrixBase)) or lhs.shape != rhs.shape:
        return CheckResult(kind, "inconclusive", "a vector compared with a scalar or a vector of another length",
                           "sympy", {"lhs": str(lhs), "rhs": str(rhs)})  # fmt: skip
    parts = [compare_sides(kind, inp, a, b) for a, b in zip(lhs, rhs, strict=True)]
    outcomes = [p.outcome for p in parts]
    evidence = {"components": [{"outcome": p.outcome, "reason": p.reason} for p in parts]}
    if "refuted" in outcomes:
        n = outcomes.index("refuted")
        return CheckResult(
            kind, "refuted", f"component {n + 1}: {parts[n].reason}", parts[n].engine, evidence
        )
    if all(o == "confirmed" for o in outcomes):
        return CheckResult(kind, "confirmed", f"all {len(parts)} components equal", parts[0].engine, evidence)
    return CheckResult(
        kind, "inconclusive", "not every component could be decided", parts[0].engine, evidence
    )


def compare_sides(kind: str, inp: MathInput, lhs: sp.Expr, rhs: sp.Expr) -> CheckResult:
    """The equality method shared by `math.equality`, `math.series` and `math.statement`."""
    if (missing := _unavailable(kind, inp.engine)) is not None:
        return missing
    if isinstance(lhs, sp.MatrixBase) or isinstance(rhs, sp.MatrixBase):
        return _compare_vectors(kind, inp, lhs, rhs)
    pair, _ = with_assumptions(sp.Tuple(lhs, rhs), inp.domain)
    lhs, rhs = pair
    if indefinite := _indefinite_vars(lhs) | _indefinite_vars(rhs):
        if len(indefinite) != 1:
            return CheckResult(kind, "inconclusive", "indefinite integrals in several variables", "sympy", {})
        var = indefinite.pop()
        try:
            d_lhs, d_rhs = _d_indefinite(lhs, var), _d_indefinite(rhs, var)
        except UnsureParse as exc:
            return CheckResult(kind, "inconclusive", f"not parsed with confidence: {exc}", "sympy", {})
        result = compare_sides(kind, inp, d_lhs, d_rhs)
        return replace(result, reason=f"up to a constant of integration (both sides differentiated in {var}): "
                       f"{result.reason}", evidence={**result.evidence, "indefinite_integral_in": var.name})  # fmt: skip
    evidence: dict[str, Any] = {"lhs": str(lhs), "rhs": str(rhs), "engine_note": engine_note()}
    if inp.ambiguities:
        evidence["ambiguities"] = list(inp.ambiguities)
    if bad := singular_terms(sp.Tuple(lhs, rhs)):
        evidence["undefined_terms"] = bad
        return CheckResult(kind, "refuted", f"term {bad[0]['index']} of {bad[0]['operator']} is undefined",
                           "sympy", evidence)  # fmt: skip
    zero, residual, engine = _symbolic_zero(lhs - rhs, inp.engine, inp.budget)
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
        left, right = numeric(_doit(lhs, inp.budget), {}), numeric(_doit(rhs, inp.budget), {})
        if (
            left is not None and right is not None and close(left, right, inp.tolerance)
        ):  # e.g. a printed 1.41
            evidence.update(lhs_value=show(left), rhs_value=show(right), tolerance=inp.tolerance)
            return CheckResult(kind, "confirmed", f"equal within the relative tolerance {inp.tolerance:g}", engine,
                               evidence)  # fmt: skip
        return _withheld(kind, inp, f"the two sides differ by {residual}", engine, evidence, None, lhs, rhs)
    done_lhs, done_rhs = _doit(lhs, inp.budget), _doit(rhs, inp.budget)
    evaluated = by_numeric_route = 0
    for point in sample_points(free, inp.domain, inp.points if free else 1, inp.seed):
        left, right = numeric(done_lhs, point), numeric(done_rhs, point)
        if left is None or right is None:  # the symbolic route left a limit or an unknown form: numeric route
            left, right = value_at(lhs, point), value_at(rhs, point)
            if left is None or right is None:
                continue
            by_numeric_route += 1
            if not close(left, right, 1e-6):
                evidence.update(counterexample=show_point(point), lhs_value=show(left), rhs_value=show(right))
                return CheckResult(kind, "inconclusive", "only the numeric route could evaluate, and it finds the "
                                   "sides different at a sample point: not refuted on one route", engine, evidence)  # fmt: skip
            evaluated += 1
            continue
        evaluated += 1
        if not close(left, right, inp.tolerance):
            evidence.update(counterexample=show_point(point), lhs_value=show(left), rhs_value=show(right))
            if zero is True:
                return CheckResult(kind, "inconclusive", "simplification gives 0 but a sample point differs",
                                   engine, evidence)  # fmt: skip
            return _withheld(
                kind, inp, "the two sides differ at a sample point", engine, evidence, point, lhs, rhs
            )
    evidence["points_evaluated"] = evaluated
    if by_numeric_route:
        evidence["points_by_numeric_route"] = by_numeric_route
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
    if _defines(lhs, rhs):  # `k = 2\pi/\lambda` names k (issue 15)
        return CheckResult("math.equality", "skipped", "defines a symbol (x = expression without x), not an identity",
                           "sympy", {"lhs": str(lhs), "rhs": str(rhs)})  # fmt: skip
    return compare_sides("math.equality", inp, lhs, rhs)


@check("math.series", doc="{series: '\\sum_{n=1}^{\\infty} ...', equals: closed form}; every term must be defined\n"
       + COMMON_DOC)  # fmt: skip
def check_series(payload: dict[str, Any]) -> CheckResult:
    inp = MathInput(payload)
    try:
        series, closed = inp.expr(inp.field("series")), inp.expr(inp.field("equals"))
    except (UnsureParse, UnknownCommand) as exc:  # a paper's own macro (`\\vc_i`): notation unread, as math.statement
        return CheckResult("math.series", "inconclusive", f"not parsed with confidence: {exc}", "sympy", {})
    if not series.has(sp.Sum, sp.Product):
        raise CheckInputError("series has no \\sum or \\prod")
    return compare_sides("math.series", inp, series, closed)


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
    value = numeric_limit(expr, var, to, direction)
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
    return compare_inequality("math.inequality", inp, rel.lhs, rel.op, rel.rhs)


def compare_inequality(kind: str, inp: MathInput, lhs: sp.Expr, op: str, rhs: sp.Expr) -> CheckResult:
    """`lhs op rhs` at sample points (violated at one point refutes, through the same guards as equalities)."""
    tests = {
        "<": lambda a, b: a < b,
        ">": lambda a, b: a > b,
        "<=": lambda a, b: a <= b,
        ">=": lambda a, b: a >= b,
    }
    if op not in tests:
        raise CheckInputError(f"an inequality needs <, >, \\le or \\ge, found {op!r}")
    pair, _ = with_assumptions(sp.Tuple(lhs, rhs), inp.domain)
    lhs, rhs = pair
    done_lhs, done_rhs = _doit(lhs, inp.budget), _doit(rhs, inp.budget)
    free = sorted((lhs - rhs).free_symbols, key=lambda s: s.name)
    evidence: dict[str, Any] = {
        "lhs": str(lhs),
        "op": op,
        "rhs": str(rhs),
        "symbols": [s.name for s in free],
    }
    evaluated = 0
    for point in sample_points(free, inp.domain, inp.points if free else 1, inp.seed):
        left, right = numeric(done_lhs, point), numeric(done_rhs, point)
        if left is None or right is None or not (left.is_real and right.is_real):
            continue
        evaluated += 1
        if not tests[op](left, right):
            evidence.update(counterexample=show_point(point), lhs_value=show(left), rhs_value=show(right))
            if inp.ambiguities:
                evidence["ambiguities"] = list(inp.ambiguities)
                return CheckResult(kind, "inconclusive", "violated at a sample point, but the parse is ambiguous "
                                   f"({inp.ambiguities[0]}): not refuted", "sympy", evidence)  # fmt: skip
            return CheckResult(kind, "refuted", "violated at a sample point", "sympy", evidence)
    evidence["points_evaluated"] = evaluated
    if evaluated == 0:
        return CheckResult(kind, "inconclusive", "no sample point could be evaluated", "sympy", evidence)
    how = "exactly (no free symbols)" if not free else f"at all {evaluated} sample points (not a proof)"
    return CheckResult(kind, "confirmed", f"holds {how}", "sympy", evidence)


_LABELS = re.compile(r"\\(?:label|eqlabel|tag)\s*\{[^{}]*\}|\\(?:nonumber|notag)\b")
_TRAILING = re.compile(r"(?:\s|\\[ ,;:!]|\\q?quad|[.,;])+$")


def clean_statement(text: str) -> str:
    """A display equation as written in a paper, without labels, tags and trailing punctuation."""
    return _TRAILING.sub("", _LABELS.sub(" ", text)).strip()


def printed_tolerance(text: str) -> float:
    """Relative tolerance implied by the least precise decimal printed in `text` (`1.3` -> 0.05):
    a paper's rounded value is not an error."""
    sig = [len(m.group(0).replace(".", "").lstrip("0")) for m in re.finditer(r"[0-9]*\.[0-9]+", text)]
    sig = [n for n in sig if n > 0]
    return 0.5 * 10.0 ** (1 - min(sig)) if sig else 0.0


def _defines(lhs: sp.Expr, rhs: sp.Expr) -> bool:
    """`a = expr` with `a` a bare symbol not in `expr`: it names or solves for `a`, it is no identity."""
    return (isinstance(lhs, sp.Symbol) and lhs not in getattr(rhs, "free_symbols", set())) or (
        isinstance(rhs, sp.Symbol) and rhs not in getattr(lhs, "free_symbols", set())
    )


def _pair(inp: MathInput, lhs: sp.Expr, op: str, rhs: sp.Expr) -> CheckResult:
    kind = "math.statement"
    if op == "=" and _defines(lhs, rhs):
        return CheckResult(kind, "skipped", "defines a symbol (x = expression without x), not an identity")
    if op == "=":
        return compare_sides(kind, inp, lhs, rhs)
    if op in ("<", ">", "<=", ">="):
        return compare_inequality(kind, inp, lhs, op, rhs)
    if op in ("def", "annotated"):
        return CheckResult(kind, "skipped", "a definition (:=, \\equiv, annotated =), not an identity")
    if op == "~" and "var" in inp.payload and "to" in inp.payload:
        return compare_limit(kind, inp, lhs / rhs, sp.Integer(1))
    return CheckResult(kind, "inconclusive", f"relation {op!r} is not decided mechanically "
                       "(an approximation needs var and to)", "sympy", {})  # fmt: skip


@check("math.statement", doc="{statement: LaTeX of a display equation or a chain a = b = c (labels, \\nonumber and "
       "trailing punctuation ignored), preamble (optional: the paper's macros)}; each neighbouring pair is checked "
       "(=, <, \\le, ...); definitions (:=, \\equiv) are skipped; notation outside the parser is inconclusive;\n"
       "  context (optional: [{latex, where}], the paper's other equations): a refutation needs every symbol free\n"
       + COMMON_DOC)  # fmt: skip
def check_statement(payload: dict[str, Any]) -> CheckResult:
    """A statement as it stands in a paper: never refuted on a parse the parser is unsure of, nor on
    a symbol the paper makes depend on another one of the statement (`dependent`, issue 21)."""
    kind = "math.statement"
    inp = MathInput(payload, paper=True)
    text = clean_statement(inp.field("statement"))
    inp.tolerance = max(inp.tolerance, printed_tolerance(text))
    equations, conditions = split_equations(text)
    result = _check_equations(inp, text, equations)
    if conditions and result.outcome == "refuted":  # the equation may hold only where its condition does
        return CheckResult(kind, "inconclusive", f"{result.reason}, but the equation carries a condition or note "
                           f"({conditions[0][:60]}): not refuted", result.engine,
                           {**result.evidence, "conditions": conditions})  # fmt: skip
    return result


def _check_equations(inp: MathInput, text: str, equations: list[str]) -> CheckResult:
    kind = "math.statement"
    if len(equations) == 1:
        return _check_chain(inp, equations[0])
    # `a = b \qquad c = d`: two equations side by side, each its own statement (never one chain a = b c = d)
    parts = [_check_chain(inp, e) for e in equations]
    evidence = {"statement": text, "equations": [{"statement": e, "outcome": p.outcome, "reason": p.reason}
                                                 for e, p in zip(equations, parts, strict=True)]}  # fmt: skip
    outcomes = [p.outcome for p in parts]
    for wanted in ("refuted", "error", "inconclusive"):
        if wanted in outcomes:
            n = outcomes.index(wanted)
            return CheckResult(kind, wanted if wanted != "error" else "inconclusive",
                               f"equation {n + 1} of {len(parts)}: {parts[n].reason}", parts[n].engine, evidence)  # fmt: skip
    if all(o == "skipped" for o in outcomes):
        return CheckResult(kind, "skipped", parts[0].reason, parts[0].engine, evidence)
    return CheckResult(kind, "confirmed", "; ".join(p.reason for p in parts if p.outcome == "confirmed"),
                       parts[0].engine, evidence)  # fmt: skip


_EQUATION_GAP = re.compile(r"[,;]?\\q?quad(?![A-Za-z])")
_CONDITION = re.compile(r"^\s*(?:\\(?:text|mathrm|textrm|mbox|rm)\b|\(|\\left\s*\(|\\forall|\\exists)")


def split_equations(text: str) -> tuple[list[str], list[str]]:
    """The equations of one display row written side by side (`a = b, \\qquad c = d`): split at a top-level
    `\\quad`/`\\qquad` when the pieces on both sides hold a relation; a trailing condition
    (`\\quad \\text{for } x > 0`, `\\quad (n \\ge 1)`) or other annotation after a `\\quad` is returned apart:
    (equations, conditions)."""
    pieces, last = [], 0
    for m in _EQUATION_GAP.finditer(text):
        before = text[:m.start()]
        if sum(before.count(c) for c in "{([") == sum(before.count(c) for c in "})]"):  # at the top level
            pieces.append((last, m.start()))
            last = m.end()
    pieces.append((last, len(text)))
    parts = [text[a:b].strip().rstrip(",;").strip() for a, b in pieces]
    has_relation = re.compile(r"=|<|>|\\(?:le|ge|leq|geq|approx|simeq|neq)(?![A-Za-z])")
    out: list[str] = []
    conditions: list[str] = []
    for part in parts:
        if out and part and has_relation.search(part) and has_relation.search(out[-1]) and not _CONDITION.match(part):
            out.append(part)
        elif out:
            if part:
                conditions.append(part)
        else:
            out.append(part)
    return [p for p in out if p] or [text], conditions


def _check_chain(inp: MathInput, text: str) -> CheckResult:
    kind = "math.statement"
    try:
        exprs, ops = inp.chain(text)
    except (UnsureParse, UnknownCommand) as exc:
        return CheckResult(kind, "inconclusive", f"not parsed with confidence: {exc}", "sympy",
                           {"statement": text})  # fmt: skip
    if not ops:
        return CheckResult(kind, "skipped", "no relation to check", "sympy", {"statement": text})
    if "implies" in ops:  # a derivation: its equations are conditions, not identities
        return CheckResult(kind, "inconclusive", "a chain of implications: its equations are not identities",
                           "sympy", {"statement": text})  # fmt: skip
    parts = []
    for lhs, op, rhs in zip(exprs, ops, exprs[1:], strict=False):
        try:
            parts.append(_pair(inp, lhs, op, rhs))
        except (UnsureParse, UnknownCommand) as exc:
            parts.append(CheckResult(kind, "inconclusive", f"not parsed with confidence: {exc}", "sympy", {}))
    evidence = {"statement": text, "pairs": [{"op": op, "outcome": p.outcome, "reason": p.reason,
                                               "evidence": p.evidence} for op, p in zip(ops, parts, strict=True)]}  # fmt: skip
    if inp.ambiguities:
        evidence["ambiguities"] = inp.ambiguities
    engine = parts[0].engine
    return _not_free(inp, exprs, ops, _chain_outcome(parts, ops, engine, evidence))


def _chain_outcome(parts: list[CheckResult], ops: list[str], engine: str, evidence: dict[str, Any]) -> CheckResult:
    kind = "math.statement"
    outcomes = [p.outcome for p in parts]
    if "refuted" in outcomes:
        n = outcomes.index("refuted")
        return CheckResult(
            kind, "refuted", f"relation {n + 1} ({ops[n]}): {parts[n].reason}", engine, evidence
        )
    checkable = [o for o in outcomes if o != "skipped"]
    if not checkable:
        return CheckResult(kind, "skipped", parts[0].reason, engine, evidence)
    if all(o == "confirmed" for o in checkable):
        return CheckResult(kind, "confirmed", "; ".join(p.reason for p in parts if p.outcome == "confirmed"),
                           engine, evidence)  # fmt: skip
    n = next(i for i, o in enumerate(outcomes) if o not in ("confirmed", "skipped"))
    return CheckResult(kind, outcomes[n] if outcomes[n] != "error" else "inconclusive",
                       f"relation {n + 1} ({ops[n]}): {parts[n].reason}", engine, evidence)  # fmt: skip


_CONTEXT_MAX = 80
"""Context entries (the paper's other equations) read per statement; the extractor sends the nearest."""


def _context(inp: MathInput) -> list[dict[str, str]]:
    raw = inp.payload.get("context", [])
    if not isinstance(raw, list) or not all(
        isinstance(c, dict) and isinstance(c.get("latex"), str) and isinstance(c.get("where", ""), str) for c in raw
    ):
        raise CheckInputError("context must be a list of {latex, where} (the paper's other equations)")
    return raw[:_CONTEXT_MAX]


_COMPUTED = re.compile(r"\\(?:partial|int|iint|oint|lim|sum|prod|nabla|dv|pdv|odv)(?![A-Za-z])|"
                       r"\\d?frac\s*\{\s*(?:\\mathrm\s*\{\s*d\s*\}|d(?![a-ce-z]{2}))")
_INCREMENT = re.compile(r"(\\[Dd]elta)(?![A-Za-z])\s*([A-Za-z])(?![A-Za-z_])")


def _symbol_names(exprs: list[Any]) -> set[str]:
    """Every symbol of the statement, bound ones included (the t of `\\int A\\,dt`)."""
    return {s.name for e in exprs if isinstance(e, sp.Basic) for s in e.atoms(sp.Symbol)}


def _is_identity(exprs: list[Any], ops: list[str]) -> bool:
    """Does a context relation hold at two random points (a derivation step, not a constraint)?"""
    free = sorted({s for e in exprs if isinstance(e, sp.Basic) for s in e.free_symbols}, key=lambda s: s.name)
    for lhs, op, rhs in zip(exprs, ops, exprs[1:], strict=False):
        if op != "=" or isinstance(lhs, sp.MatrixBase) or isinstance(rhs, sp.MatrixBase):
            return False
        for point in sample_points(free, Domain.from_payload(None, str), 2, 1):
            left, right = numeric(lhs, point), numeric(rhs, point)
            if left is None or right is None or not close(left, right, 1e-6):
                return False
    return True


def dependences(inp: MathInput, names: set[str]) -> dict[str, tuple[str, set[str], str]]:
    """Symbols of the statement that the paper does not leave free, each with where it is tied
    (issue 21): `A(t)` written elsewhere with t in the statement; `X = expr` defining X through another
    symbol of the statement; a relation that is not an identity (`x = r\\cos\\theta` read as a
    constraint, `\\tan\\phi = 2\\tan\\theta`) holding two of its symbols."""
    found: dict[str, tuple[str, set[str], str]] = {}
    for entry in _context(inp):
        latex, where = entry["latex"], entry.get("where", "elsewhere in the paper")
        try:  # an increment `\\Delta x` names a step: `\\Delta z = \\Delta x` does not tie z to x
            parser = inp.parser(_INCREMENT.sub(r"\1_{\2}", latex))
        except CheckInputError:  # characters outside the grammar: the entry says nothing the parser can read
            continue
        try:
            exprs, ops = parse_chain(parser)
        except CheckInputError:
            exprs, ops = [], []
        for name, args in parser.calls:  # recorded even when the rest of the entry does not parse
            if name in names and (args - {name}) & names and name not in found:
                found[name] = (f"{latex.strip()[:80]} ({where}) makes {name} a function of {', '.join(sorted(args))}",
                               set(args), "function")
        if not ops or "implies" in ops:
            continue
        symbols = [{s.name for s in e.free_symbols} if isinstance(e, sp.Basic) else set() for e in exprs]
        heads = {name for name, args in parser.calls if symbols[0] <= {name} | args}
        head = exprs[0].name if isinstance(exprs[0], sp.Symbol) else next(iter(heads), None)
        rest = set().union(*symbols[1:]) if len(symbols) > 1 else set()
        if head is not None and ops[0] in ("=", "def", "annotated", "~") and head not in rest:
            if head in names and (rest & names) - {head} and head not in found:
                found[head] = (f"defined as {latex.strip()[:80]} ({where})", rest, "definition")
            continue
        tied = set().union(*symbols) & names
        # a derivation step (a derivative, integral, limit or sum evaluated) binds its variables; only an
        # algebraic relation that is no identity constrains its symbols
        if len(tied) >= 2 and not _COMPUTED.search(latex) and not _is_identity(exprs, ops):
            for name in sorted(tied - found.keys()):
                found[name] = (f"tied to {', '.join(sorted(tied - {name}))} by {latex.strip()[:80]} ({where})",
                               tied - {name}, "relation")
    return found


def _calculus_vars(exprs: list[Any]) -> dict[str, set[str]]:
    """symbol -> variables of the integrals and derivatives whose body holds it."""
    out: dict[str, set[str]] = {}
    for e in exprs:
        if not isinstance(e, sp.Basic):
            continue
        for op in e.atoms(sp.Integral, sp.Derivative):
            variables = {v.name for v in op.variables}
            body = op.function if isinstance(op, sp.Integral) else op.expr
            for s in body.free_symbols:
                out.setdefault(s.name, set()).update(variables)
    return out


def _holds_as_functions(inp: MathInput, exprs: list[Any], ops: list[str], found: dict[str, tuple[str, set[str], str]],
                        ) -> bool:  # fmt: skip
    """Is every `=` of the chain still an identity with each dependent symbol made an unknown function of
    its variables (`P_n` -> `P_n(f)`)? Then the confirmation never used the constant reading."""
    symbols = {s.name: s for e in exprs if isinstance(e, sp.Basic) for s in e.atoms(sp.Symbol)}
    as_functions = {symbols[n]: sp.Function(n)(*[symbols[v] for v in sorted(d[1]) if v in symbols])
                    for n, d in found.items() if n in symbols}  # fmt: skip
    for lhs, op, rhs in zip(exprs, ops, exprs[1:], strict=False):
        if op != "=":
            continue
        zero, _, _ = _symbolic_zero((lhs - rhs).xreplace(as_functions), "sympy", inp.budget)
        if zero is not True:
            return False
    return True


def _not_free(inp: MathInput, exprs: list[Any], ops: list[str], result: CheckResult) -> CheckResult:
    """A refutation stands only if every symbol of the statement is free in the paper; a confirmation
    only if no integrand or derivand depends on its own variable (`A(t)` integrated in t is no constant)."""
    if result.outcome not in ("refuted", "confirmed") or not inp.payload.get("context"):
        return result
    inside = _calculus_vars(exprs)
    if result.outcome == "confirmed" and not inside:
        return result
    found = dependences(inp, _symbol_names(exprs))
    if result.outcome == "confirmed":
        # an integrand that is a function of the integration variable (not the variable itself, nor a
        # relation between variables): sympy took it for a constant
        variables = set().union(*inside.values())
        found = {n: d for n, d in found.items()
                 if d[2] != "relation" and n not in variables and d[1] & inside.get(n, set())}  # fmt: skip
    if not found:
        return result
    if result.outcome == "confirmed" and _holds_as_functions(inp, exprs, ops, found):
        return replace(result, reason=f"{result.reason}; also with {', '.join(sorted(found))} as functions of "
                       "their variables (the paper makes them depend on them)")  # fmt: skip
    name, (why, _, _) = min(found.items())
    evidence = {**result.evidence, "dependent_symbols": {n: d[0] for n, d in found.items()}}
    verb = "refuted" if result.outcome == "refuted" else "confirmed"
    return CheckResult("math.statement", "inconclusive", f"{result.reason}, but {name} is not free in the paper "
                       f"({why}): not {verb}", result.engine, evidence)  # fmt: skip

"""The independent numeric route: an expression's value at a point with every calculus node
(derivative, integral, limit, sum, product) computed numerically by mpmath, never symbolically.

A refutation needs two routes to agree that the sides differ (issue 15): the symbolic route
(`doit` + simplify + evalf, in `math_checks`) and this one (finite-difference derivatives,
quadrature, values approaching a limit point, direct or `nsum` summation). Where this route
cannot evaluate (an unknown function, an indefinite integral, a limit that does not settle) it
answers None and the check stays inconclusive.
"""

from __future__ import annotations

import mpmath
import sympy as sp

DIGITS = 20
MAX_TERMS = 2000
STEP = mpmath.mpf("1e-6")
"""Central-difference step: at DIGITS digits, truncation (~STEP^2) and cancellation stay far below 1e-6."""


class NoValue(Exception):
    """The numeric route cannot evaluate this node at this point."""


def _num(value: sp.Expr) -> mpmath.mpf | mpmath.mpc:
    out = sp.N(value, DIGITS + 10)
    if not out.is_number or out.has(sp.nan, sp.zoo) or out.free_symbols:
        raise NoValue(str(value)[:80])
    re_part, im_part = out.as_real_imag()
    # Through decimal text: a sympy Float's raw `_mpf_` may carry another integer backend than mpmath's.
    if im_part == 0:  # real values stay mpf: nsum's extrapolation misbehaves on complex terms
        return mpmath.mpf(str(sp.Float(re_part, DIGITS + 10)))
    return mpmath.mpc(
        mpmath.mpf(str(sp.Float(re_part, DIGITS + 10))), mpmath.mpf(str(sp.Float(im_part, DIGITS + 10)))
    )


def _exact(t: mpmath.mpf) -> sp.Float:
    """An mpmath point as a sympy Float with all its bits (a decimal string would drop a tiny step)."""
    return sp.Float(t)


def _sympy(value: mpmath.mpc | mpmath.mpf) -> sp.Expr:
    c = complex(value)
    return sp.Float(c.real, DIGITS) + sp.I * sp.Float(c.imag, DIGITS)


class _Inner:
    """A derivative still to take in the remaining variables (mixed partials), evaluated numerically."""

    def __init__(self, body: sp.Expr, variables: list[tuple[sp.Symbol, int]]) -> None:
        self.body, self.variables = body, variables


def _calculus(expr: sp.Basic) -> bool:
    return bool(expr.atoms(sp.Derivative, sp.Integral, sp.Limit, sp.Sum, sp.Product, sp.Subs))


def _eval(expr: sp.Basic, point: dict[sp.Symbol, sp.Expr]) -> sp.Basic:
    """`expr` at `point` with calculus nodes replaced by numbers (recursively, inside out)."""
    if isinstance(expr, _Inner):
        (var, n), *others = expr.variables
        rest = {k: v for k, v in point.items() if k != var}
        inner = _Inner(expr.body, others) if others else expr.body
        return _sympy(
            mpmath.diff(
                lambda t: _num(_eval(inner, {**rest, var: _exact(t)})), _num(point[var]).real, n, h=STEP
            )
        )
    if isinstance(expr, sp.Symbol):
        return point.get(expr, expr)
    if not expr.args or not _calculus(expr):
        return expr.xreplace(point) if point else expr
    if isinstance(expr, sp.Derivative):
        (var, n), *others = expr.variable_count
        if var not in point:
            raise NoValue("derivative variable not sampled")
        # mixed partials: the rest numerically too, as a function of this variable
        inner = _Inner(expr.expr, others) if others else expr.expr
        rest = {k: v for k, v in point.items() if k != var}
        value = mpmath.diff(
            lambda t: _num(_eval(inner, {**rest, var: _exact(t)})), _num(point[var]).real, n, h=STEP
        )
        return _sympy(value)
    if isinstance(expr, sp.Integral):
        if any(len(lim) != 3 for lim in expr.limits) or len(expr.limits) != 1:
            raise NoValue("indefinite or multiple integral")
        var, low, high = expr.limits[0]
        a, b = (_num(_eval(low, point)).real if not low.is_infinite else (mpmath.inf if low == sp.oo else -mpmath.inf),
                _num(_eval(high, point)).real if not high.is_infinite else (mpmath.inf if high == sp.oo else -mpmath.inf))  # fmt: skip
        body = expr.function
        value = mpmath.quad(lambda t: _num(_eval(body, {**point, var: _exact(t)})), [a, b])
        return _sympy(value)
    if isinstance(expr, sp.Limit):
        from checkers.sampling import numeric_limit

        body, var, to, direction = expr.args
        to_value = _eval(to, point)
        inner = _eval_partial(body, point, keep=var)
        value = numeric_limit(inner, var, to_value, str(direction))
        if value is None:
            raise NoValue("the limit does not settle numerically")
        return value
    if isinstance(expr, sp.Sum | sp.Product):
        if len(expr.limits) != 1:
            raise NoValue("multiple index ranges")
        var, low, high = expr.limits[0]
        lo = _eval(low, point)
        hi = _eval(high, point)
        body = expr.function

        def term(k):
            return _num(_eval(body, {**point, var: sp.Integer(int(k)) if k == int(k) else _exact(k)}))

        if not lo.is_Integer:
            raise NoValue("non-integer lower bound")
        if hi == sp.oo:  # sympy's numeric summation (evalf), on the body with the point substituted
            if not isinstance(expr, sp.Sum) or _calculus(body):
                raise NoValue("infinite product, or calculus inside an infinite sum")
            value = sp.Sum(
                body.xreplace({k: v for k, v in point.items() if k != var}), (var, lo, sp.oo)
            ).evalf(DIGITS)
            if not value.is_number or value.has(sp.Sum):
                raise NoValue("the infinite sum does not evaluate numerically")
            return value
        else:
            if not hi.is_Integer or int(hi) - int(lo) > MAX_TERMS:
                raise NoValue("bounds not small whole numbers")
            terms = [term(k) for k in range(int(lo), int(hi) + 1)]
            value = mpmath.fsum(terms) if isinstance(expr, sp.Sum) else mpmath.fprod(terms)
        return _sympy(value)
    if isinstance(expr, sp.Subs):
        body, variables, values = expr.args
        return _eval(body, {**point, **{v: _eval(w, point) for v, w in zip(variables, values, strict=True)}})
    return expr.func(*[_eval(arg, point) for arg in expr.args])


def _eval_partial(expr: sp.Expr, point: dict[sp.Symbol, sp.Expr], keep: sp.Symbol) -> sp.Expr:
    """`expr` with every symbol but `keep` set; calculus nodes not involving `keep` computed."""
    rest = {k: v for k, v in point.items() if k != keep}
    if keep in expr.free_symbols and _calculus(expr):
        raise NoValue("calculus inside a limit's body")
    return expr.xreplace(rest)


def value_at(expr: sp.Expr, point: dict[sp.Symbol, sp.Expr]) -> sp.Expr | None:
    """The numeric route's value of `expr` at `point`, or None where it cannot evaluate."""
    try:
        with mpmath.workdps(DIGITS):
            out = sp.N(_eval(expr, point), DIGITS)
    except (NoValue, TypeError, ValueError, ZeroDivisionError, OverflowError, ArithmeticError):
        return None
    if not out.is_number or out.has(sp.nan, sp.zoo) or out.free_symbols:
        return None
    return out

"""Do two LaTeX expressions mean the same? Sampled with sympy through the checkers' parser, never eval.

Used by the paper-audit injection validator (issue 15): an injected maths edit that leaves the
expression's value unchanged (`0` -> `\\frac{1}{2} 0`) is no error. Anything the parser refuses
or a sample cannot evaluate answers False ("cannot tell"), so an edit is never rejected on a guess.
"""

from __future__ import annotations

import random

import sympy as sp

from checkers.latex_parser import parse_expr
from checkers.numeric_route import value_at

__all__ = ["same_at_sample_points"]

SAMPLES = 4


def same_at_sample_points(old: str, new: str, samples: int = SAMPLES) -> bool:
    """True when both parse and agree (relative 1e-9) at `samples` seeded rational points."""
    try:
        e1, e2 = parse_expr(old), parse_expr(new)
    except Exception:  # the parser's refusal means "cannot tell", never "same"
        return False
    symbols = sorted(e1.free_symbols | e2.free_symbols, key=str)
    calculus = any(e.atoms(sp.Derivative, sp.Integral, sp.Limit, sp.Sum, sp.Product) for e in (e1, e2))
    rng = random.Random(0)
    for _ in range(samples):
        point = {s: sp.Rational(rng.randint(11, 97), rng.randint(3, 13)) for s in symbols}
        if calculus:  # derivatives, integrals, limits: the numeric route (substituting x into d/dx is wrong)
            v1, v2 = value_at(e1, point), value_at(e2, point)
            if v1 is None or v2 is None:
                return False
            d, scale = complex(v1) - complex(v2), abs(complex(v1))
        else:
            try:
                d = complex(sp.N((e1 - e2).subs(point)))
                scale = abs(complex(sp.N(e1.subs(point))))
            except (TypeError, ValueError, ZeroDivisionError):
                return False
        if abs(d) > 1e-9 * max(1.0, scale):
            return False
    return True

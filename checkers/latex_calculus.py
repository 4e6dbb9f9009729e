"""Calculus and paper notation for the LaTeX parser (issue 15), as a mixin of `latex_parser.Parser`.

Every construct is read from tokens into an explicit sympy constructor (`Derivative`, `Integral`,
`Limit`, `Sum`, `Product`, `Piecewise`, `ImmutableMatrix`); nothing is evaluated here. Where the
reading depends on something the text does not say, the parser refuses with `UnsureParse`:

- `\\frac{df}{dx}`, `\\partial_x V`, `f'(x)`: the differentiated thing must be an explicit
  expression in the variable, or a function declared in `functions` (then it stays an unknown
  function, which no sample can evaluate: inconclusive). A bare symbol could depend on x
  implicitly, so it is refused rather than differentiated to 0.
- `\\int_a^b body \\,dx`: the differential must be found at the integrand's bracket level; none,
  several, or a `d` also used as a symbol in the body is refused. `\\int dx\\, f` is read too.
- `\\sum_{i=1}^{n} body` / `\\prod`: an explicit `index = lower` and an upper bound are required,
  and a body with an indexed quantity (`a_i` while summing over i) is refused: symbols are not
  sequences.
- `\\nabla`: only over `coordinates` declared by the caller (gradient, `\\nabla^2` Laplacian);
  other symbols are constants by that declaration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sympy as sp

from checkers.latex_tokens import NAME_COMMANDS, Token, UnsureParse, is_d, is_var_start
from checkers.result import CheckInputError

if TYPE_CHECKING:
    from checkers.latex_parser import Parser

_ARROWS = {"\\to", "\\rightarrow", "\\longrightarrow", "\\mapsto"}
_RELATIONAL = {"<": sp.StrictLessThan, ">": sp.StrictGreaterThan, "<=": sp.LessThan, ">=": sp.GreaterThan,
               "=": sp.Eq, "!=": sp.Ne}  # fmt: skip


class CalculusMixin:
    """Methods of `Parser` for derivatives, integrals, limits, big operators, nabla and cases."""

    # -- shared helpers ------------------------------------------------------------------------
    def group_range(self: Parser) -> tuple[int, int]:
        """Token indices [a, b) of the next `{...}` group's content (or the next single token); moves past it."""
        tok = self.peek()
        if tok.kind == "op" and tok.text == "{":
            start, level, j = self.i + 1, 0, self.i
            while True:
                t = self.tokens[j]
                if t.kind == "end":
                    raise CheckInputError(f"unclosed '{{' at {tok.pos}")
                if t.kind == "op" and t.text == "{":
                    level += 1
                elif t.kind == "op" and t.text == "}":
                    level -= 1
                    if level == 0:
                        break
                j += 1
            self.i = j + 1
            return start, j
        if tok.kind == "end":
            raise CheckInputError("expected a group, found the end")
        self.i += 1
        return self.i - 1, self.i

    def sub_expr(self: Parser, tokens: list[Token]) -> sp.Expr:
        """Parse `tokens` completely as one expression with this parser's settings."""
        if not tokens:
            raise UnsureParse("an empty group where an expression was expected")
        sub = self.child(tokens)
        out = sub.expr()
        sub.finish()
        self.ambiguities.extend(a for a in sub.ambiguities if a not in self.ambiguities)
        return out

    def variable(self: Parser, tokens: list[Token]) -> tuple[sp.Symbol, int, int]:
        """A variable at the start of `tokens` (`x`, `\\theta`, `x_{1}`), its order (`x^2` -> 2) and tokens used."""
        sub = self.child(tokens)
        tok = sub.next()
        if not is_var_start(tok):
            raise UnsureParse(f"cannot read a variable after the differential at {tok.pos}")
        name = tok.text.lstrip("\\")
        if sub.accept("_"):
            name += "_" + sub.subscript_name()
        order = 1
        if sub.accept("^"):
            order = _small_int(sub.exponent())
        return sp.Symbol(name), order, sub.i

    def promote_functions(self: Parser, body: sp.Expr, variables: list[sp.Symbol]) -> sp.Expr:
        """A declared function written bare (`\\frac{df}{dx}`) becomes f(x)."""
        swap = {s: sp.Function(s.name)(*variables) for s in body.free_symbols
                if isinstance(s, sp.Symbol) and s.name in self.functions}  # fmt: skip
        return body.xreplace(swap) if swap else body

    # -- derivatives ---------------------------------------------------------------------------
    def leibniz(self: Parser, num: list[Token], den: list[Token]) -> sp.Expr:
        """`\\frac{d^n body}{dx^n}`, `\\frac{\\partial^2 f}{\\partial x \\partial y}`, or the operator
        `\\frac{d}{dx}` applied to the rest of the product term."""
        partial = num[0].text == "\\partial"
        k, order = 1, 1
        if len(num) > 1 and num[1].text == "^":
            sub = self.child(num[2:])
            order = _small_int(sub.exponent())
            k = 2 + sub.i
        variables: list[tuple[sp.Symbol, int]] = []
        j = 0
        while j < len(den):
            if not (is_d(den[j]) or den[j].text == "\\partial"):
                raise UnsureParse("the denominator of a derivative is not a product of differentials")
            if (den[j].text == "\\partial") != partial:
                raise UnsureParse("mixed d and \\partial in one derivative")
            var, n, used = self.variable(den[j + 1 :])
            variables.append((var, n))
            j += 1 + used
        if not variables or sum(n for _, n in variables) != order:
            raise UnsureParse("the orders of a derivative's numerator and denominator differ")
        # with nothing after d^n, the operator form applies to the rest of the product term
        body = self.sub_expr(num[k:]) if k < len(num) else self.term()
        return self.derivative(body, variables)

    def derivative(self: Parser, body: sp.Expr, variables: list[tuple[sp.Symbol, int]]) -> sp.Expr:
        plain = [v for v, _ in variables]
        body = self.promote_functions(body, plain)
        if isinstance(body, sp.MatrixBase):
            raise UnsureParse("derivative of a vector")
        defined = getattr(self, "defined", set())
        for var in plain:
            if var not in body.free_symbols and not {s.name for s in body.free_symbols} & defined:
                raise UnsureParse(f"the differentiated expression does not contain {var}: it may depend on it "
                                  "implicitly, which the text does not say")  # fmt: skip
        return sp.Derivative(body, *variables)

    def package_derivative(self: Parser) -> sp.Expr:
        """`\\dv{f}{x}`, `\\dv[n]{f}{x}` and the operator `\\dv{x} body` (physics package; `\\pdv` alike)."""
        order = 1
        if self.accept("["):
            order = _small_int(self.expr())
            self.expect("]")
        a0, a1 = self.group_range()
        first = self.tokens[a0:a1]
        if self.peek().text == "{":
            b0, b1 = self.group_range()
            second = self.tokens[b0:b1]
            var, n, used = self.variable(second)
            if used != len(second) or n != 1:
                raise UnsureParse("\\dv over something other than one variable")
            if self.peek().text in ("_", "^"):
                raise UnsureParse("\\dv with a sub- or superscript (evaluated at a point?)")
            return self.derivative(self.sub_expr(first), [(var, order)])
        var, n, used = self.variable(first)
        if used != len(first) or n != 1:
            raise UnsureParse("\\dv over something other than one variable")
        return self.derivative(self.term(), [(var, order)])

    def partial_subscript(self: Parser) -> sp.Expr:
        """`\\partial_x body` and `\\partial_x^2 body` (also `\\partial_{x}`)."""
        if not self.accept("_"):
            raise UnsureParse("\\partial outside \\frac{\\partial ...}{\\partial x} or \\partial_x")
        var = sp.Symbol(self.subscript_name())
        order = 1
        if self.accept("^"):
            order = _small_int(self.exponent())
        return self.derivative(self.term(), [(var, order)])

    def primes(self: Parser) -> int:
        """How many primes follow (`'`, `^\\prime`, `^{\\prime\\prime}`), consumed."""
        n = 0
        while True:
            if self.accept("'"):
                n += 1
            elif self.peek().text == "^" and self.peek(1).text == "\\prime":
                self.i += 2
                n += 1
            elif self.peek().text == "^" and self.peek(1).text == "{" and self.peek(2).text == "\\prime":
                j = 2
                while self.peek(j).text == "\\prime":
                    j += 1
                if self.peek(j).text != "}":
                    raise UnsureParse("a prime mixed with other superscripts")
                n += j - 2
                self.i += j + 1
            else:
                return n

    def primed_call(self: Parser, name: str, order: int) -> sp.Expr:
        """`f'(x)` for a declared function f: the derivative of f at the argument."""
        if name not in self.functions or self.peek().text != "(":
            raise UnsureParse(f"a prime on {name!r}: a derivative of an undeclared function, or a new "
                              "variable named with a prime")  # fmt: skip
        args = self.call_args()
        if len(args) != 1:
            raise UnsureParse("f'(...) with several arguments")
        fn = sp.Function(name)
        if isinstance(args[0], sp.Symbol):
            return sp.Derivative(fn(args[0]), (args[0], order))
        t = sp.Dummy("t")
        return sp.Subs(sp.Derivative(fn(t), (t, order)), t, args[0])

    # -- integrals -----------------------------------------------------------------------------
    def integral(self: Parser) -> sp.Expr:
        lower = upper = None
        for _ in range(2):  # a bound is one group or one token: `_{0.9}^{1.0}` is not (0.9)^(1.0)
            if self.accept("_"):
                lower = self.bound()
            elif self.accept("^"):
                upper = self.bound()
        if (lower is None) != (upper is None):
            raise UnsureParse("an integral with only one bound")
        if is_d(self.peek()) and is_var_start(self.peek(1)):  # `\int dx\, f(x)`
            self.i += 1
            var, order, used = self.variable(self.tokens[self.i :])
            self.i += used
            if order != 1 or (is_d(self.peek()) and is_var_start(self.peek(1))):
                raise UnsureParse("several differentials after one \\int")
            body = self.term()
        else:
            start, k = self.i, self.find_differential()
            body_tokens = self.tokens[start:k]
            self.i = k + 1
            var, order, used = self.variable(self.tokens[self.i :])
            self.i += used
            if order != 1:
                raise UnsureParse("a differential with a power")
            if is_d(self.peek()) and is_var_start(self.peek(1)):
                raise UnsureParse("several differentials after one \\int")
            body = self.sub_expr(body_tokens) if body_tokens else sp.Integer(1)
        if isinstance(body, sp.MatrixBase) or sp.Symbol("d") in body.free_symbols:
            raise UnsureParse("a 'd' in the integrand may be a second differential")
        if lower is None:
            return sp.Integral(body, var)
        return sp.Integral(body, (var, lower, upper))

    def bound(self: Parser) -> sp.Expr:
        if self.peek().text == "{":
            return self.group()
        if self.peek().text in ("-", "+"):
            raise UnsureParse("an unbraced signed bound")
        return self.exponent()  # one token (`^1`, `^\\infty`; `^12` is 1 then 2, as in TeX)

    def find_differential(self: Parser) -> int:
        """Index of the integrand's differential `d` (at bracket level 0 before any relation)."""
        level = 0
        for k in range(self.i, len(self.tokens) - 1):
            tok = self.tokens[k]
            if tok.kind == "end":
                break
            if tok.text in ("(", "[", "{", "\\{"):
                level += 1
            elif tok.text in (")", "]", "}", "\\}"):
                level -= 1
                if level < 0:
                    break
            elif level == 0 and (self.is_relation(tok) or tok.text in _ARROWS or tok.text in ("&", "\\\\")):
                break
            elif level == 0 and is_d(tok) and is_var_start(self.tokens[k + 1]):
                return k
        raise UnsureParse("an integral whose differential (dx) cannot be found")

    # -- limits, sums, products ----------------------------------------------------------------
    def limit(self: Parser) -> sp.Expr:
        """`\\lim_{x \\to a}`, `\\lim_{x \\to 0^+}`, `\\lim_{x\\rightarrow\\infty}`: the limit of the rest of the term."""
        if not self.accept("_"):
            raise UnsureParse("\\lim without a subscript")
        a, b = self.group_range()
        inner = self.tokens[a:b]
        arrows = [n for n, t in enumerate(inner) if t.text in _ARROWS]
        if len(arrows) != 1:
            raise UnsureParse("a limit subscript without one arrow (x \\to a)")
        var, order, used = self.variable(inner[: arrows[0]])
        if used != arrows[0] or order != 1:
            raise UnsureParse("a limit over something other than one variable")
        target = inner[arrows[0] + 1 :]
        direction = "+-"
        texts = [t.text for t in target]
        for suffix, d in (
            (["^", "+"], "+"),
            (["^", "-"], "-"),
            (["^", "{", "+", "}"], "+"),
            (["^", "{", "-", "}"], "-"),
        ):
            if texts[-len(suffix) :] == suffix:
                target, direction = target[: -len(suffix)], d
                break
        to = self.sub_expr(list(target))
        body = self.term()
        if to is sp.oo:
            direction = "-"
        elif to == -sp.oo:
            direction = "+"
        return sp.Limit(body, var, to, direction)

    def big_operator(self: Parser, name: str) -> sp.Expr:
        """`\\sum_{n=1}^{N} body` / `\\prod`: the body is the following product term."""
        if not self.accept("_"):
            raise UnsureParse(f"\\{name} without an index range")
        a, b = self.group_range()
        inner = self.tokens[a:b]
        if len(inner) < 3 or not is_var_start(inner[0]) or inner[1].text != "=":
            raise UnsureParse(f"\\{name} over an index set that is not 'index = lower'")
        var = sp.Symbol(inner[0].text.lstrip("\\"), integer=True)
        lower = self.sub_expr(inner[2:])
        if not self.accept("^"):
            raise UnsureParse(f"\\{name} without an upper bound")
        upper = self.bound()
        plain = sp.Symbol(var.name)
        body = self.term()
        if isinstance(body, sp.MatrixBase):
            raise UnsureParse(f"\\{name} of a vector")
        for sym in body.free_symbols:
            if isinstance(sym, sp.Symbol) and var.name in sym.name.split("_")[1:]:
                raise UnsureParse(
                    f"{sym.name} is indexed by {var.name}: a sequence, which the parser cannot read"
                )
        body = body.xreplace({plain: var})
        if name == "sum":
            return sp.Sum(body, (var, lower, upper))
        return sp.Product(body, (var, lower, upper))

    # -- vectors -------------------------------------------------------------------------------
    def nabla(self: Parser) -> sp.Expr:
        if not self.coordinates:
            raise UnsureParse("\\nabla without declared coordinates")
        coords = [sp.Symbol(c) for c in self.coordinates]
        if self.peek().kind == "cmd" and self.peek().text in ("\\cdot", "\\times"):
            raise UnsureParse("divergence or curl of a vector field")
        laplacian = False
        if self.accept("^"):
            if _small_int(self.exponent()) != 2:
                raise UnsureParse("\\nabla to a power other than 2")
            laplacian = True
        body = self.term()
        if isinstance(body, sp.MatrixBase) or not body.free_symbols & set(coords):
            raise UnsureParse("\\nabla of something that is not a scalar expression in the coordinates")
        if laplacian:
            return sp.Add(*[sp.Derivative(body, (c, 2)) for c in coords])
        return sp.ImmutableMatrix([sp.Derivative(body, c) for c in coords])

    # -- cases ---------------------------------------------------------------------------------
    def environment(self: Parser) -> sp.Expr:
        name = self.braced_name()
        if name != "cases":
            raise UnsureParse(f"environment {name!r} is not checkable")
        pieces: list[tuple[sp.Expr, sp.Basic]] = []
        while not self.accept("\\end"):
            value = self.expr()
            self.accept(",")
            self.expect("&")
            cond = self.condition()
            self.accept(",")
            pieces.append((value, cond))
            if not self.accept("\\\\") and self.peek().text != "\\end":
                raise UnsureParse(f"unexpected {self.peek().text!r} in a cases row")
        if self.braced_name() != "cases" or not pieces:
            raise CheckInputError("\\begin{cases} closed by another environment, or empty")
        return sp.Piecewise(*pieces)

    def condition(self: Parser) -> sp.Basic:
        while self.peek().kind == "cmd" and self.peek().text[1:] in NAME_COMMANDS:
            self.i += 1
            word = self.braced_name()
            if word in ("otherwise", "else"):
                return sp.true
            if word not in ("if", "for", "when", "where"):
                raise UnsureParse(f"cases condition {word!r} is not a relation")
        exprs = [self.expr()]
        ops: list[str] = []
        while (op := self.relation_op()) is not None:
            if op not in _RELATIONAL:
                raise UnsureParse(f"cases condition with {op!r}")
            ops.append(op)
            exprs.append(self.expr())
        if not ops:
            raise UnsureParse("a cases condition without a relation")
        return sp.And(*[_RELATIONAL[op](a, b) for op, a, b in zip(ops, exprs, exprs[1:], strict=False)])


def _small_int(value: sp.Expr) -> int:
    if not (value.is_Integer and 1 <= int(value) <= 6):
        raise UnsureParse("a derivative order that is not a small whole number")
    return int(value)


__all__ = ["CalculusMixin"]

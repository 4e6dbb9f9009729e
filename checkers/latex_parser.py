"""A whitelisted LaTeX / plain-expression parser that builds sympy objects directly.

Input text is never evaluated as Python: there is no `eval`, no `sympify`/`parse_expr` and no
`lambdify` anywhere in the checkers room. A tokenizer accepts only digits, ASCII letters, a short
list of operator characters and backslash commands; every command must be in the whitelists below
or the input is rejected. The recursive-descent parser then calls sympy constructors (`Symbol`,
`Integer`, `Rational`, `Add`, `Mul`, `Pow`, `Sum`, `Product` and whitelisted functions) itself, so
a string such as `__import__('os').system(...)` can only ever become an error, never a call.
Symbol names are restricted to `[A-Za-z0-9_]`.

Two syntaxes share one grammar. `latex`: single-letter symbols with implicit multiplication
(`ab` is a*b), `x_{eff}` and `\\xi_M` subscripts, `\\frac`, `\\sqrt[n]{}`, `\\sum_{n=1}^{\\infty}`,
`\\prod`, `\\exp`, `\\log` (natural log unless `log_base` says otherwise), `\\mathrm{B}(a,b)` (Beta
function), `\\mathrm{Li}_s(x)` (polylogarithm), `\\pi`, `\\infty`, and `e` as Euler's number only
when raised to a power (`e^{x}`). `plain`: multi-letter identifiers (`gamma1`, `R_e`), `*`, `/`,
`^` or `**`, and calls of known functions such as `exp(x)`, `sqrt(x)`, `log(x)`.

Calculus and paper notation (issue 15; see `checkers.latex_calculus`): Leibniz, partial and prime
derivatives, integrals with and without bounds, `\\lim`, `\\nabla` over declared coordinates,
`cases`, `\\underset`, `|x|`, relation chains. Whatever the parser cannot read with confidence raises
`UnsureParse` (checks answer inconclusive); readings that are plausible but not certain (`k(\\tau)`
read as a product, `\\log` of unstated base, `i` as a symbol) are recorded in `ambiguities`, and a
check never refutes on a parse with ambiguities.

Limits: at most 5,000 characters, 60 levels of nesting and 60 digits per number. Numeric powers
with huge exponents are built unevaluated so that parsing itself cannot explode; what a later
simplification does with them is bounded by the sandbox's time and memory limits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sympy as sp

from checkers.latex_calculus import CalculusMixin
from checkers.latex_tokens import (
    ACCENTS,
    FUNCTIONS,
    GREEK,
    MAX_DEPTH,
    MAX_DIGITS,
    MUL_COMMANDS,
    NAME_COMMANDS,
    RELATION_OPS,
    RELATIONS,
    SYMBOL_COMMANDS,
    TWO_ARG,
    Syntax,
    Token,
    UnknownCommand,
    UnsureParse,
    normalise,
    tokenize,
)
from checkers.result import CheckInputError

__all__ = ["Parser", "Relation", "UnknownCommand", "UnsureParse", "parse", "parse_chain", "parse_expr"]

# Commands that end an operand: relations, arrows, row and environment ends.
_STOPS = {"to", "rightarrow", "longrightarrow", "mapsto", "end", "\\", "}", "|", "rvert"}
_ANNOTATED = {"stackrel", "overset", "underset"}


@dataclass(frozen=True)
class Relation:
    """A parsed statement `lhs op rhs` (op: =, <, >, <=, >=, !=, ~)."""

    lhs: sp.Expr
    op: str
    rhs: sp.Expr


class Parser(CalculusMixin):
    """Recursive descent over tokens; every node is built by an explicit sympy constructor."""

    def __init__(self, text: str, syntax: Syntax = "latex", functions: tuple[str, ...] = (),
                 log_base: str | int = "e", coordinates: tuple[str, ...] = (),
                 log_base_stated: bool = True) -> None:  # fmt: skip
        if syntax not in ("latex", "plain"):
            raise CheckInputError(f"syntax must be 'latex' or 'plain', got {syntax!r}")
        self.syntax = syntax
        self.tokens = normalise(tokenize(text, syntax)) if syntax == "latex" else tokenize(text, syntax)
        if colon := next((t for t in self.tokens if t.kind == "op" and t.text == ":"), None):
            raise UnsureParse(f"a ':' at {colon.pos} (a map, a set-builder or a ratio)")
        self.i = 0
        self.depth = 0
        self.functions = set(functions)
        self.coordinates = tuple(coordinates)
        self.abs_open = False
        self.ambiguities: list[str] = []
        """Plausible but uncertain readings; a check never refutes on a parse that has any."""
        self.calls: list[tuple[str, frozenset[str]]] = []
        """`A(t)` seen in function notation: (name, symbols in the bracket); a paper that writes `A(t)`
        makes A depend on t (issue 21), whatever the parse of the bracket."""
        if log_base not in ("e", 10, "10", 2, "2"):
            raise CheckInputError("log_base must be 'e', 10 or 2")
        self.log_base = None if log_base == "e" else int(log_base)
        self.log_base_stated = log_base_stated

    def child(self, tokens: list[Token]) -> Parser:
        """A parser over a slice of tokens with the same settings (integrands, bounds, variables)."""
        sub = Parser.__new__(Parser)
        sub.__dict__.update(self.__dict__)
        sub.tokens = list(tokens) + [Token("end", "", tokens[-1].pos + 1 if tokens else 0)]
        sub.i, sub.ambiguities = 0, []
        return sub

    def note(self, text: str) -> None:
        if text not in self.ambiguities:
            self.ambiguities.append(text)

    # -- token helpers -------------------------------------------------------------------------
    def _text(self, a: int, b: int) -> str:
        return " ".join(t.text for t in self.tokens[a:b])

    def peek(self, offset: int = 0) -> Token:
        return self.tokens[min(self.i + offset, len(self.tokens) - 1)]

    def next(self) -> Token:
        tok = self.peek()
        self.i += 1
        return tok

    def accept(self, text: str) -> bool:
        if self.peek().text == text and self.peek().kind in ("op", "cmd"):
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> None:
        if not self.accept(text):
            tok = self.peek()
            raise CheckInputError(f"expected {text!r} at {tok.pos}, found {tok.text or 'end'!r}")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CheckInputError(f"expression nested deeper than {MAX_DEPTH} levels")

    # -- statements ----------------------------------------------------------------------------
    def parse_statement(self) -> sp.Expr | Relation:
        lhs = self.expr()
        op = self.relation_op()
        if op is None:
            self.finish()
            return lhs
        rhs = self.expr()
        self.finish()
        return Relation(lhs, op, rhs)

    def parse_chain(self) -> tuple[list[sp.Expr], list[str]]:
        """`a = b \\le c`: the expressions and the relations between neighbours (every token used)."""
        exprs, ops = [self.expr()], []
        while (op := self.relation_op()) is not None:
            ops.append(op)
            exprs.append(self.expr())
        self.finish()
        free = {s.name for e in exprs for s in getattr(e, "free_symbols", set())}
        if "d" in free and self.syntax == "latex" and self.d_may_be_differential():
            self.note("'d' read as a symbol (it may be a differential)")
        for name in ("i", "j"):
            if name in free and self.syntax == "latex":
                self.note(f"'{name}' read as a symbol (it may be the imaginary unit)")
        return exprs, ops

    def d_may_be_differential(self) -> bool:
        """A bare `d` is a possible differential only where a variable (or a power, `d^2x`) follows it;
        in `c/d`, `\\frac{c}{d}` or `(b+d)` it is a plain symbol (issue 21)."""
        for tok, after in zip(self.tokens, self.tokens[1:], strict=False):
            if tok.kind == "id" and tok.text == "d" and (
                after.kind in ("id", "diff") or after.text == "^"
                or (after.kind == "cmd" and after.text[1:] not in MUL_COMMANDS and after.text[1:] not in RELATIONS
                    and after.text[1:] not in _STOPS)
            ):  # fmt: skip
                return True
        return False

    def parse_expr(self) -> sp.Expr:
        out = self.expr()
        self.finish()
        return out

    def finish(self) -> None:
        tok = self.peek()
        if tok.kind != "end":
            raise CheckInputError(f"unexpected {tok.text!r} at {tok.pos}")

    def is_relation(self, tok: Token) -> bool:
        return (tok.kind == "op" and (tok.text in RELATION_OPS or tok.text == ":=")) or (
            tok.kind == "cmd" and tok.text[1:] in RELATIONS
        )

    def relation_op(self) -> str | None:
        tok = self.peek()
        if tok.kind == "op" and tok.text == ":=":
            self.i += 1
            return "def"
        if tok.kind == "op" and tok.text in RELATION_OPS:
            self.i += 1
            return RELATION_OPS[tok.text]
        if tok.kind == "cmd" and tok.text[1:] in RELATIONS:
            self.i += 1
            return RELATIONS[tok.text[1:]]
        if tok.kind == "cmd" and tok.text[1:] in _ANNOTATED and self.annotated_relation():
            return "annotated"
        return None

    def annotated_relation(self) -> bool:
        """`\\stackrel{def}{=}`, `\\overset{!}{=}`: a relation with a note over it (consumed when it is one)."""
        save = self.i
        self.i += 1
        try:
            self.group_range()
            a, b = self.group_range()
        except CheckInputError:
            self.i = save
            return False
        if b - a == 1 and self.is_relation(self.tokens[a]):
            return True
        self.i = save
        return False

    # -- expressions ---------------------------------------------------------------------------
    def expr(self) -> sp.Expr:
        self.enter()
        out = self.term()
        while True:
            if self.accept("+"):
                out = _add(out, self.term())
            elif self.accept("-"):
                out = _add(out, -self.term())
            else:
                break
        self.depth -= 1
        return out

    def term(self) -> sp.Expr:
        out = self.signed()
        while True:
            tok = self.peek()
            if tok.text in ("*",) and tok.kind == "op" or tok.kind == "cmd" and tok.text[1:] in MUL_COMMANDS:
                self.i += 1
                out = _mul(out, self.signed())
            elif tok.kind == "op" and tok.text == "/":
                self.i += 1
                right = self.signed()
                if isinstance(right, sp.MatrixBase):
                    raise UnsureParse("division by a vector")
                out = out / right
                if self.starts_atom(self.peek()):  # `c / 2 \pi L` usually means c / (2 pi L)
                    self.note("a / b c read as (a / b) c (the denominator may go on)")
            elif self.starts_atom(tok):
                out = _mul(out, self.power())
            else:
                return out

    def signed(self) -> sp.Expr:
        if self.accept("-"):
            return -self.signed()
        if self.accept("+"):
            return self.signed()
        return self.power()

    def power(self) -> sp.Expr:
        self.enter()
        base = self.postfix(self.atom())
        if self.accept("^"):
            if isinstance(base, sp.MatrixBase):
                raise UnsureParse("a power of a vector")
            base = make_pow(base, self.exponent())
        self.depth -= 1
        return base

    def exponent(self) -> sp.Expr:
        if self.syntax == "plain" or self.peek().text in ("{", "(", "-", "+"):
            return self.signed() if self.syntax == "plain" else self.power()
        tok = self.peek()
        if tok.kind == "num" and len(tok.text) > 1 and "." not in tok.text:  # x^23 is x^2 3 in LaTeX
            self.tokens[self.i] = Token("num", tok.text[1:], tok.pos + 1)
            return sp.Integer(int(tok.text[0]))
        return self.atom()

    def postfix(self, value: sp.Expr) -> sp.Expr:
        while self.peek().kind == "op" and self.peek().text in ("!", "'"):
            if self.next().text == "!":
                value = sp.factorial(value)
            else:
                raise UnsureParse("a prime after an expression (derivative or a new variable?)")
        return value

    def starts_atom(self, tok: Token) -> bool:
        if tok.kind in ("num", "id", "diff"):
            return True
        if tok.kind == "op":
            return tok.text in ("(", "[", "{") or (tok.text == "|" and not self.abs_open)
        if tok.kind == "cmd":
            name = tok.text[1:]
            if name in _ANNOTATED:
                save = self.i
                annotated = self.annotated_relation()
                self.i = save
                return not annotated
            if name in ("vert", "lvert", "rvert"):
                return not self.abs_open and name != "rvert"
            return name not in MUL_COMMANDS and name not in RELATIONS and name not in _STOPS
        return False

    def atom(self) -> sp.Expr:
        tok = self.next()
        if tok.kind == "num":
            return make_number(tok.text)
        if tok.kind == "op" and tok.text in ("(", "[", "{"):
            inner = self.expr()
            if tok.text == "(" and self.peek().text == ",":
                return self.vector(inner)
            if self.peek().text == ",":  # `({r, \theta, \lambda})`, `[a, b]`: a list or an interval, not a value
                raise UnsureParse(f"a list in {tok.text}...{'}' if tok.text == '{' else ']'} at {tok.pos}")
            if self.peek().text == ";":  # `g(\tau; S_0, Q)`: a parameter list, not a bracket of one value
                raise UnsureParse(f"a ';' inside brackets at {self.peek().pos} (the arguments of a function)")
            self.expect({"(": ")", "[": "]", "{": "}"}[tok.text])
            if tok.text == "{" and self.peek().text == "_" and self.syntax == "latex":
                # `{w}_{n}`, `{c_k}_j` (what `\newcommand{\nth}[1]{{#1}_{n}}` expands to): a braced name
                # takes the subscript; a braced expression with one is notation the parser does not know
                if not isinstance(inner, sp.Symbol):
                    raise UnsureParse(f"a subscript on a braced expression at {self.peek().pos}")
                self.i += 1
                return sp.Symbol(f"{inner.name}_{self.subscript_name()}")
            return inner
        if tok.kind == "op" and tok.text == "|" and not self.abs_open or tok.text in ("\\vert", "\\lvert"):
            self.abs_open = True
            inner = self.expr()
            self.abs_open = False
            if not (self.accept("|") or self.accept("\\vert") or self.accept("\\rvert")):
                raise CheckInputError(f"unclosed |...| opened at {tok.pos}")
            return sp.Abs(inner)
        if tok.kind == "cmd" and tok.text == "\\{":
            inner = self.expr()
            if self.peek().text != "\\}":  # `\{w_n, m_n\}`, `\{x : x > 0\}`: a set, not a bracket
                raise UnsureParse(f"a set \\{{...\\}} at {tok.pos}")
            self.expect("\\}")
            return inner
        if tok.kind == "id":
            return self.identifier(tok)
        if tok.kind == "diff":
            raise UnsureParse(f"a differential d at {tok.pos} outside a derivative or an integral")
        if tok.kind == "cmd":
            return self.command(tok)
        raise CheckInputError(f"unexpected {tok.text or 'end'!r} at {tok.pos}")

    def vector(self, first: sp.Expr) -> sp.Expr:
        items = [first]
        while self.accept(","):
            items.append(self.expr())
        self.expect(")")
        if not self.coordinates:
            raise UnsureParse("a tuple (a, b, ...) without declared coordinates")
        if len(items) != len(self.coordinates) or any(isinstance(v, sp.MatrixBase) for v in items):
            raise UnsureParse("a tuple that is not a vector over the declared coordinates")
        return sp.ImmutableMatrix(items)

    # -- identifiers and commands --------------------------------------------------------------
    def identifier(self, tok: Token) -> sp.Expr:
        name = tok.text
        if self.syntax == "plain":
            if self.peek().text == "(":
                if name in FUNCTIONS or name in TWO_ARG or name in ("log", "Li"):
                    return self.apply(name)
                if name in self.functions:
                    return sp.Function(name)(*self.call_args())
            constants = {"pi": sp.pi, "oo": sp.oo, "inf": sp.oo, "infinity": sp.oo, "E": sp.E, "I": sp.I}
            if name in constants:
                return constants[name]
            if name in FUNCTIONS:  # `beta` or `B` alone is a symbol; `exp` alone is a mistake
                raise CheckInputError(f"function {name!r} needs parenthesised arguments")
            return sp.Symbol(name)
        if name == "e" and self.peek().text == "^":
            return sp.E
        return self.symbol(name)

    def symbol(self, base: str) -> sp.Expr:
        name = base + ("_" + self.subscript_name() if self.accept("_") else "")
        primes = self.primes() if self.syntax == "latex" else 0
        if primes:
            return self.primed_call(name, primes)
        if name in self.functions and self.peek().text == "(":
            return sp.Function(name)(*self.call_args())
        if (
            self.peek().kind == "op"
            and self.peek().text == "("
            and self.syntax == "latex"
            and self.looks_like_call()
        ):
            self.calls.append((name, self.bracket_symbols()))
            if self.semicolon_call():  # `f(0;0)`: arguments separated by `;` are a call, never a product
                self.note(f"{name}(...;...) read as an undeclared function")
                return sp.Function(name)(*self.call_args())
            self.note(f"{name}(...) read as a product (it may be a function)")
        return sp.Symbol(name)

    def bracket_symbols(self) -> frozenset[str]:
        """Names of the letters and Greek letters inside the bracket at the cursor (`(t)`, `(x, \\theta)`)."""
        close = self.i
        for close in range(self.i, len(self.tokens)):  # the bracket read as an expression: `(\\omega_0)` holds omega_0
            if self.tokens[close].text == ")" or self.tokens[close].kind == "end":
                break
        try:
            inner = self.child(self.tokens[self.i + 1:close]).expr()
            if isinstance(inner, sp.Basic) and not isinstance(inner, sp.MatrixBase):
                return frozenset(s.name for s in inner.free_symbols)
        except CheckInputError:
            pass
        level, j, names = 0, self.i, set()
        while self.tokens[j].kind != "end":
            tok = self.tokens[j]
            level += tok.text in ("(", "[", "{")
            level -= tok.text in (")", "]", "}")
            if level == 0:
                break
            if tok.kind == "id":
                names.add(tok.text)
            elif tok.kind == "cmd" and tok.text[1:] in GREEK:
                names.add(tok.text[1:])
            j += 1
        return frozenset(names)

    def semicolon_call(self) -> bool:
        """Does the bracket at the cursor hold a `;` at its own level (`f(x;\\theta)`, `P(0;0)`)?"""
        level, j = 0, self.i
        while self.tokens[j].kind != "end":
            text = self.tokens[j].text
            level += text in ("(", "[", "{")
            level -= text in (")", "]", "}")
            if level == 0:
                return False
            if level == 1 and text == ";":
                return True
            j += 1
        return False

    def looks_like_call(self) -> bool:
        """`k(\\tau)`, `f(x, y)`: a bracket of bare symbols after a symbol reads like a function call;
        `n(n+1)` (an operator inside) reads like a product."""
        level, j = 0, self.i
        while True:
            tok = self.tokens[j]
            if tok.kind == "end":
                return False
            if tok.text in ("(", "[", "{"):
                level += 1
            elif tok.text in (")", "]", "}"):
                level -= 1
                if level == 0:
                    return True
            elif tok.text in ("+", "-", "*", "/", "\\cdot", "\\times", "\\frac", "^"):
                return False
            j += 1

    def subscript_name(self) -> str:
        """The text of a subscript, flattened to [A-Za-z0-9_] (e.g. `{\\rm eff}` -> `eff`)."""
        if self.accept("{"):
            parts: list[str] = []
            level = 1
            while True:
                tok = self.next()
                if tok.kind == "end":
                    raise CheckInputError("unclosed subscript")
                if tok.text == "{" and tok.kind == "op":
                    level += 1
                elif tok.text == "}" and tok.kind == "op":
                    level -= 1
                    if level == 0:
                        break
                elif tok.kind in ("num", "id", "diff"):
                    parts.append(tok.text.replace(".", "p"))
                elif tok.kind == "cmd" and tok.text[1:].isalpha():
                    name = tok.text[1:]
                    if name not in NAME_COMMANDS:
                        parts.append(SYMBOL_COMMANDS.get(name, name))
                elif tok.kind == "op" and tok.text in (",", "-", "+"):
                    parts.append("_")
                elif tok.kind == "op" and tok.text == "_":  # `\phi_{1s,\Gamma_1}` is one name (issue 21)
                    if not parts or parts[-1] != "_":
                        parts.append("_")
                else:
                    raise CheckInputError(f"{tok.text!r} not allowed in a subscript")
            name = "".join(parts)
        else:
            tok = self.next()
            if tok.kind == "num":
                name = tok.text[0]
                if len(tok.text) > 1:
                    raise CheckInputError("write multi-digit subscripts as _{...}")
            elif tok.kind in ("id", "diff"):
                name = tok.text
            elif tok.kind == "cmd" and tok.text[1:] in NAME_COMMANDS and self.peek().text == "{":
                name = self.braced_name()  # `A_\text{plan}` is A_plan, as `A_{\text{plan}}` is
            elif tok.kind == "cmd" and tok.text[1:].isalpha():
                name = SYMBOL_COMMANDS.get(tok.text[1:], tok.text[1:])
            elif tok.kind == "op" and tok.text == "*":  # f_* (a characteristic value)
                name = "star"
            else:
                raise CheckInputError(f"bad subscript {tok.text!r} at {tok.pos}")
        if not name or not re.fullmatch(r"[A-Za-z0-9_]+", name):
            raise CheckInputError("empty or invalid subscript")
        return name

    def braced_name(self) -> str:
        """The raw text of `{...}` after a name command (`\\mathrm{SFR}` -> `SFR`)."""
        self.expect("{")
        parts: list[str] = []
        level = 1
        while True:
            tok = self.next()
            if tok.kind == "op" and tok.text == "}":
                level -= 1
                if level == 0:
                    break
            elif tok.kind == "op" and tok.text == "{":
                level += 1  # `\vec{\mathbf{B}}`: a name command inside a name is one name (issue 21, held out)
            elif tok.kind == "op" and tok.text == "_" and parts:
                parts.append("_")  # `\vec{\mathbf{b}_{j}}` is vec_b_j
            elif tok.kind in ("id", "num", "diff"):
                parts.append(tok.text)
            elif tok.kind == "cmd" and tok.text[1:] in NAME_COMMANDS and self.peek().text == "{":
                continue  # the font of an inner name adds nothing to the symbol's name (as at the top level)
            elif tok.kind == "cmd" and tok.text[1:] in ACCENTS and self.peek().text == "{":
                parts.append(tok.text[1:] + "_")  # `\hat{\bar{x}}` is hat_bar_x, never hat_x
            elif tok.kind == "cmd" and tok.text[1:].isalpha():
                parts.append(SYMBOL_COMMANDS.get(tok.text[1:], tok.text[1:]))
            else:
                raise CheckInputError(f"{tok.text or 'end'!r} not allowed inside a name at {tok.pos}")
        name = "".join(parts)
        if not re.fullmatch(r"[A-Za-z0-9_]+", name or "-"):
            raise CheckInputError("empty or invalid name")
        return name

    def command(self, tok: Token) -> sp.Expr:
        name = tok.text[1:]
        if name in ("frac", "dfrac", "tfrac"):
            a0, a1 = self.group_range()
            b0, b1 = self.group_range()
            num, den = self.tokens[a0:a1], self.tokens[b0:b1]
            d_num = bool(num) and (num[0].kind == "diff" or num[0].text in ("d", "\\partial", "\\delta"))
            d_den = (
                bool(den)
                and (den[0].kind == "diff" or den[0].text in ("d", "\\partial", "\\delta"))
                and len(den) > 1
            )
            if d_num and d_den:
                if num[0].text == "\\delta" or den[0].text == "\\delta":
                    raise UnsureParse("variational derivative \\delta f / \\delta x")
                return self.leibniz(num, den)
            numerator, denominator = self.sub_expr(num), self.sub_expr(den)
            if isinstance(denominator, sp.MatrixBase):
                raise UnsureParse("division by a vector")
            return numerator / denominator
        if name == "sqrt":
            if self.accept("["):
                index = self.expr()
                self.expect("]")
                return make_pow(self.group(), 1 / index)
            return sp.sqrt(self.group())
        if name == "infty":
            return sp.oo
        if name == "pi":
            if self.peek().text == "(":
                self.note("\\pi(...) read as pi times a bracket (it may be a function)")
            return sp.pi
        if name in ("sum", "prod"):
            return self.big_operator(name)
        if name == "int":
            return self.integral()
        if name == "lim":
            return self.limit()
        if name == "partial":
            return self.partial_subscript()
        if name in ("dv", "pdv", "odv"):  # physics / derivative packages: \dv{f}{x}, \dv[2]{f}{x}, \dv{x} f
            return self.package_derivative()
        if name == "nabla":
            return self.nabla()
        if name == "begin":
            return self.environment()
        if name == "underset":  # \underset{x \to 0}{\lim} is \lim_{x \to 0}
            a0, a1 = self.group_range()
            b0, b1 = self.group_range()
            under, over = self.tokens[a0:a1], self.tokens[b0:b1]
            self.tokens[self.i : self.i] = [*over, Token("op", "_", tok.pos), Token("op", "{", tok.pos), *under,
                                            Token("op", "}", tok.pos)]  # fmt: skip
            return self.atom()
        if name in FUNCTIONS or name == "log":
            if name == "log" and not self.log_base_stated and self.peek().text != "_":
                self.note("\\log of unstated base read as the natural logarithm")
            return self.apply(name)
        if name in GREEK:
            return self.symbol(name)
        if name in NAME_COMMANDS:
            if name in ("mathbf", "boldsymbol", "bm"):
                self.note(f"\\{name} symbol read as a scalar (it may be a vector or a matrix)")
            word = self.braced_name()
            if word == "e":
                return sp.E
            if word == "i":
                return sp.I
            if word == "d":
                raise UnsureParse("a differential \\mathrm{d} outside a derivative or an integral")
            if word in FUNCTIONS or word in TWO_ARG or word in ("log", "Li"):
                return self.apply(word)
            if name == "operatorname" or (
                len(word) > 1 and self.peek().text == "(" and word not in self.functions
            ):
                raise UnsureParse(f"{word}(...) may be a function the parser does not know")
            return self.symbol(word)
        if name in ACCENTS:
            if name == "vec":
                self.note("\\vec symbol read as a scalar")
            return self.symbol(f"{name}_{self.braced_name()}")
        if name in SYMBOL_COMMANDS:
            return sp.Symbol(SYMBOL_COMMANDS[name])
        raise UnknownCommand(f"LaTeX command {tok.text!r} is not supported")

    def group(self) -> sp.Expr:
        if self.accept("{"):
            inner = self.expr()
            self.expect("}")
            return inner
        return self.atom()

    def call_args(self) -> list[sp.Expr]:
        close = {"(": ")", "[": "]", "{": "}"}.get(self.peek().text)
        if close is None:
            raise CheckInputError(f"expected '(' at {self.peek().pos}")
        self.i += 1
        args = [self.expr()]
        while self.accept(",") or self.accept(";"):
            args.append(self.expr())
        self.expect(close)
        return args

    def apply(self, name: str) -> sp.Expr:
        """A whitelisted function: optional `_{base}` / `_s`, optional `^{power}`, then its argument."""
        sub: sp.Expr | None = None
        if self.accept("_"):
            sub = self.group() if self.syntax == "latex" else self.atom()
        power: sp.Expr | None = None
        if self.syntax == "latex" and self.peek().text == "^":
            self.i += 1
            power = self.exponent()
        if self.peek().text in ("(", "[", "{"):
            args = self.call_args()
        elif self.syntax == "latex":
            args = [self.power()]
        else:
            raise CheckInputError(f"function {name!r} needs parenthesised arguments")
        if any(isinstance(a, sp.MatrixBase) for a in args):
            raise UnsureParse(f"{name} of a vector")
        if name == "Li":
            if sub is None or len(args) != 1:
                raise CheckInputError("write the polylogarithm as \\mathrm{Li}_{s}(x)")
            value = sp.polylog(sub, args[0])
        elif name in TWO_ARG:
            if len(args) != 2:
                raise CheckInputError(f"{name} takes two arguments")
            value = TWO_ARG[name](*args)
        elif name == "log":
            if len(args) == 2 and self.syntax == "plain":
                value = sp.log(args[0], args[1])
            elif len(args) != 1:
                raise CheckInputError("log takes one argument")
            else:
                base = sub if sub is not None else self.log_base
                value = sp.log(args[0], base) if base is not None else sp.log(args[0])
        else:
            if len(args) != 1:
                raise CheckInputError(f"{name} takes one argument")
            value = FUNCTIONS[name](args[0])
        return make_pow(value, power) if power is not None else value


def _add(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    if isinstance(a, sp.MatrixBase) != isinstance(b, sp.MatrixBase):
        raise UnsureParse("a vector added to a scalar")
    if isinstance(a, sp.MatrixBase) and a.shape != b.shape:
        raise UnsureParse("vectors of different lengths added")
    return a + b


def _mul(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    if isinstance(a, sp.MatrixBase) and isinstance(b, sp.MatrixBase):
        raise UnsureParse("a product of two vectors (dot, cross or outer?)")
    return a * b


def make_number(text: str) -> sp.Expr:
    digits = text.replace(".", "")
    if len(digits) > MAX_DIGITS:
        raise CheckInputError(f"number with more than {MAX_DIGITS} digits")
    if "." in text:
        whole, frac = text.split(".")
        return sp.Rational(int(whole or "0") * 10 ** len(frac) + int(frac or "0"), 10 ** len(frac))
    return sp.Integer(int(text))


def make_pow(base: sp.Expr, exp: sp.Expr) -> sp.Expr:
    """`base**exp`, left unevaluated when both are numbers and the exponent is large."""
    if exp.is_Number and base.is_Number and abs(exp) > 1000:
        return sp.Pow(base, exp, evaluate=False)
    return sp.Pow(base, exp)


def _guarded(build):
    """Run one parse; a sympy constructor that rejects what it was given is an unsure parse, not a crash."""
    try:
        return build()
    except CheckInputError:
        raise
    except (TypeError, ValueError, AttributeError, NotImplementedError, IndexError, KeyError) as exc:
        raise UnsureParse(
            f"the parsed pieces do not combine ({type(exc).__name__}: {str(exc)[:80]})"
        ) from exc


def parse(text: str, syntax: Syntax = "latex", functions: tuple[str, ...] = (),
          log_base: str | int = "e", coordinates: tuple[str, ...] = ()) -> sp.Expr | Relation:  # fmt: skip
    """Parse a statement: an expression, or `lhs <relation> rhs`."""
    return _guarded(lambda: Parser(text, syntax, functions, log_base, coordinates).parse_statement())


def parse_expr(text: str, syntax: Syntax = "latex", functions: tuple[str, ...] = (),
               log_base: str | int = "e", coordinates: tuple[str, ...] = ()) -> sp.Expr:  # fmt: skip
    """Parse an expression (no relation allowed)."""
    return _guarded(lambda: Parser(text, syntax, functions, log_base, coordinates).parse_expr())


def parse_chain(parser: Parser) -> tuple[list[sp.Expr], list[str]]:
    """`parser.parse_chain()` with the same guard as `parse`."""
    return _guarded(parser.parse_chain)

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

Limits: at most 5,000 characters, 60 levels of nesting and 60 digits per number. Numeric powers
with huge exponents are built unevaluated so that parsing itself cannot explode; what a later
simplification does with them is bounded by the sandbox's time and memory limits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sympy as sp

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
    tokenize,
)
from checkers.result import CheckInputError


@dataclass(frozen=True)
class Relation:
    """A parsed statement `lhs op rhs` (op: =, <, >, <=, >=, !=, ~)."""

    lhs: sp.Expr
    op: str
    rhs: sp.Expr


class Parser:
    """Recursive descent over tokens; every node is built by an explicit sympy constructor."""

    def __init__(self, text: str, syntax: Syntax = "latex", functions: tuple[str, ...] = (),
                 log_base: str | int = "e") -> None:  # fmt: skip
        if syntax not in ("latex", "plain"):
            raise CheckInputError(f"syntax must be 'latex' or 'plain', got {syntax!r}")
        self.syntax = syntax
        self.tokens = tokenize(text, syntax)
        self.i = 0
        self.depth = 0
        self.functions = set(functions)
        if log_base not in ("e", 10, "10", 2, "2"):
            raise CheckInputError("log_base must be 'e', 10 or 2")
        self.log_base = None if log_base == "e" else int(log_base)

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

    def parse_expr(self) -> sp.Expr:
        out = self.expr()
        self.finish()
        return out

    def finish(self) -> None:
        tok = self.peek()
        if tok.kind != "end":
            raise CheckInputError(f"unexpected {tok.text!r} at {tok.pos}")

    def relation_op(self) -> str | None:
        tok = self.peek()
        if tok.kind == "op" and tok.text in RELATION_OPS:
            self.i += 1
            return RELATION_OPS[tok.text]
        if tok.kind == "cmd" and tok.text[1:] in RELATIONS:
            self.i += 1
            return RELATIONS[tok.text[1:]]
        return None

    # -- expressions ---------------------------------------------------------------------------
    def expr(self) -> sp.Expr:
        self.enter()
        out = self.term()
        while True:
            if self.accept("+"):
                out = out + self.term()
            elif self.accept("-"):
                out = out - self.term()
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
                out = out * self.signed()
            elif tok.kind == "op" and tok.text == "/":
                self.i += 1
                out = out / self.signed()
            elif self.starts_atom(tok):
                out = out * self.power()
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
                raise CheckInputError("primes (derivatives) are not supported")
        return value

    def starts_atom(self, tok: Token) -> bool:
        if tok.kind in ("num", "id"):
            return True
        if tok.kind == "op":
            return tok.text in ("(", "[", "{")
        if tok.kind == "cmd":
            name = tok.text[1:]
            return name not in MUL_COMMANDS and name not in RELATIONS and name not in ("}", "|")
        return False

    def atom(self) -> sp.Expr:
        tok = self.next()
        if tok.kind == "num":
            return make_number(tok.text)
        if tok.kind == "op" and tok.text in ("(", "[", "{"):
            inner = self.expr()
            self.expect({"(": ")", "[": "]", "{": "}"}[tok.text])
            return inner
        if tok.kind == "cmd" and tok.text == "\\{":
            inner = self.expr()
            self.expect("\\}")
            return inner
        if tok.kind == "id":
            return self.identifier(tok)
        if tok.kind == "cmd":
            return self.command(tok)
        raise CheckInputError(f"unexpected {tok.text or 'end'!r} at {tok.pos}")

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
        if name in self.functions and self.peek().text == "(":
            return sp.Function(name)(*self.call_args())
        return sp.Symbol(name)

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
                elif tok.kind in ("num", "id"):
                    parts.append(tok.text.replace(".", "p"))
                elif tok.kind == "cmd" and tok.text[1:].isalpha():
                    name = tok.text[1:]
                    if name not in NAME_COMMANDS:
                        parts.append(SYMBOL_COMMANDS.get(name, name))
                elif tok.kind == "op" and tok.text in (",", "-", "+"):
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
            elif tok.kind == "id":
                name = tok.text
            elif tok.kind == "cmd" and tok.text[1:].isalpha():
                name = SYMBOL_COMMANDS.get(tok.text[1:], tok.text[1:])
            else:
                raise CheckInputError(f"bad subscript {tok.text!r} at {tok.pos}")
        if not name or not re.fullmatch(r"[A-Za-z0-9_]+", name):
            raise CheckInputError("empty or invalid subscript")
        return name

    def braced_name(self) -> str:
        """The raw text of `{...}` after a name command (`\\mathrm{SFR}` -> `SFR`)."""
        self.expect("{")
        parts: list[str] = []
        while not self.accept("}"):
            tok = self.next()
            if tok.kind in ("id", "num"):
                parts.append(tok.text)
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
            a = self.i
            num = self.group()
            b = self.i
            den = self.group()
            if _is_derivative(self._text(a, b), self._text(b, self.i)):
                # `\frac{d}{dx} f` read as d/(d*x)*f would refute true statements: refuse, never guess.
                raise UnsureParse("derivative notation \\frac{d}{dx} is not supported (a wrong parse must "
                                      "never refute)")
            return num / den
        if name == "sqrt":
            if self.accept("["):
                index = self.expr()
                self.expect("]")
                return make_pow(self.group(), 1 / index)
            return sp.sqrt(self.group())
        if name == "infty":
            return sp.oo
        if name == "pi":
            return sp.pi
        if name in ("sum", "prod"):
            return self.big_operator(name)
        if name in FUNCTIONS or name == "log":
            return self.apply(name)
        if name in GREEK:
            return self.symbol(name)
        if name in NAME_COMMANDS:
            word = self.braced_name()
            if word == "e":
                return sp.E
            if word == "i":
                return sp.I
            if word in FUNCTIONS or word in TWO_ARG or word in ("log", "Li"):
                return self.apply(word)
            return self.symbol(word)
        if name in ACCENTS:
            return self.symbol(f"{name}_{self.braced_name()}")
        if name in SYMBOL_COMMANDS:
            return sp.Symbol(SYMBOL_COMMANDS[name])
        raise CheckInputError(f"LaTeX command {tok.text!r} is not supported")

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
        while self.accept(","):
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

    def big_operator(self, name: str) -> sp.Expr:
        """`\\sum_{n=1}^{N} body` / `\\prod`: the body is the following product term."""
        self.expect("_")
        self.expect("{")
        var_tok = self.next()
        if var_tok.kind != "id" and not (var_tok.kind == "cmd" and var_tok.text[1:] in GREEK):
            raise CheckInputError("summation index must be a symbol")
        var = sp.Symbol(var_tok.text.lstrip("\\"), integer=True)
        self.expect("=")
        lower = self.expr()
        self.expect("}")
        self.expect("^")
        upper = self.group() if self.peek().text == "{" else self.atom()
        plain = sp.Symbol(var.name)
        body = self.term().xreplace({plain: var})
        if name == "sum":
            return sp.Sum(body, (var, lower, upper))
        return sp.Product(body, (var, lower, upper))


class UnsureParse(CheckInputError):
    """The text is well-formed LaTeX the parser would read wrongly (Leibniz derivatives): checks
    answer inconclusive, never refuted (issue 15: `\\frac{d}{dx}\\sin(x^2)` was read as sin(x^2)/x)."""


_D_OP = r"(?:d|\\partial|\\delta|\\mathrm \{ d \}|\\text \{ d \}|\\rm d|\\operatorname \{ d \})"


def _is_derivative(num: str, den: str) -> bool:
    """Is `\\frac{num}{den}` Leibniz notation (d/dx, df/dx, \\partial^2 f/\\partial x^2)? Token texts, space-joined."""
    n, d = num.strip().strip("{}").strip(), den.strip().strip("{}").strip()
    return bool(re.match(rf"{_D_OP}(?:\s|\^|$)", n) and re.match(rf"{_D_OP}\s*\S", d))


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


def parse(text: str, syntax: Syntax = "latex", functions: tuple[str, ...] = (),
          log_base: str | int = "e") -> sp.Expr | Relation:  # fmt: skip
    """Parse a statement: an expression, or `lhs <relation> rhs`."""
    return Parser(text, syntax, functions, log_base).parse_statement()


def parse_expr(text: str, syntax: Syntax = "latex", functions: tuple[str, ...] = (),
               log_base: str | int = "e") -> sp.Expr:  # fmt: skip
    """Parse an expression (no relation allowed)."""
    return Parser(text, syntax, functions, log_base).parse_expr()

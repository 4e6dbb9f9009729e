"""Do two pieces of LaTeX maths say the same thing? (issue 21: a notation-only rewrite is no erratum)

`same_rendered_maths(a, b)` is True when the two differ only in layout (spacing, sizing, fonts,
alignment, braces), in where a decoration sits (`t_{*,1}` and `t_1^*`), or when each relation's
sides are the same expression (`e^{x}` and `\\exp(x)`, `N\\,J^2` and `J^2\\,N`, `2\\pi/d` and
`2\\pi d^{-1}`, a factor taken out of a bracket): every side is read into sympy and compared at
random positive values of its symbols (complex results allowed, so a square root of a negative
number compares like for like). Anything this reader does not know (`\\pm`, sums, absolute values,
unknown commands) reads as "not the same": a doubtful edit stays an erratum.

The translation is small on purpose (sympy's own LaTeX parser needs antlr, not installed): each
letter is a symbol, a subscript or decoration is part of its symbol's name, juxtaposition is a product.
"""

from __future__ import annotations

import cmath
import random
import re

import sympy

__all__ = ["same_rendered_maths", "layout_normalised"]

_LAYOUT = re.compile(
    r"\\(?:left|right|big|Big|bigg|Bigg|bigl|bigr|Bigl|Bigr|displaystyle|textstyle|quad|qquad|nonumber|notag"
    r"|limits)(?![a-zA-Z])|\\label\s*\{[^}]*\}|\\begin\s*\{[^}]*\}|\\end\s*\{[^}]*\}"
    r"|\\[,;!: ]|~|&|\s+|(?<!\\)\$"
)
_FONT = re.compile(r"\\(?:mathcal|mathrm|mathbf|mathit|mathsf|mathtt|mathbb|boldsymbol|bm|bvec|vec|operatorname)\s*"
                   r"(?=\{)")
"""A font or vector style changes how a symbol looks, not which one it is (`Q` and `\\mathcal{Q}`)."""
_VECTOR_MACRO = re.compile(r"\\(?:v|bm|bf)([a-zA-Z])(?![a-zA-Z])")
"""One-letter vector macros papers define (`\\vf`, `\\vx`): the bold letter, the same symbol."""
_RELATIONS = re.compile(r"\\(?:leq?|geq?|approx|sim|simeq|equiv|neq?|to|propto|rightarrow|mapsto)(?![a-zA-Z])|[=<>]")
_DECORATIONS = re.compile(r"\\(?:star|prime|dagger|ast)(?![a-zA-Z])|[*']")
_FUNCTIONS = {"exp": "exp", "sin": "sin", "cos": "cos", "tan": "tan", "log": "log", "ln": "log", "sinh": "sinh",
              "cosh": "cosh", "tanh": "tanh", "sqrt": "sqrt"}
_GREEK = frozenset(["alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "rho", "varrho", "sigma", "varsigma", "tau", "upsilon", "phi", "varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi", "Psi", "Omega", "ell"])


class _Unknown(ValueError):
    """Maths this reader does not translate (the edit is then kept)."""


_SCRIPTED = re.compile(r"([A-Za-z]|\\[A-Za-z]+)((?:\s*[_^](?:\{[^{}]*\}|\\[A-Za-z]+|[^\s{}\\])|')+)")
_SCRIPT = re.compile(r"([_^])(?:\{([^{}]*)\}|(\\[A-Za-z]+|[^\s{}\\]))|(')")


def _decorations_placed(tex: str) -> str:
    """`t_{*,1}`, `t_1^*` and `t^*_1` written one way: a star or prime names the same symbol wherever it sits."""

    def canonical(m: re.Match) -> str:
        subs, sups, marks = [], [], []
        for s in _SCRIPT.finditer(m.group(2)):
            if s.group(4):
                marks.append("'")
                continue
            body = s.group(2) if s.group(2) is not None else s.group(3)
            found = [d.group(0) for d in _DECORATIONS.finditer(body)]
            rest = _DECORATIONS.sub("", body)
            marks += found
            if s.group(1) == "_":
                subs.append(re.sub(r"[\s,]", "", rest))
            elif rest.strip():
                sups.append(rest)
        if not marks:
            return m.group(0)
        marks = sorted("*" if d in ("\\star", "\\ast") else "'" if d == "\\prime" else d for d in marks)
        return m.group(1) + "_{" + "".join(subs) + "}^{" + "".join(marks) + "}" + "".join("^{" + x + "}" for x in sups)

    return _SCRIPTED.sub(canonical, tex)


def layout_normalised(tex: str) -> str:
    """The maths without layout, fonts, braces or final punctuation: equal strings render the same symbols."""
    s = _decorations_placed(_FONT.sub("", _VECTOR_MACRO.sub(r"\1", tex)))
    s = _LAYOUT.sub("", s).replace("\\\\", "")
    return re.sub(r"[{}]", "", s).rstrip(".,;")


class _Reader:
    def __init__(self, tex: str):
        self.s, self.i = tex, 0

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def command(self) -> str:
        m = re.compile(r"\\([a-zA-Z]+|.)").match(self.s, self.i)
        if not m:
            raise _Unknown("stray backslash")
        self.i = m.end()
        return m.group(1)

    def raw_group(self) -> str:
        """The next `{...}` group's text (or the next single character / command)."""
        while self.peek().isspace():
            self.i += 1
        if self.peek() == "{":
            depth, start = 0, self.i
            while self.i < len(self.s):
                c = self.s[self.i]
                depth += (c == "{") - (c == "}")
                self.i += 1
                if depth == 0:
                    return self.s[start + 1 : self.i - 1]
            raise _Unknown("unbalanced braces")
        if self.peek() == "\\":
            return "\\" + self.command()
        if not self.peek():
            raise _Unknown("script without an argument")
        self.i += 1
        return self.s[self.i - 1]

    def expression(self, stop: str = "") -> str:
        out: list[str] = []
        operand_before = False
        while self.i < len(self.s) and self.peek() not in stop:
            c = self.peek()
            if c.isspace():
                self.i += 1
                continue
            if c in "+-/":
                out.append(c)
                self.i += 1
                operand_before = False
                continue
            if c in "*":
                raise _Unknown("bare *")
            if c == "^":
                if not operand_before:
                    raise _Unknown("superscript without a base")
                self.i += 1
                out.append("**(" + _Reader(self.raw_group()).whole() + ")")
                continue
            term = self.operand()
            if operand_before:
                out.append("*")
            out.append(term)
            operand_before = True
        return "".join(out)

    def whole(self) -> str:
        text = self.expression()
        while self.peek().isspace():
            self.i += 1
        if self.i != len(self.s) or not text:
            raise _Unknown("unread text")
        return text

    def scripts(self, base: str) -> str:
        """A symbol `base` with its subscripts and decorations: one symbol name."""
        sub, decorations = "", []
        while self.peek() in ("_", "'") or (self.peek() == "^" and self._decoration_next()):
            c = self.peek()
            self.i += 1
            if c == "'":
                decorations.append("'")
                continue
            group = self.raw_group()
            decorations += [d.group(0).lstrip("\\") for d in _DECORATIONS.finditer(group)]
            group = _DECORATIONS.sub("", group)
            if c == "_":
                sub += re.sub(r"[\s,{}]|\\[,;!: ]", "", _FONT.sub("", group))
        name = base + ("_" + sub if sub else "") + ("__" + "".join(sorted(decorations)) if decorations else "")
        return "S_" + "".join(ch if ch.isalnum() or ch == "_" else f"x{ord(ch)}" for ch in name)

    def _decoration_next(self) -> bool:
        save = self.i
        self.i += 1
        try:
            group = self.raw_group()
        except _Unknown:
            return False
        finally:
            self.i = save
        return bool(group.strip()) and not _DECORATIONS.sub("", group).strip()

    def operand(self) -> str:
        c = self.peek()
        if c.isdigit() or c == ".":
            m = re.compile(r"\d*\.?\d+").match(self.s, self.i)
            if not m:
                raise _Unknown("number")
            self.i = m.end()
            return m.group(0)
        if c in "({[":
            close = {"(": ")", "{": "}", "[": "]"}[c]
            self.i += 1
            inner = self.expression(stop=close)
            if self.peek() != close:
                raise _Unknown("unbalanced bracket")
            self.i += 1
            return "(" + inner + ")"
        if c.isalpha():
            self.i += 1
            if c == "e" and self.peek() == "^" and not self._decoration_next():
                return "E"
            return self.scripts(c)
        if c == "\\":
            name = self.command()
            if name in ("frac", "dfrac", "tfrac"):
                num, den = self.raw_group(), self.raw_group()
                return f"(({_Reader(num).whole()})/({_Reader(den).whole()}))"
            if name in _FUNCTIONS:
                if name == "sqrt" and self.peek() == "[":
                    raise _Unknown("n-th root")
                if self.peek() == "^":
                    raise _Unknown("power of a function name")
                arg = self.operand() if self.peek() in "({" else self.operand_with_power()
                return f"{_FUNCTIONS[name]}({arg})"
            if name == "pi":
                return "pi"
            if name == "PMSIGN":
                return "S_pm"
            if name in ("cdot", "times"):
                raise _Unknown("explicit product inside an operand")
            if name in _GREEK:
                return self.scripts(name)
            raise _Unknown(f"\\{name}")
        raise _Unknown(f"character {c!r}")

    def operand_with_power(self) -> str:
        base = self.operand()
        if self.peek() == "^":
            self.i += 1
            return f"({base})**({_Reader(self.raw_group()).whole()})"
        return base


def _to_sympy(tex: str) -> sympy.Expr:
    tex = re.sub(r"\\(?:cdot|times)(?![a-zA-Z])", "{}*{}", tex)  # an explicit product: make it a plain one
    # a +- b: the sign is one more unknown, so a -+ b differs from it and a factored +- does not
    tex = re.sub(r"\\pm(?![a-zA-Z])", lambda _: "+ \\PMSIGN ", re.sub(r"\\mp(?![a-zA-Z])", lambda _: "- \\PMSIGN ", tex))
    tex = _FONT.sub("", _VECTOR_MACRO.sub(r"\1", tex))
    tex = _LAYOUT.sub(" ", tex).replace("\\\\", " ").strip().rstrip(".,;").strip()
    python = _Reader(tex.replace("{}*{}", " ")).whole()
    try:
        return sympy.sympify(python, locals={"E": sympy.E, "pi": sympy.pi})
    except (sympy.SympifyError, SyntaxError, TypeError) as exc:
        raise _Unknown(str(exc)) from exc


def _same_value(a: sympy.Expr, b: sympy.Expr, trials: int = 3) -> bool:
    symbols = sorted(a.free_symbols | b.free_symbols, key=str)
    rng = random.Random(0)  # the same points every run: the verdict is reproducible
    for _ in range(trials):
        point = {s: rng.uniform(0.3, 3.0) for s in symbols}
        try:
            va, vb = complex(a.evalf(subs=point)), complex(b.evalf(subs=point))
        except (TypeError, ValueError, ZeroDivisionError):
            return False
        if not all(cmath.isfinite(v) for v in (va, vb)) or abs(va - vb) > 1e-9 * (1 + abs(va)):
            return False
    return True


def _sides(tex: str) -> tuple[list[str], list[str]]:
    relations = [m.group(0) for m in _RELATIONS.finditer(tex)]
    return _RELATIONS.split(tex), relations


def same_rendered_maths(a: str, b: str) -> bool:
    """Do the maths `a` and `b` (a formula, several rows of one, or inline maths) say the same thing?"""
    if layout_normalised(a) == layout_normalised(b):
        return True
    rows_a, rows_b = re.split(r"\\\\", a), re.split(r"\\\\", b)
    if len(rows_a) != len(rows_b):
        return False
    for row_a, row_b in zip(rows_a, rows_b, strict=True):
        if layout_normalised(row_a) == layout_normalised(row_b):
            continue
        (sides_a, rel_a), (sides_b, rel_b) = _sides(row_a), _sides(row_b)
        if rel_a != rel_b:
            return False
        for side_a, side_b in zip(sides_a, sides_b, strict=True):
            if layout_normalised(side_a) == layout_normalised(side_b):
                continue
            try:
                if not _same_value(_to_sympy(side_a), _to_sympy(side_b)):
                    return False
            except _Unknown:
                return False
    return True

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

from storage.latex_comments import remove_comments

__all__ = ["argless_macros", "expand_macros", "layout_normalised", "same_relation", "same_rendered_maths"]

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


_PLACEHOLDER_ARG = re.compile(r"(?<=[(,])\s*(?:\\cdot|\\bullet|\\cdotp|\\,\s*\\cdot\s*\\,)\s*(?=[,)])")
"""An argument left open (`k(\\cdot,\\cdot)` and `k(.,.)`): the same placeholder, drawn another way."""


def layout_normalised(tex: str) -> str:
    """The maths without layout, fonts, braces or final punctuation: equal strings render the same symbols."""
    tex = _PLACEHOLDER_ARG.sub(".", tex)
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


def _sampled_values(a: sympy.Expr, b: sympy.Expr, trials: int = 3) -> list[tuple[complex, complex]] | None:
    """Both expressions' values at `trials` random positive points of their symbols; None when a value
    cannot be computed or is not finite ("cannot tell")."""
    symbols = sorted(a.free_symbols | b.free_symbols, key=str)
    rng = random.Random(0)  # the same points every run: the verdict is reproducible
    values = []
    for _ in range(trials):
        point = {s: rng.uniform(0.3, 3.0) for s in symbols}
        try:
            va, vb = complex(a.evalf(subs=point)), complex(b.evalf(subs=point))
        except (TypeError, ValueError, ZeroDivisionError):
            return None
        if not (cmath.isfinite(va) and cmath.isfinite(vb)):
            return None
        values.append((va, vb))
    return values


def _same_value(a: sympy.Expr, b: sympy.Expr) -> bool:
    values = _sampled_values(a, b)
    return values is not None and all(abs(va - vb) <= 1e-9 * (1 + abs(va)) for va, vb in values)


def _sides(tex: str) -> tuple[list[str], list[str]]:
    relations = [m.group(0) for m in _RELATIONS.finditer(tex)]
    return _RELATIONS.split(tex), relations


_SIMPLE = r"\\?[A-Za-z]+(?:_(?:\{[^{}]*\}|\\?\w))?|\d+(?:\.\d+)?"
_MIRRORED = re.compile(r"((?:^|[,({|]|\\\{|\\(?:forall|exists|quad|qquad|text\{[^{}]*\})|\\[,;: ])\s*)(" + _SIMPLE
                       + r")\s*(>|\\geq?|\\ge)(?![a-zA-Z])\s*(" + _SIMPLE + r")(?=\s*(?:$|[,)}|]|\\\}|\\quad|\\[,;: ]))")
"""A comparison of two plain symbols standing alone (after a quantifier, a comma or a bracket): `c > q` is `q < c`."""


def _mirrored(tex: str) -> str:
    """`c > q` written `q < c` and `c \\ge q` written `q \\le c` wherever a comparison of two symbols stands alone."""
    def swap(m: re.Match) -> str:
        relation = "<" if m.group(3) == ">" else "\\le"
        return f"{m.group(1)}{m.group(4)} {relation} {m.group(2)}"

    return _MIRRORED.sub(swap, tex)


def same_rendered_maths(a: str, b: str) -> bool:
    """Do the maths `a` and `b` (a formula, several rows of one, or inline maths) say the same thing?"""
    a, b = _mirrored(a), _mirrored(b)
    if layout_normalised(a) == layout_normalised(b):
        return True
    rows_a, rows_b = re.split(r"\\\\", a), re.split(r"\\\\", b)
    if len(rows_a) != len(rows_b):
        return False
    for row_a, row_b in zip(rows_a, rows_b, strict=True):
        if layout_normalised(row_a) == layout_normalised(row_b):
            continue
        if not (_same_sides(row_a, row_b) or same_relation(row_a, row_b)):
            return False
    return True


def _same_sides(row_a: str, row_b: str) -> bool:
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


# ---- the same relation rearranged (issue 21: `k - \log k = c` and `k = \log k + c` state one thing) -----------

_SYMMETRIC_RELATIONS = frozenset(["=", "\\approx", "\\equiv", "\\simeq", "\\neq", "\\ne"])
"""Relations that stay the same when both sides are swapped or scaled by a negative number (not `<`, not
`\\sim`, which reads "is distributed as" and has no sides to move terms across)."""


def same_relation(a: str, b: str) -> bool:
    """Are `a` and `b` one relation `lhs = rhs` each, stating the same thing with terms moved across the
    relation, the sides swapped or both scaled: lhs - rhs of one is a constant multiple of the other's (sympy at
    random values), or, where the reader does not know the maths (a norm), the same signed terms."""
    (sides_a, rel_a), (sides_b, rel_b) = _sides(a), _sides(b)
    if len(rel_a) != 1 or rel_a != rel_b or rel_a[0] not in _SYMMETRIC_RELATIONS:
        return False
    try:
        diff_a = _to_sympy(sides_a[0]) - _to_sympy(sides_a[1])
        diff_b = _to_sympy(sides_b[0]) - _to_sympy(sides_b[1])
    except _Unknown:
        terms_a, terms_b = _signed_terms(*sides_a), _signed_terms(*sides_b)
        return terms_a is not None and terms_b is not None and bool(terms_a) and terms_a in (terms_b, _negated(terms_b))
    return _proportional(diff_a, diff_b)


def _proportional(a: sympy.Expr, b: sympy.Expr) -> bool:
    values = _sampled_values(a, b)
    if values is None or any(abs(va) < 1e-12 or abs(vb) < 1e-12 for va, vb in values):
        return False  # 0 = 0 states nothing: never "the same relation"
    ratios = [va / vb for va, vb in values]
    return all(abs(r - ratios[0]) <= 1e-9 * (1 + abs(ratios[0])) for r in ratios)


_TERM_OPEN, _TERM_CLOSE = "{([", "})]"


def _signed_terms(lhs: str, rhs: str) -> dict[tuple[int, str], int] | None:
    """lhs - rhs as a multiset of (sign, term): the top-level sums of both sides, rhs negated, each term
    layout-normalised (None when a side has no term or holds a `\\pm`)."""
    out: dict[tuple[int, str], int] = {}
    for side, sign in ((lhs, 1), (rhs, -1)):
        side = re.sub(r"\\\|", "\u2016", _LAYOUT.sub(" ", side).replace("||", "\u2016"))
        if re.search(r"\\(?:pm|mp)(?![a-zA-Z])", side):
            return None
        depth, bars, term, term_sign, terms = 0, {"|": False, "\u2016": False}, "", 1, []
        i = 0
        while i < len(side):
            c = side[i]
            if c == "\\" and i + 1 < len(side):
                m = re.match(r"\\(?:[a-zA-Z]+|.)", side[i:])
                term += m.group(0)
                i += len(m.group(0))
                continue
            if c in _TERM_OPEN:
                depth += 1
            elif c in _TERM_CLOSE:
                depth -= 1
            elif c in bars:
                bars[c] = not bars[c]
            if c in "+-" and depth == 0 and not any(bars.values()):
                if term.strip():
                    terms.append((term_sign, term))
                term, term_sign = "", 1 if c == "+" else -1
            else:
                term += c
            i += 1
        if term.strip():
            terms.append((term_sign, term))
        for t_sign, t in terms:
            key = (t_sign * sign, layout_normalised(t))
            if key[1] and key[1] != "0":
                out[key] = out.get(key, 0) + 1
    return out or None


def _negated(terms: dict[tuple[int, str], int]) -> dict[tuple[int, str], int]:
    return {(-sign, t): n for (sign, t), n in terms.items()}


# ---- a paper's own macros (issue 21: `\\hphi` renamed `\\hPhi`, `n` written `\\layerindex`) -------------------

_MACRO_DEF = re.compile(r"\\(?:(?:re|provide)?newcommand\*?\s*\{?\s*\\([A-Za-z]+)\s*\}?|def\s*\\([A-Za-z]+))\s*(?=[{\[])")
SIUNITX_ABBREVIATIONS = {
    "um": "\\micro\\meter", "nm": "\\nano\\meter", "mm": "\\milli\\meter", "cm": "\\centi\\meter",
    "km": "\\kilo\\meter", "ms": "\\milli\\second", "us": "\\micro\\second", "ns": "\\nano\\second",
    "kHz": "\\kilo\\hertz", "MHz": "\\mega\\hertz", "GHz": "\\giga\\hertz", "mg": "\\milli\\gram",
    "kg": "\\kilo\\gram", "nT": "\\nano\\tesla", "mT": "\\milli\\tesla", "uT": "\\micro\\tesla",
    "pT": "\\pico\\tesla", "mA": "\\milli\\ampere", "uA": "\\micro\\ampere", "mV": "\\milli\\volt",
    "kV": "\\kilo\\volt", "mW": "\\milli\\watt", "kW": "\\kilo\\watt", "MW": "\\mega\\watt",
    "mK": "\\milli\\kelvin", "mL": "\\milli\\litre", "uL": "\\micro\\litre", "mmol": "\\milli\\mole",
}
"""The unit abbreviations siunitx predefines (its manual, "Unit abbreviations"): `\\um` prints what
`\\micro\\meter` prints."""


def argless_macros(tex: str) -> dict[str, str]:
    """Name -> body of every macro `tex` defines without arguments (`\\newcommand{\\hPhi}{\\vh}`,
    `\\def\\x{...}`); a macro with arguments or an unbalanced body is left out (never expanded)."""
    tex = remove_comments(tex)
    out: dict[str, str] = {}
    for m in _MACRO_DEF.finditer(tex):
        i = m.end()
        if tex[i] != "{":
            continue  # `[1]`: it takes arguments
        depth, j = 0, i
        while j < len(tex):
            c = tex[j]
            if c == "\\":
                j += 2
                continue
            depth += (c == "{") - (c == "}")
            j += 1
            if depth == 0:
                break
        if depth == 0 and "#" not in tex[i:j]:
            out[m.group(1) or m.group(2)] = tex[i + 1 : j - 1]
    return out


def expand_macros(tex: str, macros: dict[str, str], rounds: int = 4) -> str:
    """`tex` with `macros` (and siunitx's unit abbreviations) replaced by their bodies, in braces, a few
    rounds deep (a self-referencing macro stops there) and never past 20x the input's length."""
    table = {**SIUNITX_ABBREVIATIONS, **macros}
    for _ in range(rounds):
        new = re.sub(r"\\([A-Za-z]+)(?![A-Za-z])",
                     lambda m: "{" + table[m.group(1)] + "}" if m.group(1) in table else m.group(0), tex)
        if new == tex or len(new) > 20 * len(tex) + 200:
            break
        tex = new
    return tex

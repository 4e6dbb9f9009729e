"""Tokens of the whitelisted LaTeX / plain grammar, and the whitelists themselves.

The tokenizer accepts only: whitespace, numbers, ASCII letters (one per token in LaTeX, whole
identifiers in plain syntax), backslash commands made of letters (or one of `\\, \\; \\: \\! \\{ \\}`)
and the operator characters listed in `_OPS`. Anything else (quotes, dots after names, `;` in plain
syntax, `@`, `#`, non-ASCII) rejects the whole input. Which commands mean something is decided by the
parser against the whitelists below; an unknown command is rejected there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import sympy as sp

from checkers.result import CheckInputError

Syntax = Literal["latex", "plain"]
MAX_CHARS = 5000
MAX_DEPTH = 60
MAX_DIGITS = 60

GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta",
    "iota", "kappa", "lambda", "mu", "nu", "xi", "rho", "varrho", "sigma", "tau", "upsilon", "phi",
    "varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma",
    "Upsilon", "Phi", "Psi", "Omega", "ell", "hbar",
}  # fmt: skip
FUNCTIONS = {
    "exp": sp.exp, "ln": sp.log, "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "sinh": sp.sinh,
    "cosh": sp.cosh, "tanh": sp.tanh, "arcsin": sp.asin, "arccos": sp.acos, "arctan": sp.atan,
    "asin": sp.asin, "acos": sp.acos, "atan": sp.atan, "sqrt": sp.sqrt, "erf": sp.erf, "abs": sp.Abs,
    "sec": sp.sec, "csc": sp.csc, "cot": sp.cot,
}  # fmt: skip
TWO_ARG = {"B": sp.beta, "beta": sp.beta, "polylog": sp.polylog}
NAME_COMMANDS = {
    "mathrm",
    "text",
    "operatorname",
    "mathit",
    "mathbf",
    "boldsymbol",
    "rm",
    "textrm",
    "mathsf",
    "mbox",
    "textnormal",
    "textit",
    "textbf",
    "bm",
}
ACCENTS = {"hat", "bar", "tilde", "vec", "dot", "ddot", "mathcal", "overline", "widehat", "widetilde"}
SPACING = {",", ";", ":", "!", " ", "quad", "qquad", "left", "right", "big", "Big", "bigg", "Bigg",
           "bigl", "bigr", "Bigl", "Bigr", "biggl", "biggr", "Biggl", "Biggr", "displaystyle", "textstyle",
           "limits", "nolimits", "nonumber", "notag", "ensuremath", "middle"}  # fmt: skip
SYMBOL_COMMANDS = {
    "star": "star",
    "odot": "sun",
    "sun": "sun",
    "prime": "prime",
    "ast": "star",
    "oplus": "earth",
}
RELATIONS = {"=": "=", "<": "<", ">": ">", "le": "<=", "leq": "<=", "ge": ">=", "geq": ">=",
             "approx": "~", "simeq": "~", "neq": "!=", "ne": "!=",
             "equiv": "def", "coloneqq": "def", "triangleq": "def", "doteq": "def", "propto": "propto", "sim": "sim",
             "Rightarrow": "implies", "Leftrightarrow": "implies", "implies": "implies", "iff": "implies"}  # fmt: skip
MUL_COMMANDS = {"cdot", "times"}
RELATION_OPS = {"=": "=", "<": "<", ">": ">", "<=": "<=", ">=": ">=", "!=": "!="}

# [0-9], not \d: \d also matches Arabic-Indic, fullwidth and other Unicode digits, which are rejected.
_COMMON = (
    r"\s+|(?P<skip>\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big)\s*\.)"  # `\left.` is an invisible bracket
    r"|(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)|(?P<cmd>\\(?:[A-Za-z]+|[,;:! {}|\\]))"
)
_OPS = r"|(?P<op>\*\*|<=|>=|!=|:=|[-+*/^_=<>(){}\[\],|!'&~])"
_LATEX_OPS = _OPS[:-2] + ";:])"  # `;` separates arguments in paper notation (`f(0;0)`, issue 21); `:` is read
# so that the parser can call it unsure (`\inf_{\hat{Z}: X \mapsto R}`, `\{x : x > 0\}`), not bad input
_TOKEN = {
    "latex": re.compile(_COMMON + r"|(?P<id>[A-Za-z])" + _LATEX_OPS),
    "plain": re.compile(_COMMON + r"|(?P<id>[A-Za-z][A-Za-z0-9_]*)" + _OPS),
}


@dataclass(frozen=True)
class Token:
    kind: str  # num | cmd | id | op | end
    text: str
    pos: int


def tokenize(text: str, syntax: Syntax) -> list[Token]:
    if not isinstance(text, str):
        raise CheckInputError("expression must be a string")
    if len(text) > MAX_CHARS:
        raise CheckInputError(f"expression longer than {MAX_CHARS} characters")
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN[syntax].match(text, pos)
        if m is None:
            raise CheckInputError(f"character {text[pos]!r} at {pos} is not allowed")
        pos = m.end()
        if m.lastgroup in (None, "skip"):
            continue
        kind, value = m.lastgroup, m.group(m.lastgroup)
        if kind == "id" and value.startswith("_"):
            raise CheckInputError(f"identifier {value!r} is not allowed")
        if kind == "cmd" and value[1:] in SPACING:
            continue
        if kind == "op" and value == "**":
            value = "^"
        if kind == "op" and value == "~":
            continue
        tokens.append(Token(kind, value, m.start()))
    tokens.append(Token("end", "", len(text)))
    return tokens


class UnsureParse(CheckInputError):
    """The text is well-formed LaTeX that the parser cannot read with confidence (an undeclared
    function under a derivative, an index set it cannot see, an environment it does not know):
    checks answer inconclusive, never refuted (issue 15: a wrong parse must never refute)."""


class UnknownCommand(CheckInputError):
    """A LaTeX command outside the whitelist (`\\mathbb`, `\\input`, ...): never evaluated."""


def is_d(tok: Token) -> bool:
    """A differential `d`: a plain `d` or one written `\\mathrm{d}` (normalised to kind `diff`)."""
    return tok.kind == "diff" or (tok.kind == "id" and tok.text == "d")


def is_var_start(tok: Token) -> bool:
    return tok.kind == "id" or (tok.kind == "cmd" and tok.text[1:] in GREEK)


def normalise(tokens: list[Token]) -> list[Token]:
    """`\\mathrm{d}` (and `\\text{d}`, `\\operatorname{d}`, `{\\rm d}`) become one `diff` token;
    `&` and `\\\\` are kept only inside `\\begin{...}...\\end{...}` (alignment marks elsewhere)."""
    out: list[Token] = []
    i, env = 0, 0
    while i < len(tokens):
        tok = tokens[i]
        texts = [t.text for t in tokens[i : i + 4]]
        if (
            tok.kind == "cmd"
            and tok.text[1:] in ("mathrm", "text", "operatorname", "textrm")
            and texts[1:] == ["{", "d", "}"]
        ):
            out.append(Token("diff", "d", tok.pos))
            i += 4
            continue
        if texts[:3] == ["\\rm", "d", "}"] and out and out[-1].text == "{":
            out[-1] = Token("diff", "d", tok.pos)
            i += 3
            continue
        if texts[:3] == ["{", "d", "}"] and tokens[i + 1].kind == "diff":
            out.append(tokens[i + 1])
            i += 3
            continue
        if tok.kind == "cmd" and tok.text == "\\begin":
            env += 1
        elif tok.kind == "cmd" and tok.text == "\\end":
            env -= 1
        if (
            tok.kind == "cmd" and tok.text == "\\qty" and texts[1:2] in (["("], ["["])
        ):  # physics package: sized brackets
            i += 1
            continue
        if env <= 0 and (
            (tok.kind == "op" and tok.text == "&") or (tok.kind == "cmd" and tok.text == "\\\\")
        ):
            i += 1
            continue
        out.append(tok)
        i += 1
    # `{ diff }` left by `\ensuremath{\,\mathrm{d}}` (the `\dd` of several papers): one token
    j, merged = 0, []
    while j < len(out):
        if out[j].text == "{" and j + 2 < len(out) and out[j + 1].kind == "diff" and out[j + 2].text == "}":
            merged.append(out[j + 1])
            j += 3
        else:
            merged.append(out[j])
            j += 1
    return merged

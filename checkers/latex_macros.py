"""A paper's own macros (`\\newcommand`, `\\renewcommand`, `\\providecommand`, `\\def`,
`\\DeclareMathOperator`) read from its preamble and expanded in a statement before parsing.

This is text substitution only: definitions are read by a brace-matching scanner, arguments
(`#1`..`#9`, an optional first argument with its default) are substituted as text, and nothing
is executed. Expansion is bounded (at most `MAX_EXPANSIONS` macro uses and `MAX_CHARS` characters
of output), so a self-referencing or exponential macro is an input error, not a hang. Macros the
scanner cannot read exactly (delimited `\\def` parameters, `\\let`, catcode tricks) are left out:
the statement then keeps the command and the parser rejects it or answers inconclusive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from checkers.latex_tokens import MAX_CHARS
from checkers.result import CheckInputError
from storage.latex_comments import remove_comments

MAX_EXPANSIONS = 500
MAX_MACROS = 5000


@dataclass(frozen=True)
class Macro:
    name: str
    """Without the backslash."""
    n_args: int
    body: str
    default: str | None = None
    """The default of an optional first argument (`\\newcommand{\\x}[2][d]{...}`), else None."""


def _group(text: str, i: int) -> tuple[str, int] | None:
    """The content of the balanced `{...}` starting at text[i] (after spaces), and the index after it."""
    while i < len(text) and text[i] in " \t\n":
        i += 1
    if i >= len(text) or text[i] != "{":
        return None
    depth, j = 0, i
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j], j + 1
        j += 1
    return None


def _bracket(text: str, i: int, max_len: int | None = None) -> tuple[str, int] | None:
    """The content of `[...]` at text[i] (after spaces), brace-aware, and the index after it; with
    `max_len`, None when it does not close within that many characters (an unterminated `[` in a
    preamble must not be scanned to the end once per definition)."""
    while i < len(text) and text[i] in " \t\n":
        i += 1
    if i >= len(text) or text[i] != "[":
        return None
    depth, j = 0, i + 1
    stop = len(text) if max_len is None else min(len(text), i + 1 + max_len)
    while j < stop:
        c = text[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "]" and depth == 0:
            return text[i + 1 : j], j + 1
        j += 1
    return None


_NAME = re.compile(r"\s*\\([A-Za-z]+)")
_MAX_BRACKET = 2000
"""An argument count or default longer than this is not a definition's (`\\newcommand{\\x}[`)."""
_DEF_PARAMS = re.compile(r"((?:#[1-9])*)\s*\{")


def _group_ends(text: str) -> dict[int, int]:
    """Each `{` -> index after its closing `}` (absent when unbalanced), as `_group` scans (a backslash
    escapes the next character), in one pass: a preamble of unbalanced `\\def\\x{` lines would
    otherwise rescan the file once per definition (quadratic, issue 26)."""
    ends: dict[int, int] = {}
    stack: list[int] = []
    for m in re.finditer(r"\\.|[{}]", text, re.S):
        c = m.group()
        if c == "{":
            stack.append(m.start())
        elif c == "}" and stack:
            ends[stack.pop()] = m.end()
    return ends


def _group_in(text: str, i: int, ends: dict[int, int]) -> tuple[str, int] | None:
    """`_group` over a whole preamble, with the closing braces found once by `_group_ends`."""
    while i < len(text) and text[i] in " \t\n":
        i += 1
    if i >= len(text) or text[i] != "{" or i not in ends:
        return None
    return text[i + 1 : ends[i] - 1], ends[i]


def parse_macros(preamble: str) -> dict[str, Macro]:
    """Every macro definition in `preamble` that can be read exactly; later definitions win."""
    text = remove_comments(preamble)
    ends = _group_ends(text)
    found: dict[str, Macro] = {}
    pattern = re.compile(r"\\(newcommand|renewcommand|providecommand|DeclareMathOperator|def)\b\*?")
    for m in pattern.finditer(text):
        if len(found) >= MAX_MACROS:
            break
        i = m.end()
        if m.group(1) == "def":
            name_m = _NAME.match(text, i)
            if not name_m:
                continue
            i = name_m.end()
            params = _DEF_PARAMS.match(text, i)
            if not params:  # delimited parameters (`\def\x#1.{...}`): not read, the command stays
                continue
            body = _group_in(text, i + len(params.group(1)), ends)
            if body is not None:
                found[name_m.group(1)] = Macro(name_m.group(1), len(params.group(1)) // 2, body[0])
            continue
        braced = _group_in(text, i, ends)
        if braced is not None:
            name_m = re.fullmatch(r"\s*\\([A-Za-z]+)\s*", braced[0])
            i = braced[1]
        else:
            name_m = _NAME.match(text, i)
            i = name_m.end() if name_m else i
        if not name_m:
            continue
        name = name_m.group(1)
        if m.group(1) == "DeclareMathOperator":
            body = _group_in(text, i, ends)
            if body is not None:
                found[name] = Macro(name, 0, rf"\operatorname{{{body[0]}}}")
            continue
        n_args, default = 0, None
        count = _bracket(text, i, _MAX_BRACKET)
        if count is not None:
            if not count[0].strip().isdigit():
                continue
            n_args, i = int(count[0].strip()), count[1]
            opt = _bracket(text, i, _MAX_BRACKET)
            if opt is not None:
                default, i = opt
        body = _group_in(text, i, ends)
        if body is None or n_args > 9:
            continue
        if m.group(1) == "providecommand" and name in found:
            continue
        found[name] = Macro(name, n_args, body[0], default)
    return found


def _argument(text: str, i: int) -> tuple[str, int]:
    """One undelimited macro argument at text[i]: a braced group's content, a command, or one character."""
    while i < len(text) and text[i] in " \t\n":
        i += 1
    if i >= len(text):
        raise CheckInputError("a macro is missing an argument")
    if text[i] == "{":
        group = _group(text, i)
        if group is None:
            raise CheckInputError("unbalanced braces in a macro argument")
        return group
    cmd = re.match(r"\\(?:[A-Za-z]+|.)", text[i:])
    if cmd:
        return cmd.group(0), i + cmd.end()
    return text[i], i + 1


def _substitute(body: str, args: list[str]) -> str:
    """`#1`..`#9` in a macro body replaced by the arguments (a missing one by nothing)."""
    return re.sub(
        r"#([1-9])", lambda a: args[int(a.group(1)) - 1] if int(a.group(1)) <= len(args) else "", body
    )


def expand_macros(text: str, macros: dict[str, Macro]) -> str:
    """`text` with every use of a macro in `macros` replaced by its body, repeatedly (bounded)."""
    if not macros:
        return text
    uses = 0
    pattern = re.compile(r"\\([A-Za-z]+)")
    pos = 0
    while True:
        m = pattern.search(text, pos)
        if m is None:
            return text
        macro = macros.get(m.group(1))
        if macro is None:
            pos = m.end()
            continue
        uses += 1
        if uses > MAX_EXPANSIONS:
            raise CheckInputError(f"more than {MAX_EXPANSIONS} macro expansions (recursive macro?)")
        i = m.end()
        args: list[str] = []
        n = macro.n_args
        if macro.default is not None:
            opt = _bracket(text, i)
            if opt is not None:
                args.append(opt[0])
                i = opt[1]
            else:
                args.append(macro.default)
            n -= 1
        for _ in range(n):
            arg, i = _argument(text, i)
            args.append(arg)
        body = _substitute(macro.body, args)
        # A body ending in a command name must not glue onto following letters (`\dd t` -> `\,\mathrm{d} t`).
        text = text[: m.start()] + body + (" " if re.search(r"\\[A-Za-z]+$", body) else "") + text[i:]
        if len(text) > MAX_CHARS:
            raise CheckInputError(f"statement longer than {MAX_CHARS} characters after macro expansion")
        pos = m.start()  # the body itself may use macros


def preamble_of(source: str) -> str:
    """The part of a main .tex file before `\\begin{document}` (all of it when there is none)."""
    cut = source.find("\\begin{document}")
    return source if cut < 0 else source[:cut]

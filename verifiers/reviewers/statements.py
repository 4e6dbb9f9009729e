"""Checkable statements in a paper's LaTeX, found by rule (reference 002, appendices A.2-A.3).

The mechanical reviewer's extraction step, with no model: each `Statement` is one check request
for the checkers (`kind`, `payload`) plus the verbatim source passages it rests on (`quotes`, with
file and offsets, so a flag points at the text it doubts). What is extracted:

* mathematics — derivation chains `A = B = C` in displayed equations (consecutive right-hand
  sides must be equal), equations without free symbols, two-sided steps with a computed operator
  (derivative, integral, limit, sum, \\nabla: `\\frac{d}{dx} f = g`), series `\\sum ... = closed
  form`, and a quantity defined twice by displayed equations (`X = e1` and later `X = e2`: e1 must
  equal e2). Each step goes as `math.statement` (`{"statement": "a = b", "preamble": ...}`), the
  checker for paper notation that refutes only on an unambiguous parse and when every symbol is
  free in the paper (`context`: the paper's other equations and prose dependences sharing a symbol with
  the step, its own row left out; issue 21); `preamble` holds the
  paper's own `\\newcommand`/`\\def`/`\\DeclareMathOperator` macros that the step uses (read from
  every .tex file; `\\makeatletter` internals left out). Series keep `math.series`;
* numerics — abstract numbers whose wording recurs in the body with another number
  (`numerics.abstract_body`), a constant assigned inline (`$h = 0.7$`) with different values
  in different sentences (`numerics.repeated_constant`), table rows labelled Total
  (`numerics.table_column_total`) and columns headed Total (`numerics.table_row_total`),
  "K of M (P%)" and "P% (K/M)" (`numerics.percentage_of`), "P% of" with P > 100 and
  percentages of a stated split that exceed 100 together (`numerics.percentages_sum`).

Comments are blanked (offsets kept). A displayed equation that defines rather than claims (`:=`,
`\\equiv`, "where ..." right after it, "we define" / "let" / "defined as" right before it) is never
checked as an identity at its first `=` (later steps of a chain still are) nor compared with
another definition of the same symbol (issue 15: `k =
2\\pi/\\lambda n, where n is ...` is a definition). Rules favour precision: an equation that is a physical law
rather than an identity (`a^2 + b^2 = c^2`, no computed operator) is never checked, since
random-point sampling would refute it; nor is a list of values (`m = 10, d = 8`), nor a row that
opens or closes an inner environment. A constant printed once with another value is a drift only
when it shares a (sub)section with the common value and is not a one-digit case label (`\\ell = 0`).
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import fuzz

from checkers.latex_macros import Macro, expand_macros, parse_macros
from checkers.latex_tokens import GREEK
from checkers.result import CheckInputError
from corpora.papers.latex_paper import display_blocks
from storage.latex_comments import blank_comments

__all__ = ["Quote", "Statement", "extract_statements"]


@dataclass(frozen=True)
class Quote:
    file: str
    start: int
    end: int
    text: str

    @property
    def location(self) -> str:
        return f"{self.file}:{self.start}-{self.end}"


@dataclass
class Statement:
    kind: str
    payload: dict[str, Any]
    quotes: list[Quote]
    error_type: str
    """mathematics | numerics"""
    description: str
    extra: dict[str, Any] = field(default_factory=dict)


_DISPLAY_ENVS = "equation|align|eqnarray|gather|multline|displaymath"
"""Display blocks are found by `display_blocks` (linear: an unterminated one never rescans the file)."""
_INLINE = re.compile(r"(?<![\\$])\$([^$]{1,120})\$")
_NUM = r"[-−]?\d[\d,]*(?:\.\d+)?"
_BARE_HEAD = re.compile(
    r"^(?:\\(?:hat|tilde|bar|vec|mathbf|mathrm|boldsymbol|mathcal|dot|ddot|widehat)\{[^{}]*\}|\{[^{}]*\}|\\?[A-Za-z]+)"
    r"(?:\s*[_^]\s*(?:\{[^{}]*\}|\\?[A-Za-z0-9]+))*\s*(?:\([^()]*\))?$")
_NUMBER_ONLY = re.compile(rf"^\s*{_NUM}\s*$")
_DROP = re.compile(r"\\(label|eqlabel|tag|eqref|ref)\{[^{}]*\}|\\(nonumber|notag|displaystyle|left|right|quad|qquad)\b"
                   r"|\\[,;:! ]")  # fmt: skip
_ASSIGN = re.compile(rf"^\s*(\\?[A-Za-z]+(?:_\{{[^{{}}]*\}}|_[A-Za-z0-9])?)\s*=\s*({_NUM})\s*$")
_RULE = re.compile(r"\\(hline|midrule|toprule|bottomrule|cline\{[^{}]*\}|cmidrule(\([^()]*\))?\{[^{}]*\})")
_CELL_NUM = re.compile(rf"^\s*(?:\\textbf\{{|\\mathbf\{{|\{{)?\$?\s*({_NUM})\s*\$?\}}?\s*$")
_PCT = r"(\d+(?:\.\d+)?)\s*\\?%"
_WORD = re.compile(r"[A-Za-z]{2,}")


def _clean_math(text: str) -> str:
    text = _DROP.sub(" ", text).replace("&", " ").replace("{}", " ")
    return re.sub(r"[\s,.;]+$", "", text.strip())


def _split_top(text: str, sep: str = "=") -> list[str]:
    parts, depth, current = [], 0, []
    for ch in text:
        depth += ch in "{([" and 1 or 0
        depth -= ch in "})]" and 1 or 0
        if ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts]


def _has_free_symbols(expr: str) -> bool:
    stripped = re.sub(r"\\(frac|sqrt|cdot|times|pi|left|right|mathrm\{e\}|ln|log|exp|sin|cos|tan)", "", expr)
    return bool(re.search(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+", "x", stripped) if "\\" in stripped else stripped))


_DEF_INSIDE = re.compile(r":=|=:|\\coloneqq|\\eqqcolon|\\equiv|\\triangleq|\\stackrel\{\s*\\?(?:rm\s*)?def|"
                         r"\\overset\{\s*\\?(?:rm\s*)?def")
_DEF_BEFORE = re.compile(r"(?:\bwe\s+(?:define|set|introduce|write|denote)|\blet\b|\bdefined\s+(?:as|by)|"
                         r"\bdefinition\b|\bdenote[sd]?\b)[^.]*$", re.IGNORECASE)
_DEF_AFTER = re.compile(r"^[\s,.;]*(?:\\end\{[a-z*]+\}\s*)?[\s,.;]*(?:where|with|in which|here)\b", re.IGNORECASE)


def _is_definition(text: str, start: int, end: int, body: str) -> bool:
    """Does the display at [start, end) define a symbol (by its operator or its surrounding words)?"""
    if _DEF_INSIDE.search(body):
        return True
    before = text[max(0, start - 200):start]
    before = before[max(before.rfind("."), before.rfind("\n\n")) + 1:]
    return bool(_DEF_BEFORE.search(before) or _DEF_AFTER.match(text[end:end + 60]))


_PREAMBLE_MAX = 20_000
"""Characters of macro definitions sent with one statement (only the macros it uses travel)."""


def paper_macros(texts: dict[str, str], main_file: str | None = None) -> dict[str, Macro]:
    """The paper's own macros (`\\newcommand`, `\\def`, ...) from every .tex file, the main file's
    preamble first so that a macro file it inputs (or a later `\\renewcommand`) wins."""
    order = sorted(texts, key=lambda f: (f != main_file, f))
    macros: dict[str, Macro] = {}
    for file in order:
        macros.update(parse_macros(texts[file]))
    return macros


def _macro_source(m: Macro) -> str:
    args = f"[{m.n_args}]" if m.n_args else ""
    default = f"[{m.default}]" if m.default is not None else ""
    return f"\\newcommand{{\\{m.name}}}{args}{default}{{{m.body}}}"


def preamble_for(text: str, macros: dict[str, Macro]) -> str:
    """LaTeX defining the macros `text` uses, directly or through other macros (empty when none)."""
    if not macros:
        return ""
    used: list[str] = []
    todo = re.findall(r"\\([A-Za-z]+)", text)
    while todo:
        name = todo.pop()
        # `\makeatletter` internals (`\@ifnextchar` peeking) are not text substitution: leave them unexpanded
        if name in macros and name not in used and "@" not in macros[name].body:
            used.append(name)
            todo += re.findall(r"\\([A-Za-z]+)", macros[name].body + (macros[name].default or ""))
    lines = [_macro_source(macros[n]) for n in sorted(used)]
    out = "\n".join(lines)
    return out if len(out) <= _PREAMBLE_MAX else ""


def _expanded(text: str, macros: dict[str, Macro]) -> str:
    """`text` with the paper's macros expanded, for the extraction rules only (the check gets the source)."""
    try:
        return expand_macros(text, macros) if macros else text
    except CheckInputError:
        return text


_ANNOTATION = re.compile(r"\s*\{\s*\\[A-Za-z]+(?:\s*\{[^{}]*\})*\s*\}")
_TOP_LEVEL = re.compile(r"\{[^{}]*\}|\([^()]*\)|\[[^\[\]]*\]")
"""A bracketed group without nested brackets; removed repeatedly, what remains is the top level."""
_LIST_COMMA = re.compile(r",\s*\S")


def _top_level(text: str) -> str:
    for _ in range(20):
        text, n = _TOP_LEVEL.subn(" ", text)
        if not n:
            break
    return text


_CALCULUS = re.compile(r"\\(?:partial|int|iint|oint|lim|sum|prod|nabla)(?![A-Za-z])"
                       r"|\\frac\s*\{\s*(?:\\mathrm\s*\{\s*d\s*\}|\\rm\s+d|d(?![a-ce-z]{2}))")
"""An operator the check computes (a derivative, integral, limit, sum, \\nabla): a two-sided relation
with one is a derivation step to verify, where a bare algebraic `a = b` with free symbols is a law."""


_EQUATION_GAP = re.compile(r"[,;]?\s*\\q?quad(?![A-Za-z])")
_RELATION = re.compile(r"=")


def _top_level_rows(body: str) -> list[str]:
    """`body` split at the `\\\\` that end rows; one inside braces (`\\sup_{\\substack{f \\in H \\\\ |f| = 1}}`)
    belongs to its group, so a row is never cut in the middle of a subscript (issue 21, held-out papers)."""
    rows, depth, last = [], 0, 0
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            if body.startswith("\\\\", i) and depth == 0:
                rows.append(body[last:i])
                last = i + 2
            i += 2  # an escaped character (`\\{`, `\\}`) never opens or closes a group
            continue
        depth += (ch == "{") - (ch == "}" and depth > 0)
        i += 1
    rows.append(body[last:])
    return rows


def _display_rows(body: str, offset: int) -> list[tuple[str, int]]:
    """The rows of a display (split at `\\\\`) and, within a row, the equations written side by side
    (`a = b, \\qquad c = d` at the top level: two statements, never one chain `a = b c = d`, issue 21)."""
    out: list[tuple[str, int]] = []
    start = 0
    for row in _top_level_rows(body):
        row_start, start = offset + start, start + len(row) + 2
        last = 0
        for m in _EQUATION_GAP.finditer(row):
            before, after = row[last:m.start()], row[m.end():]
            depth = sum(row[:m.start()].count(c) for c in "{([") - sum(row[:m.start()].count(c) for c in "})]")
            if depth == 0 and _RELATION.search(before) and _RELATION.search(after.split("\\quad")[0]):
                out.append((before, row_start + last))
                last = m.end()
        out.append((row[last:], row_start + last))
    return out


def _math_statements(file: str, text: str, macros: dict[str, Macro] | None = None,
                     ) -> tuple[list[Statement], list[tuple[str, str, Quote]]]:  # fmt: skip
    macros = macros or {}
    out: list[Statement] = []
    definitions: list[tuple[str, str, Quote]] = []
    for block_start, block_end, offset, body_end in display_blocks(text, _DISPLAY_ENVS):
        body = text[offset:body_end]
        if lead := _ANNOTATION.match(body):  # `\begin{equation}{\lwFuncURL{evol}{de_dt}}`: a hook's argument
            body, offset = body[lead.end():], offset + lead.end()
        defines = _is_definition(text, block_start, block_end, body)
        rows, spans = [], []
        for row, s in _display_rows(body, offset):
            cleaned = _clean_math(row)
            if not cleaned:
                continue
            if rows and cleaned.startswith("="):
                rows[-1] += " " + cleaned
                spans[-1] = (spans[-1][0], s + len(row))
            else:
                rows.append(cleaned)
                spans.append((s, s + len(row)))
        for chain, (s, e) in zip(rows, spans, strict=True):
            # the rules read the chain with the paper's macros expanded (`\\vr` may hide `\\approx` or a symbol)
            seen = _expanded(chain, macros)
            if any(op in seen for op in ("\\approx", "\\simeq", "\\sim", "\\propto", "\\le", "\\ge", "<", ">",
                                         "\\equiv", "\\to", "\\begin", "\\end", "\\text")):  # fmt: skip
                continue
            if _LIST_COMMA.search(_top_level(seen)):
                continue  # `m = 10, d = 8`, `E[x] = mu, Var[x] = s^2`: a list of values, not one chain
            parts = [p for p in _split_top(chain) if p]
            seen_parts = [_expanded(p, macros) for p in parts]
            quote = Quote(file, s, e, text[s:e])
            if len(parts) < 2 or len(seen_parts) != len(_split_top(seen)):
                continue  # a macro hides an `=`: the sides are not where the source shows them
            if len(parts) == 2 and _BARE_HEAD.match(seen_parts[0]) and not defines:
                definitions.append((re.sub(r"\s+", "", parts[0]), parts[1], quote))
            # A defining display's first `=` introduces its left side; later steps of a chain are still claims.
            first = 1 if _BARE_HEAD.match(seen_parts[0]) or defines else 0
            for (a, b), (sa, sb) in zip(zip(parts[first:], parts[first + 1:], strict=False),
                                        zip(seen_parts[first:], seen_parts[first + 1:], strict=False), strict=True):  # fmt: skip
                free_a, free_b = _has_free_symbols(sa), _has_free_symbols(sb)
                # a computed operator (derivative, integral, limit, sum) binds its variable: `\int_0^1 2x dx = 1` is
                # an evaluation, where `a + b = 3` is a condition and `a^2 + b^2 = c^2` a law, not identities
                computed = bool(_CALCULUS.search(sa + " " + sb))
                if _BARE_HEAD.match(sa) or _BARE_HEAD.match(sb) or (
                        free_a != free_b and not computed and (_NUMBER_ONLY.match(sa) or _NUMBER_ONLY.match(sb))):
                    continue
                if len(parts) == 2 and (free_a or free_b) and not computed:
                    continue
                if "\\sum" in sa and not _has_free_symbols(re.sub(r"\\sum_\{[^{}]*\}\^\{?[^{}\s]*\}?", "", sb)):
                    kind, payload = "math.series", {"series": a, "equals": b}
                else:  # as printed, read by the paper-statement checker (never refuted on an unsure parse)
                    kind, payload = "math.statement", {"statement": f"{a} = {b}"}
                if preamble := preamble_for(a + " " + b, macros):
                    payload["preamble"] = preamble
                out.append(Statement(kind, payload, [quote], "mathematics",
                                     f"equation step does not hold: {a} = {b}"))  # fmt: skip
    return out, definitions


def _redefinitions(definitions: list[tuple[str, str, Quote]], macros: dict[str, Macro] | None = None,
                   ) -> list[Statement]:  # fmt: skip
    by_head: dict[str, list[tuple[str, Quote]]] = {}
    for head, rhs, quote in definitions:
        by_head.setdefault(head, []).append((rhs, quote))
    out = []
    for head, uses in by_head.items():
        forms = {re.sub(r"\s+", "", r): (r, q) for r, q in uses}
        if len(forms) < 2:
            continue
        (r1, q1), (r2, q2) = list(forms.values())[:2]
        if fuzz.ratio(re.sub(r"\s+", "", r1), re.sub(r"\s+", "", r2)) < 80:
            continue  # two different cases, not one expression that drifted
        payload = {"statement": f"{r1} = {r2}"}
        if preamble := preamble_for(r1 + " " + r2, macros or {}):
            payload["preamble"] = preamble
        out.append(Statement("math.statement", payload, [q2, q1], "mathematics",
                             f"{head} is given two different expressions: {r1} and {r2}"))  # fmt: skip
    return out


_SECTION = re.compile(r"\\(?:sub)*section\*?\s*[\[{]")
_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n\s*\n")


def _sentence_start(text: str, pos: int) -> int:
    """`_sentence_bounds(text, pos)[0]` without the search for the end (unbounded on a file without one)."""
    window = max(0, pos - 2000)
    starts = [m.end() for m in _SENTENCE_END.finditer(text, window, pos)]
    return starts[-1] if starts else window


def _sentence_bounds(text: str, pos: int) -> tuple[int, int]:
    """[start, end) of the sentence around `pos` (ends: . ! ? before a space, or a blank line)."""
    window = max(0, pos - 2000)
    starts = [m.end() for m in _SENTENCE_END.finditer(text, window, pos)]
    end = _SENTENCE_END.search(text, pos)
    return (starts[-1] if starts else window), (end.end() if end else len(text))


def _repeated_constants(file_texts: dict[str, str]) -> list[Statement]:
    by_symbol: dict[str, list[tuple[str, Quote, tuple[str, int]]]] = {}
    sections: dict[Quote, tuple[str, int]] = {}
    for file, text in file_texts.items():
        section_starts = [m.start() for m in _SECTION.finditer(text)]  # counted by bisection, not rescanned per use
        for m in _INLINE.finditer(text):
            a = _ASSIGN.match(m.group(1))
            if a:
                q = Quote(file, m.start(), m.end(), m.group(0))
                by_symbol.setdefault(a.group(1).replace(" ", ""), []).append(
                    (a.group(2), q, (file, _sentence_start(text, m.start()))))
                sections[q] = (file, bisect.bisect_left(section_starts, m.start()))
    out = []
    for symbol, uses in by_symbol.items():
        counts = Counter(v for v, _, _ in uses)
        if len(uses) < 3 or len(counts) != 2 or len({s for _, _, s in uses}) < 2:
            continue  # a drift is one odd printing of a constant printed the same way elsewhere
        (common, n_common), (odd, n_odd) = counts.most_common()
        if n_odd != 1 or n_common < 2:
            continue
        if all(re.fullmatch(r"\d", v) for v in (common, odd)):
            continue  # `$\ell = 1$` modes and `$\ell = 0$` modes: a one-digit integer labels a case, not a constant
        minority = [q for v, q, _ in uses if v == odd]
        if sections[minority[0]] not in {sections[q] for v, q, _ in uses if v == common}:
            continue  # alone in its (sub)section: another experiment's setting (alpha = 0.3 here, 0.1 there)
        out.append(Statement("numerics.repeated_constant", {"values": [v for v, _, _ in uses]}, minority,
                             "numerics", f"{symbol} is {common} in {n_common} places but {odd} once"))  # fmt: skip
    return out


def _abstract_span(file_texts: dict[str, str]) -> tuple[str, int, int] | None:
    for file, text in file_texts.items():
        m = re.search(r"\\begin\{abstract\}(.*?)\\end\{abstract\}", text, re.DOTALL)
        if m and len(m.group(1).strip()) > 100:
            return file, m.start(1), m.end(1)
    for file, text in file_texts.items():
        if re.search(r"(^|/)abstract[^/]*\.tex$", file) and len(text.strip()) > 100:
            return file, 0, len(text)
    return None


_CTX_NUM = re.compile(rf"((?:[A-Za-z][A-Za-z-]*[\s~]+){{2}}(?:\$?\\?(?:sim|approx|simeq)?\s*)?)\$?({_NUM})")
_RANGE_END = re.compile(r"\$?\s*(?:--?-?|–|—|\\textendash|\\textemdash|\bto\b)\s*\$?\s*(?:\\sim\s*)?\d")
"""`10--20\\%`, `5-10`, `2 to 4`: the number opens a range, which is the claim; its first end is not a value
(issue 21, held out: `10--20\\%` in an abstract was compared with `5-10\\%` in the body as 10 vs 5)."""


def _abstract_body(file_texts: dict[str, str]) -> list[Statement]:
    span = _abstract_span(file_texts)
    if span is None:
        return []
    afile, a0, a1 = span
    abstract = file_texts[afile][a0:a1]
    body_hits: dict[str, list[tuple[str, Quote]]] = {}
    for file, text in file_texts.items():
        for m in _CTX_NUM.finditer(text):
            if file == afile and a0 <= m.start() < a1 or _RANGE_END.match(text, m.end()):
                continue
            key = " ".join(_WORD.findall(m.group(1).lower()))
            body_hits.setdefault(key, []).append((m.group(2), Quote(file, m.start(), m.end(), m.group(0))))
    out = []
    for m in _CTX_NUM.finditer(abstract):
        key = " ".join(_WORD.findall(m.group(1).lower()))
        number = m.group(2)
        if len(key.split()) < 2 or len(number.replace(",", "").replace(".", "").lstrip("-−")) < 2:
            continue
        if _RANGE_END.match(abstract, m.end()):
            continue
        hits = body_hits.get(key, [])
        if not hits or any(v == number for v, _ in hits):
            continue
        value, quote = hits[0]
        aq = Quote(afile, a0 + m.start(), a0 + m.end(), m.group(0))
        out.append(Statement("numerics.abstract_body", {"abstract": number, "body": value}, [aq, quote],
                             "numerics", f"abstract says {number} where the body says {value} ('{key} ...')"))  # fmt: skip
    return out


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.split("&")]


def _cell_number(cell: str) -> str | None:
    cell = re.sub(r"\\pm.*|\$\s*\\pm.*|\s*\(.*\)\s*$", "", cell).strip()
    m = _CELL_NUM.match(cell)
    return m.group(1) if m else None


_TABULAR_TAG = re.compile(r"\\(begin|end)\{tabular\*?\}")
_EXAMPLE_ROW = re.compile(r"^\W*(?:e\.\s?g\.|i\.\s?e\.|for example|for instance)", re.IGNORECASE)


def _skip_group(text: str, pos: int, open_: str = "{", close: str = "}") -> int:
    """Position after the balanced group opening at `pos` (after whitespace); `pos` itself when none opens there."""
    k = pos
    while k < len(text) and text[k].isspace():
        k += 1
    if k >= len(text) or text[k] != open_:
        return pos
    depth = 0
    for n in range(k, len(text)):
        depth += (text[n] == open_) - (text[n] == close)
        if depth == 0:
            return n + 1
    return pos


def tabular_bodies(text: str) -> list[tuple[int, str]]:
    """(offset, body) of every tabular, nesting matched: a tabular inside a cell is its own table, and
    in its parent's body it is blanked (same length), so the parent's rows and columns are its own (issue 21:
    three "e.g." rows of a nested tabular were summed as the outer column)."""
    spans: list[tuple[int, int, int]] = []  # (begin tag start, body start, end tag start)
    stack: list[tuple[int, int]] = []
    for m in _TABULAR_TAG.finditer(text):
        if m.group(1) == "begin":
            pos = _skip_group(text, m.end(), "[", "]")  # [t] position
            if m.group(0).endswith("*}"):
                pos = _skip_group(text, pos)  # width of tabular*
            stack.append((m.start(), _skip_group(text, pos)))  # column spec
        elif stack:
            begin, body = stack.pop()
            spans.append((begin, body, m.start()))
    out = []
    for begin, body, end in sorted(spans):
        chars = list(text[body:end])
        for b2, _, e2 in spans:
            if body <= b2 and e2 < end and (b2, e2) != (begin, end):
                tail = text.index("}", e2) + 1  # through `\end{tabular}`
                chars[b2 - body:tail - body] = " " * (tail - b2)
        out.append((body, "".join(chars)))
    return out


def _tables(file: str, text: str) -> list[Statement]:
    out = []
    for base, body in tabular_bodies(text):
        blocks: list[list[tuple[list[str], Quote]]] = [[]]
        pos = 0
        for raw in re.split(r"\\\\", body):
            s, pos = base + pos, pos + len(raw) + 2
            rules = list(_RULE.finditer(raw))
            if rules:
                blocks.append([])
                s, raw = s + rules[-1].end(), raw[rules[-1].end():]
            if not raw.strip():
                continue
            lead = len(raw) - len(raw.lstrip())
            row = raw.strip()
            if _EXAMPLE_ROW.match(row):
                continue  # "e.g. ..." illustrates a row, it is not one of the rows a total adds up
            blocks[-1].append((_cells(row), Quote(file, s + lead, s + lead + len(row), text[s + lead:s + lead + len(row)])))
        blocks = [b for b in blocks if b]
        rows = [r for b in blocks for r in b]
        header = rows[0][0] if rows else []
        for bi, block in enumerate(blocks):
            for ri, (cells, quote) in enumerate(block):
                if not re.search(r"\b(total|sum|all)\b", cells[0], re.IGNORECASE):
                    continue
                data = block[:ri] if ri else (blocks[bi - 1] if bi else [])
                for j in range(1, len(cells)):
                    total = _cell_number(cells[j])
                    values = [v for c, _ in data if j < len(c) and (v := _cell_number(c[j])) is not None]
                    if total is None or len(values) < 2 or "%" in cells[j]:
                        continue
                    out.append(Statement("numerics.table_column_total", {"values": values, "total": total},
                                         [quote], "numerics",
                                         f"column {j} of the table does not add up to its total {total}"))  # fmt: skip
        tcol = next((j for j, c in enumerate(header) if j and re.fullmatch(r"\W*total\W*", c, re.IGNORECASE)), None)
        if tcol is None:
            continue
        for cells, quote in rows[1:]:
            total = _cell_number(cells[tcol]) if tcol < len(cells) else None
            values = [v for c in cells[1:tcol] if (v := _cell_number(c)) is not None]
            if total is not None and len(values) >= 2:
                out.append(Statement("numerics.table_row_total", {"values": values, "total": total}, [quote],
                                     "numerics", f"table row '{cells[0]}' does not add up to its total {total}"))  # fmt: skip
    return out


_PCT_OF_A = re.compile(rf"(\d[\d,]*)\s+(?:out\s+)?of\s+(?:the\s+|all\s+|our\s+)?(\d[\d,]*)\b[^.%]{{0,60}}?\(\s*{_PCT}")
_PCT_OF_B = re.compile(rf"{_PCT}\s*\(\s*(\d[\d,]*)\s*(?:/|out of|of)\s*(\d[\d,]*)\s*\)")
_PCT_OVER = re.compile(rf"{_PCT}\s+of\s+(?:the|all|our|its|their)\b")
_GROWTH = re.compile(r"increase|improve|more|higher|faster|larger|growth|speed|gain|reduc|decreas|than", re.I)
_SPLIT = re.compile(r"\b(split|comprise|comprising|consist|account(?:s|ed)? for|divided|breakdown|fractions?|remaining)\b",
                    re.I)


def _percentages(file: str, text: str) -> list[Statement]:
    out = []
    for m in _PCT_OF_A.finditer(text):
        out.append(Statement("numerics.percentage_of", {"percent": f"{m.group(3)}%", "of": m.group(2),
                             "stated": m.group(1)}, [Quote(file, m.start(), m.end(), m.group(0))], "numerics",
                             f"{m.group(1)} of {m.group(2)} is not {m.group(3)}%"))  # fmt: skip
    for m in _PCT_OF_B.finditer(text):
        out.append(Statement("numerics.percentage_of", {"percent": f"{m.group(1)}%", "of": m.group(3),
                             "stated": m.group(2)}, [Quote(file, m.start(), m.end(), m.group(0))], "numerics",
                             f"{m.group(2)}/{m.group(3)} is not {m.group(1)}%"))  # fmt: skip
    for m in _PCT_OVER.finditer(text):
        s, e = _sentence_bounds(text, m.start())
        if float(m.group(1)) > 100 and not _GROWTH.search(text[s:e]):
            out.append(Statement("numerics.percentages_sum", {"percentages": [f"{m.group(1)}%"], "relation": "at_most"},
                                 [Quote(file, m.start(), m.end(), m.group(0))], "numerics",
                                 f"a share of {m.group(1)}% exceeds 100%"))  # fmt: skip
    seen: set[int] = set()
    for m in _SPLIT.finditer(text):
        s, e = _sentence_bounds(text, m.start())
        if s in seen:
            continue
        seen.add(s)
        pcts = list(re.finditer(_PCT, text[s:e]))
        if len(pcts) >= 2 and not _GROWTH.search(text[s:e]):
            q0, q1 = s + pcts[0].start(), s + pcts[-1].end()
            out.append(Statement("numerics.percentages_sum",
                                 {"percentages": [f"{p.group(1)}%" for p in pcts], "relation": "at_most"},
                                 [Quote(file, q0, q1, text[q0:q1])], "numerics",
                                 "the shares of one split add up to more than 100%"))  # fmt: skip
    return out


@dataclass(frozen=True)
class ContextEntry:
    """An equation of the paper (display row, inline math) or a prose dependence (`$A$ as a function of
    $t$` read as `A(t)`), sent with a statement so the checker can tell whether its symbols are free."""

    file: str
    start: int
    end: int
    latex: str

    def payload(self) -> dict[str, str]:
        return {"latex": self.latex, "where": f"{self.file}:{self.start}"}


_PROSE_DEPENDENCE = re.compile(
    r"(?<![\\$])\$([^$]{1,40})\$[^$.]{0,30}?\b(?:(?:as|is|are)\s+(?:a\s+)?functions?\s+of|depends?\s+(?:only\s+)?on|"
    r"dependent\s+on|varies\s+with|in\s+terms\s+of)\s+(?:the\s+)?(?:\w+\s+){0,2}?\$([^$]{1,40})\$", re.IGNORECASE)
_SYMBOL_TOKEN = re.compile(r"\\([A-Za-z]+)|(?<![\\A-Za-z])([A-Za-z])(?![A-Za-z])")
_CONTEXT_PER_STATEMENT = 40
_CONTEXT_ENTRY_MAX = 1500
"""Characters of one context equation (a longer row is a derivation, not a relation that ties symbols)."""


def paper_context(texts: dict[str, str], macros: dict[str, Macro] | None = None) -> list[ContextEntry]:
    """Every equation of the paper that could tie a statement's symbols (issue 21): display rows,
    inline math with `=` or a bracket, and prose dependences."""
    out: list[ContextEntry] = []
    for file, text in texts.items():
        for _, _, offset, body_end in display_blocks(text, _DISPLAY_ENVS):
            for row, s in _display_rows(text[offset:body_end], offset):
                if "=" in row or "(" in row:
                    out.append(ContextEntry(file, s, s + len(row), _clean_math(row)))
        for m in _INLINE.finditer(text):
            if "=" in m.group(1) or "(" in m.group(1):
                out.append(ContextEntry(file, m.start(1), m.end(1), _clean_math(m.group(1))))
        for m in _PROSE_DEPENDENCE.finditer(text):
            head = m.group(1).strip()
            if _BARE_HEAD.match(_expanded(head, macros or {})):
                out.append(ContextEntry(file, m.start(), m.end(), f"{head}({m.group(2).strip()})"))
    return out


def _symbol_tokens(latex: str) -> set[str]:
    return {a or b for a, b in _SYMBOL_TOKEN.findall(latex) if (a in GREEK if a else b != "d")}


def context_for(statement: str, quotes: list[Quote], entries: list[ContextEntry]) -> list[dict[str, str]]:
    """The paper's equations that share a symbol with `statement`, the statement's own rows left out."""
    wanted = _symbol_tokens(statement)
    scored = []
    for n, entry in enumerate(entries):
        if any(q.file == entry.file and q.start < entry.end and entry.start < q.end for q in quotes):
            continue
        if len(entry.latex) > _CONTEXT_ENTRY_MAX:
            continue
        shared = len(wanted & _symbol_tokens(entry.latex))
        if shared:
            scored.append((-shared, n, entry))
    return [e.payload() for _, _, e in sorted(scored)[:_CONTEXT_PER_STATEMENT]]


def extract_statements(files: dict[str, str], main_file: str | None = None) -> list[Statement]:
    """Every checkable statement in a copy's `.tex` files (see the module docstring)."""
    texts = {f: blank_comments(t) for f, t in sorted(files.items()) if f.endswith(".tex")}
    macros = paper_macros(texts, main_file)
    statements: list[Statement] = []
    definitions: list[tuple[str, str, Quote]] = []
    for file, text in texts.items():
        found, defs = _math_statements(file, text, macros)
        statements += found
        definitions += defs
        statements += _tables(file, text) + _percentages(file, text)
    statements += _redefinitions(definitions, macros) + _repeated_constants(texts) + _abstract_body(texts)
    context = paper_context(texts, macros)
    for st in statements:  # a refutation needs every symbol free in the paper (issue 21)
        if st.kind == "math.statement" and (ctx := context_for(st.payload["statement"], st.quotes, context)):
            st.payload["context"] = ctx
    # quotes must be verbatim source text (masking only blanks comments)
    return [s for s in statements if all(q.text.strip() and files[q.file][q.start:q.end] == q.text for q in s.quotes)]

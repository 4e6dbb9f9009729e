"""Rule injectors for mathematics errors in displayed equations (appendix C.2.3).

Each takes a loaded paper and returns its candidate proposals, one per eligible place; the
builder shuffles them with the copy's seed and keeps the first the validator accepts. Edits are
made on comment-free equation content at top-level positions (outside braces, labels and text).
"""

from __future__ import annotations

import re

from corpora.papers.injectors_core import (
    Proposal,
    binary_operators,
    depth_map,
    forbidden_regions,
    inside,
    proposal,
    segment_end,
)
from corpora.papers.latex_paper import LatexPaper
from storage.latex_comments import blank_comments


def _equations(paper: LatexPaper):
    for span in paper.index.display_math:
        content = blank_comments(paper.files[span.file][span.start : span.end])
        yield span, content


def _add(out: list[Proposal], p: Proposal | None) -> None:
    if p is not None:
        out.append(p)


def sign_flip(paper: LatexPaper) -> list[Proposal]:
    out: list[Proposal] = []
    for span, content in _equations(paper):
        for i in binary_operators(content)[1:] or binary_operators(content):
            new = "-" if content[i] == "+" else "+"
            _add(out, proposal(paper, span.file, span.start + i, span.start + i + 1, new,
                               f"sign of a subleading term flipped ({content[i]} -> {new})"))  # fmt: skip
    return out


_COEF_RE = re.compile(r"(?<![\w.^_{])(\d+(?:\.\d+)?)(?=\s*(?:[A-Za-z(]|\\[a-zA-Z]))")


def coefficient_change(paper: LatexPaper) -> list[Proposal]:
    out: list[Proposal] = []
    for span, content in _equations(paper):
        regions = forbidden_regions(content)
        for m in _COEF_RE.finditer(content):
            if inside(m.start(), regions) or content[max(0, m.start() - 2) : m.start()] in ("^{", "_{"):
                continue
            s = m.group(1)
            if "." in s:
                new = s[:-1] + str((int(s[-1]) + 2) % 10)
            elif int(s) in (0, 1):
                continue
            else:
                new = str(int(s) * 2)
            _add(out, proposal(paper, span.file, span.start + m.start(1), span.start + m.end(1), new,
                               f"numerical coefficient changed ({s} -> {new})"))  # fmt: skip
    return out


_BOUND_RE = re.compile(r"\\(?:sum|prod|int|bigcup|bigcap)\s*(?:\\limits\s*)?[_^]\s*\{?\s*(?:([a-zA-Z]\w*)\s*=\s*)?(-?\d+)(?![\d.])")
_LIMITS_RE = re.compile(r"\s*\}?\s*(?:[_^]\s*(?:\{[^{}]*\}|\\[A-Za-z]+|\w))*")


def _vanishes_at(summand: str, var: str, value: int) -> bool:
    """Whether the summand has a factor that is zero at var = value: (k-1) at k = 1, a leading k at
    k = 0. Moving a lower bound onto such a term adds zero: the sum is unchanged (issue 21)."""
    if value == 0 and re.match(rf"\s*{re.escape(var)}(?![\w_^])", summand):
        return True
    return re.search(rf"\(\s*{re.escape(var)}\s*-\s*{value}\s*\)", summand) is not None


def index_bound_shift(paper: LatexPaper) -> list[Proposal]:
    out: list[Proposal] = []
    for span, content in _equations(paper):
        for m in _BOUND_RE.finditer(content):
            var, n = m.group(1), int(m.group(2))
            new = str(n - 1 if n >= 1 else n + 1)
            rest = _LIMITS_RE.match(content, m.end())
            summand = content[rest.end() if rest else m.end() :][:60]
            if var and int(new) < n and _vanishes_at(summand, var, int(new)):
                continue
            _add(out, proposal(paper, span.file, span.start + m.start(2), span.start + m.end(2), new,
                               f"bound of the sum/product/integral shifted ({n} -> {new})"))  # fmt: skip
    return out


def term_deletion(paper: LatexPaper) -> list[Proposal]:
    out: list[Proposal] = []
    for span, content in _equations(paper):
        ops = binary_operators(content)
        depth = depth_map(content)
        for k, i in enumerate(ops):
            end = min([j for j in ops[k + 1 :]] + [segment_end(content, i + 1)])
            term = content[i:end]
            if not term[1:].strip() or len(term) > 80 or "\\label" in term or any(d < depth[i] for d in depth[i:end]):
                continue
            _add(out, proposal(paper, span.file, span.start + i, span.start + end, "",
                               f"additive term deleted: '{term.strip()}'"))  # fmt: skip
    return out


_SWAPS = {"sum": "prod", "prod": "sum", "max": "min", "min": "max", "sin": "cos", "cos": "sin", "exp": "log",
          "log": "exp", "leq": "geq", "geq": "leq", "le": "ge", "ge": "le", "cup": "cap", "cap": "cup"}  # fmt: skip
_SWAP_RE = re.compile(r"\\(" + "|".join(sorted(_SWAPS, key=len, reverse=True)) + r")(?![a-zA-Z])")


def operator_swap(paper: LatexPaper) -> list[Proposal]:
    out: list[Proposal] = []
    for span, content in _equations(paper):
        regions = forbidden_regions(content)
        for m in _SWAP_RE.finditer(content):
            if inside(m.start(), regions):
                continue
            new = "\\" + _SWAPS[m.group(1)]
            _add(out, proposal(paper, span.file, span.start + m.start(), span.start + m.end(), new,
                               f"operator swapped (\\{m.group(1)} -> {new})"))  # fmt: skip
    return out


def _top_level_equals(content: str) -> list[int]:
    depth = depth_map(content)
    regions = forbidden_regions(content)
    return [i for i, c in enumerate(content) if c == "=" and depth[i] == 0 and not inside(i, regions)]


_ARG_RE = re.compile(r"\\arg\s*\\?(?:min|max)|\\argm(?:in|ax)|\\operatorname\*?\{arg\s*(?:min|max)\}")


def spurious_prefactor(paper: LatexPaper) -> list[Proposal]:
    out: list[Proposal] = []
    for span, content in _equations(paper):
        for i in _top_level_equals(content):
            rhs_start = i + 1
            while rhs_start < len(content) and content[rhs_start].isspace():
                rhs_start += 1
            end = segment_end(content, rhs_start)
            rhs = content[rhs_start:end].rstrip()
            if not rhs or re.fullmatch(r"[\d.\s]+", rhs):
                continue
            if rhs.startswith("\\frac{1}{") or rhs.startswith("\\frac1"):
                close = content.find("}", rhs_start + 9)
                if 0 < close < end:
                    _add(out, proposal(paper, span.file, span.start + rhs_start, span.start + close + 1, "",
                                       "normalisation prefactor dropped"))  # fmt: skip
                continue
            if rhs.startswith(("\\{", "\\left\\{", "\\lbrace")) or _ARG_RE.search(rhs):
                continue  # a set (builder) or an argmin (an object, not a value) has no prefactor
            plain = not [j for j in binary_operators(rhs) if j > 0]
            if plain and rhs[0] in "+-":
                # "-\\frac{64}{5}..." gets its 1/2 after the sign, else "1/2 - x" adds a constant (issue 21)
                new = rhs[0] + "\\frac{1}{2} " + rhs[1:].lstrip()
            else:
                new = "\\frac{1}{2} " + rhs if plain else "\\frac{1}{2}\\left(" + rhs + "\\right)"
            _add(out, proposal(paper, span.file, span.start + rhs_start, span.start + rhs_start + len(rhs), new,
                               "spurious 1/2 prefactor inserted on the right-hand side"))  # fmt: skip
    return out


def dimensional_absurdity(paper: LatexPaper) -> list[Proposal]:
    out: list[Proposal] = []
    for span, content in _equations(paper):
        eqs = _top_level_equals(content)
        if not eqs:
            continue
        i = eqs[0]
        lhs = content[:i]
        for a, b in forbidden_regions(lhs):
            lhs = lhs[:a] + " " * (b - a) + lhs[b:]
        # issue 21: what is left must be a quantity: \\text{NSR}^2 blanked to "^2", \\textrm{BIC}(M) to "(M)" are not
        lhs = lhs.strip().rstrip("&").strip()
        if (not lhs or len(lhs) > 25 or "&" in lhs or "\\\\" in lhs or "\\label" in lhs
                or not re.match(r"[A-Za-z]|\\[A-Za-z]", lhs) or lhs.count("{") != lhs.count("}") or lhs.count("(") != lhs.count(")")):
            continue
        end = segment_end(content, i + 1)
        rhs = content[i + 1 : end].rstrip()
        # the term goes before the sentence's punctuation ("L(s),\\quad for each c": not after the comma)
        while rhs and rhs[-1] in ",.;" and not rhs.endswith("\\" + rhs[-1]):
            rhs = rhs[:-1].rstrip()
        if not rhs.strip() or "\\circ" in rhs or _ARG_RE.search(rhs) or rhs.lstrip().startswith(("\\{", "\\left\\{")):
            continue  # a composition of functions (f = f_2 \\circ f_1), an argmin, a set: no quantity with dimensions
        pos = i + 1 + len(rhs)
        new = f" + \\left({lhs}\\right)^{{2}}"
        _add(out, proposal(paper, span.file, span.start + pos, span.start + pos, new,
                           f"bare term ({lhs})^2 added: its dimensions differ from the other terms"))  # fmt: skip
    return out


_FRAC_RE = re.compile(r"\\[dt]?frac\s*\{")


def _group(content: str, open_pos: int) -> int:
    depth = 0
    for j in range(open_pos, len(content)):
        if content[j] == "{" and content[j - 1] != "\\":
            depth += 1
        elif content[j] == "}" and content[j - 1] != "\\":
            depth -= 1
            if depth == 0:
                return j
    return -1


def fraction_inversion(paper: LatexPaper) -> list[Proposal]:
    out: list[Proposal] = []
    for span, content in _equations(paper):
        for m in _FRAC_RE.finditer(content):
            a_end = _group(content, m.end() - 1)
            if a_end < 0 or a_end + 1 >= len(content) or content[a_end + 1] != "{":
                continue
            b_end = _group(content, a_end + 1)
            if b_end < 0:
                continue
            num, den = content[m.end() : a_end], content[a_end + 2 : b_end]
            if num.strip() == den.strip():
                continue
            new = content[m.start() : m.end()] + den + "}{" + num + "}"
            _add(out, proposal(paper, span.file, span.start + m.start(), span.start + b_end + 1, new,
                               f"fraction inverted: ({num})/({den}) -> ({den})/({num})"))  # fmt: skip
    return out


_EXP_RE = re.compile(r"\^\{\s*([^{}]+?)\s*\}")


def exponent_flip(paper: LatexPaper) -> list[Proposal]:
    out: list[Proposal] = []
    for span, content in _equations(paper):
        for m in _EXP_RE.finditer(content):
            body = m.group(1)
            if body.count("(") or body.count("["):  # "(l-1)" split at its "-" would unbalance the brackets (issue 21)
                continue
            parts = body.split("-")
            if body.startswith("-") and len(parts) == 2 and parts[1].strip():
                new = parts[1].strip()
            elif len(parts) == 2 and parts[0].strip() and parts[1].strip() and "+" not in body:
                new = f"{parts[1].strip()}-{parts[0].strip()}"
            else:
                continue
            _add(out, proposal(paper, span.file, span.start + m.start(1), span.start + m.end(1), new,
                               f"exponent flipped ({body} -> {new}): the limiting behaviour reverses"))  # fmt: skip
    return out


RULES_MATH = {
    "sign_flip": sign_flip,
    "coefficient_change": coefficient_change,
    "index_bound_shift": index_bound_shift,
    "term_deletion": term_deletion,
    "operator_swap": operator_swap,
    "spurious_prefactor": spurious_prefactor,
    "dimensional_absurdity": dimensional_absurdity,
    "fraction_inversion": fraction_inversion,
    "exponent_flip": exponent_flip,
}

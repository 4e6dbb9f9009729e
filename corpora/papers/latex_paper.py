"""A LaTeX paper loaded from its project folder, byte-exact, with an index of what injectors need.

`load_latex_paper(folder)` finds the main file (meta.json's `path_in_repo`, else the file with
`\\documentclass` and `\\begin{document}`), follows `\\input`/`\\include`/`\\subfile` recursively and
collects the `.bib` files named by `\\bibliography`, `\\addbibresource` or ReScience's
`\\articleBIBLIOGRAPHY`. When the main file inputs a file that is not in the folder (a template
header), the folder's other non-root `.tex` files are taken as loaded by it (ReScience
`metadata.tex`). Sources keep their exact text (`newline=""`; UTF-8, else Latin-1).

Every path read comes from the paper, so each is contained: an absolute path, a `..` climbing
out, or a symlink whose target lies outside the folder is refused unread and recorded in
`LatexPaper.refused` with its file, line and reason.

`PaperIndex` lists, per compiled file, char spans of: comments, display and inline maths,
tables (tabular environments), citation commands with their keys, labels, references, the
abstract, section headings, prose sentences, and numbers in prose with their sentence. Spans are
`Span(file, start, end)` on the file's text. Nothing here edits a paper.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from storage.latex_comments import blank_comments, comment_spans

MAX_INPUT_DEPTH = 64
"""`\\input` nesting followed at most this deep (TeX itself stops at 15 open files); deeper is reported."""
MAX_SOURCE_BYTES = 4 * 2**20
"""A source file over this size is not read (a paper's largest .tex is ~120 KB); reported, never a hang."""
MAIN_NAMES = ("main.tex", "ms.tex", "article.tex", "preprint.tex", "paper.tex")
# Arguments are read at most `_ARG` characters far: an unterminated `[` or `{` must not make every
# later command rescan the rest of the file (quadratic on a hostile file).
_ARG = "{1,2000}"
_INPUT_RE = re.compile(r"\\(input|include|subfile)\s*\{([^}]" + _ARG + r")\}")
_BIB_RE = re.compile(r"\\(?:bibliography|addbibresource)\s*(?:\[[^\]]{0,2000}\])?\s*\{([^}]" + _ARG + r")\}")
_RESCIENCE_BIB_RE = re.compile(r"\\def\s*\\articleBIBLIOGRAPHY\s*\{([^}]" + _ARG + r")\}")
CITE_RE = re.compile(
    r"\\(?:[cC]ite[a-zA-Z]*|[pP]arencite|[tT]extcite|[aA]utocite|footcite|nocite)\*?"
    r"(?:\s*\[[^\]]{0,2000}\]){0,2}\s*\{([^}]{0,2000})\}"
)
LABEL_RE = re.compile(r"\\label\s*\{([^}]" + _ARG + r")\}")
REF_RE = re.compile(r"\\(?:ref|eqref|autoref|cref|Cref|pageref|vref)\*?\s*\{([^}]" + _ARG + r")\}")
_DISPLAY_ENVS = "equation|align|gather|multline|eqnarray|displaymath|dmath|flalign|alignat"
_INLINE_DOLLAR_RE = re.compile(r"(?<![\\$])\$(?!\$)((?:\\\$|[^$])+?)\$", re.S)
"""An inline `$...$`: it can fail only where no `$` follows, so it stays linear; `\\(...\\)` is paired apart."""
_TABULAR_ENVS = r"tabular\*?|tabularx|longtable|deluxetable\*?"
_SECTION_RE = re.compile(r"\\(part|chapter|section|subsection|subsubsection|paragraph)\*?\s*\{([^}]{0,2000})\}")
_RESCIENCE_ABSTRACT_RE = re.compile(r"\\def\s*\\articleABSTRACT\s*\{")
#: A number as printed in prose: 12, 3.14, 1,234, 0.5 (sign and exponent handled by injectors).
NUMBER_RE = re.compile(r"(?<![\w.\\{-])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w}])")
#: Commands whose braced argument is not prose (names, keys, paths, lengths).
_NON_PROSE_ARG_RE = re.compile(
    r"\\(?:label|ref|eqref|autoref|cref|Cref|pageref|cite[a-zA-Z]*|citep|citet|input|include|subfile|"
    r"includegraphics|bibliography|bibliographystyle|addbibresource|usepackage|documentclass|url|href|"
    r"begin|end|newcommand|renewcommand|def|setlength|vspace|hspace|color|definecolor|hypersetup|"
    r"graphicspath|doi|email|affiliation|textwidth|linewidth|columnwidth|fig|figref|todo)(?![a-zA-Z])\*?"
    r"(?:\s*\[[^\]]{0,2000}\])*(?:\s*\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})?(?:\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})*"
)
#: Environments whose content is code or drawing, not prose.
_CODE_ENVS = "tikzpicture|pgfpicture|lstlisting|verbatim|minted|algorithmic|comment"
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
#: Numbers that name things, not quantities: dates, cross-reference numbers, enumerations.
_NAMING_NUMBER_RE = re.compile(
    rf"(?:{_MONTHS})\.?\s+\d{{1,2}}\b|\b\d{{1,2}}\s+(?:{_MONTHS})\b|"
    r"\b(?:Fig|Figs|Figure|Figures|Table|Tables|Tab|Section|Sections|Sec|Secs|Eq|Eqs|Equation|Equations|"
    r"Appendix|Chapter|Ref|Refs|Line|Lines|Step|Steps|Algorithm|Theorem|Lemma|Proposition)\.?~?\s*\d+|"
    r"\(\d\)"
)

#: Optional arguments of any command (`\\author[0000-0001]`, `\\newcommand{\\x}[2]`): settings, not prose.
_OPTIONAL_ARG_RE = re.compile(r"\\[a-zA-Z]+\*?(?:\s*\{[^{}]*\})*(?:\s*\[[^\]]{0,2000}\])+")

_DEFINITION_RE = re.compile(
    r"\\(?:(?:re|provide)?newcommand\*?\s*\{?\\([a-zA-Z@]+)\}?(?:\s*\[[^\]]{0,2000}\])*|def\s*\\([a-zA-Z@]+)[^{]{0,2000}?)\s*\{"
)
_INLINE_NUMBER_RE = re.compile(
    r"\s*(?:\\?[A-Za-z][\w{}\\ ]{0,20}?\s*(?:=|<|>|\\approx|\\simeq|\\sim)\s*|\\sim\s*|\\approx\s*|[<>+-]\s*)?"
    r"(\d+(?:\.\d+)?)\s*(?:\\%|\^o|\^\{?\\circ\}?)?\s*\Z"
)
_URL_RE = re.compile(r"https?://[^\s}]+|\b10\.\d{4,}/[^\s}]+|\b\d{7,}\b")
# Issue 21: numbers that name a thing (catalogue ids, grant and arXiv numbers, model and data-set
# names) are not quantities: changing one is no numerical error. A catalogue prefix before the digits
# (NGC 1234, KIC~1430163, GW150914, J1234+5678, arXiv:2101.00001), digits glued to a name (CIFAR-100,
# ResNet-50, Multi30k), and dotted codes of three or more parts (22.1.09345.01.2).
_CATALOGUE = (r"NGC|IC|UGC|PGC|KIC|KOI|TIC|TOI|EPIC|HD|HIP|HR|HAT-P|WASP|Kepler|K2|PSR|SN|SNe|GW|GRB|FRB|SDSS"
              r"|2MASS|WISE|Gaia|LHS|GJ|Gl|TYC|Abell|ACO|Mrk|Arp|NPR|arXiv|ar[Xx]iv|DOI|ISBN|ISSN|PRPI|CIFAR"
              r"|MNIST|COCO|VOC|GLUE|SQuAD|ResNet|VGG|GPT|BERT|Llama|LLaMA|T5|O[1-4]|GWTC|No|Nos|Nr|ID|grant|Grant"
              r"|GRANT|award|Award|contract|Contract|project|Project|survey|Survey|catalog|catalogue|Catalog|Catalogue"
              r"|Vol|vol|Volume|volume|pp|Part"
              # observing campaigns, sectors and quarters are numbered names (K2 Campaign 11, TESS Sector 14)
              r"|Campaigns?|campaigns?|Sectors?|sectors?|Quarters?|quarters?")
IDENTIFIER_NUMBER_RE = re.compile(
    rf"(?:\b(?:{_CATALOGUE})\.?[\s~:#-]*|(?<=[A-Za-z])-?|[A-Za-z]-(?=\d))"
    r"[JB]?\d[\d.,]*(?:[+-]\d+(?:\.\d+)?|/\d+)?[A-Za-z]?"
    r"|\b[A-Z]\d{2,}(?:[+-]\d+(?:\.\d+)?)?"
    r"|\b\d+(?:\.\d+){3,}\b"
)
_ACKNOWLEDGEMENT_RE = re.compile(r"(?i)\b(?:grants?|funded by|supported (?:in part )?by|awards?|fellowships?)\b")


@dataclass(frozen=True)
class Span:
    """A char range [start, end) in one file of the paper."""

    file: str
    start: int
    end: int


@dataclass(frozen=True)
class Citation:
    span: Span
    keys: tuple[str, ...]
    sentence: Span


@dataclass(frozen=True)
class LabelReference:
    """A `\\ref{key}` (or `\\eqref`, ...) to a `\\label` in the paper; not a bibliographic reference."""

    span: Span  # the whole \\ref{...} command
    key: str
    key_span: Span


@dataclass(frozen=True)
class Number:
    span: Span
    text: str
    sentence: Span
    in_abstract: bool


@dataclass(frozen=True)
class Refused:
    """A path the paper names that was not read: `target` as written, at `file`:`line` (0: found by a scan)."""

    file: str
    line: int
    target: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: '{self.target}' refused: {self.reason}"


@dataclass(frozen=True)
class LoadWarning:
    """A file of the paper not loaded (or not indexed), named at `file`:`line` (0: not at a line)."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass
class LatexPaper:
    """A paper's sources: `files` maps relpath -> exact text; `compiled` is the loaded order."""

    paper_id: str
    root: Path
    main_file: str
    files: dict[str, str]
    compiled: list[str]
    bib_files: list[str]
    missing: list[str] = field(default_factory=list)
    encodings: dict[str, str] = field(default_factory=dict)
    refused: list[Refused] = field(default_factory=list)
    warnings: list[LoadWarning] = field(default_factory=list)
    """Files named but not loaded: missing, nested too deep, over the size cap (each with file and line)."""
    missing_at: list[LoadWarning] = field(default_factory=list)
    """Each `\\input`/`\\include`/`\\bibliography` file not found: where it is named (file, line) and the name as
    the message (issue 21: the paper's error, counted in the corpus report)."""

    @cached_property
    def index(self) -> PaperIndex:
        return PaperIndex.build(self)

    def raw_bytes(self, relpath: str) -> bytes:
        """The file's text encoded back as read: equals the bytes on disk."""
        return self.files[relpath].encode(self.encodings.get(relpath, "utf-8"))


def _read(path: Path) -> tuple[str, str]:
    data = path.read_bytes()
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def contained(root: Path, rel: str) -> tuple[str | None, str | None]:
    """(`rel` resolved, relative to `root`; None) when it stays in the folder once links are followed,
    else (None, why it is refused). The file need not exist."""
    if Path(rel).is_absolute():
        return None, "absolute path"
    try:
        real_root, target = root.resolve(), (root / rel).resolve()
    except (RuntimeError, OSError) as exc:  # a symlink loop
        return None, f"cannot be resolved ({exc})"
    if target != real_root and real_root not in target.parents:
        lexical = Path(os.path.normpath(root / rel))
        inside = lexical == root or root in lexical.parents
        return None, "a symlink to a file outside the paper folder" if inside else "climbs out of the paper folder"
    return str(target.relative_to(real_root)), None


def _resolve(root: Path, base_dir: str, name: str, ext: str) -> tuple[str | None, tuple[str, str] | None]:
    """The file `name` (with `ext` added when missing) names, relative to root; else (None, None when
    missing, or (the first path refused, why))."""
    name = name.strip()
    candidates = [name] if name.endswith(ext) else [name + ext, name]
    refusal = None
    for cand in candidates:
        for rel in (str(Path(base_dir) / cand), cand):
            inside, reason = contained(root, rel)
            if inside is None:
                refusal = refusal or (os.path.normpath(rel), reason or "")
                continue
            try:
                if (root / inside).is_file():
                    return inside, None
            except OSError as exc:  # a name too long for the file system, say: not a file of the paper
                refusal = refusal or (os.path.normpath(rel), f"not a usable path ({exc.strerror})")
    return None, refusal


def find_main_file(root: Path) -> str:
    """The main file of the project in `root` (see the module docstring for the order of rules)."""
    meta = root / "meta.json"
    if meta.is_file() and contained(root, "meta.json")[0] is not None:
        try:
            name = Path(str(json.loads(meta.read_text(encoding="utf-8")).get("path_in_repo", ""))).name
        except (ValueError, AttributeError):  # unreadable meta.json: find the main file by its content
            name = ""
        if name and contained(root, name)[0] is not None and (root / name).is_file():
            return name
    roots = []
    for p in sorted(root.rglob("*.tex")):
        rel = str(p.relative_to(root))
        if contained(root, rel)[0] is None or not p.is_file() or p.stat().st_size > MAX_SOURCE_BYTES:
            continue
        text = blank_comments(_read(p)[0])
        if "\\documentclass" in text and "\\begin{document}" in text:
            roots.append(rel)
    if not roots:
        raise FileNotFoundError(f"{root}: no .tex file with \\documentclass and \\begin{{document}}")
    for name in MAIN_NAMES:
        if name in roots:
            return name
    return roots[0]


def load_latex_paper(root: str | Path, main_file: str | None = None, paper_id: str | None = None) -> LatexPaper:
    """Load the LaTeX project in folder `root` (main file found when not given)."""
    root = Path(root)
    main = main_file or find_main_file(root)
    inside, reason = contained(root, main)
    if inside is None:
        raise ValueError(f"{root}: main file '{main}' refused: {reason}")
    files: dict[str, str] = {}
    encodings: dict[str, str] = {}
    compiled: list[str] = []
    bibs: list[str] = []
    missing: list[str] = []
    refused: list[Refused] = []
    warnings: list[LoadWarning] = []
    missing_at: list[LoadWarning] = []
    refused_paths: set[str] = set()  # refused once, not again by the fallback scan

    def find(rel: str, m: re.Match, name: str, ext: str) -> str | None:
        target, refusal = _resolve(root, str(Path(main).parent), name, ext)
        if target is None:
            line = files[rel].count("\n", 0, m.start()) + 1
            if refusal is not None:
                refused_paths.add(refusal[0])
                refused.append(Refused(rel, line, name.strip(), refusal[1]))
            else:
                missing.append(name.strip())
                missing_at.append(LoadWarning(rel, line, name.strip()))
                warnings.append(LoadWarning(rel, line, f"'{name.strip()}' not found in the paper folder: not loaded"))
        return target

    def enter(rel: str, depth: int, stack: list) -> None:
        size = (root / rel).stat().st_size
        if size > MAX_SOURCE_BYTES:
            warnings.append(LoadWarning(rel, 0, f"{size} bytes, over the {MAX_SOURCE_BYTES}-byte cap: not loaded"))
            refused_paths.add(rel)  # never read, never visited again
            return
        text, enc = _read(root / rel)
        files[rel], encodings[rel] = text, enc
        compiled.append(rel)
        clean = blank_comments(text)
        stack.append((rel, clean, _INPUT_RE.finditer(clean), depth))

    def visit(start: str) -> None:
        """Depth first, in source order, with an explicit stack: a 3,000-deep `\\input` chain is
        followed to MAX_INPUT_DEPTH and the file past it reported, never a RecursionError."""
        if start in files or start in refused_paths:
            return
        stack: list[tuple[str, str, Iterator[re.Match], int]] = []
        enter(start, 0, stack)
        while stack:
            rel, clean, inputs, depth = stack[-1]
            if (m := next(inputs, None)) is not None:
                target = find(rel, m, m.group(2), ".tex")
                if target is not None and target not in files and target not in refused_paths:
                    if depth + 1 > MAX_INPUT_DEPTH:
                        refused_paths.add(target)
                        line = files[rel].count("\n", 0, m.start()) + 1
                        warnings.append(LoadWarning(rel, line, f"\\{m.group(1)}{{{m.group(2).strip()}}} nested more "
                                                    f"than {MAX_INPUT_DEPTH} files deep: '{target}' not loaded"))
                    else:
                        enter(target, depth + 1, stack)
                continue
            stack.pop()
            for m in list(_BIB_RE.finditer(clean)) + list(_RESCIENCE_BIB_RE.finditer(clean)):
                for name in m.group(1).split(","):
                    if (target := find(rel, m, name, ".bib")) is not None and target not in bibs:
                        bibs.append(target)

    visit(main)
    if missing or refused:  # a template header we do not have: take the folder's orphan non-root .tex as loaded
        for p in sorted(root.rglob("*.tex")):
            rel = str(p.relative_to(root))
            if rel in files or rel in refused_paths:
                continue
            if (reason := contained(root, rel)[1]) is not None:
                refused.append(Refused(rel, 0, rel, reason))
            elif p.is_file() and p.stat().st_size <= MAX_SOURCE_BYTES and "\\documentclass" not in blank_comments(_read(p)[0]):
                visit(rel)
    for rel in list(bibs):
        if (size := (root / rel).stat().st_size) > MAX_SOURCE_BYTES:
            warnings.append(LoadWarning(rel, 0, f"{size} bytes, over the {MAX_SOURCE_BYTES}-byte cap: not loaded"))
            bibs.remove(rel)
        else:
            files[rel], encodings[rel] = _read(root / rel)
    return LatexPaper(paper_id or root.name, root, main, files, compiled, bibs, missing, encodings, refused, warnings,
                      missing_at)


def sentence_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence (or paragraph piece) holding [start, end): bounded by '. ', blank lines, braces."""
    left = start
    while left > 0:
        c = text[left - 1]
        if c == "\n" and text[max(0, left - 2)] in "\n}":  # blank line, or a command line (\\section{..})
            break
        if c in ".?!" and left < len(text) and text[left].isspace() and not text[left - 2 : left].strip(".").isdigit():
            break
        if c in "{}" and text[left - 2 : left - 1] != "\\" and start - left > 200:
            break
        left -= 1
    right = end
    while right < len(text):
        c = text[right]
        if c == "\n" and right + 1 < len(text) and text[right + 1] == "\n":
            break
        if c in ".?!" and (right + 1 >= len(text) or text[right + 1].isspace()):
            right += 1
            break
        right += 1
    while left < start and text[left].isspace():
        left += 1
    return left, right


# --- Linear scans: every paper is untrusted (issue 26) ---------------------------------------------
# A lazy `opener(.*?)closer` regex rescans to the end of the file for every opener without a closer,
# and a depth-counting brace scan does the same for every unbalanced `{`: a 160 KB file of them took
# minutes. These helpers find each closer once per file and pair openers with them by bisection.

INDEX_CPU_BUDGET_S = 10.0
"""CPU seconds one file may take to index; past it the file is recorded as not indexed (too large)."""


class IndexBudgetExceeded(RuntimeError):
    pass


class _Budget:
    def __init__(self, seconds: float) -> None:
        self.deadline = time.process_time() + seconds
        self.seconds = seconds

    def check(self) -> None:
        if time.process_time() > self.deadline:
            raise IndexBudgetExceeded(f"indexing took over {self.seconds:g} s of CPU: not indexed (too large)")


class _Closers:
    """The first match of a closing pattern at or after a position, each pattern scanned once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._found: dict[str, tuple[list[int], list[int]]] = {}

    def first(self, pattern: str, start: int) -> tuple[int, int] | None:
        if pattern not in self._found:  # a lookahead finds overlapping occurrences too (`$$$`)
            hits = [(m.start(), m.end(1)) for m in re.finditer(f"(?=({pattern}))", self.text, re.S)]
            self._found[pattern] = ([a for a, _ in hits], [b for _, b in hits])
        starts, ends = self._found[pattern]
        k = bisect.bisect_left(starts, start)
        return (starts[k], ends[k]) if k < len(starts) else None


def paired(text: str, opener: re.Pattern, closer: Callable[[re.Match], str],
           budget: _Budget | None = None) -> Iterator[tuple[re.Match, int, int]]:
    """(opener match, closer start, closer end) as `re.finditer` finds `opener(.*?)closer` with
    re.S, left to right and without overlap (an opener with no closer after it is skipped), in
    linear time: `closer(m)` is the regex of the closing text for opener `m`."""
    closers = _Closers(text)
    pos = 0
    while (m := opener.search(text, pos)) is not None:
        if budget is not None:
            budget.check()
        found = closers.first(closer(m), m.end())
        if found is None:
            pos = m.start() + 1
            continue
        yield m, found[0], found[1]
        pos = max(found[1], m.start() + 1)


_DISPLAY_OPEN_RE = re.compile(r"\\begin\{(" + _DISPLAY_ENVS + r")(\*?)\}|\\\[|\$\$")


def display_blocks(text: str, envs: str = _DISPLAY_ENVS, budget: _Budget | None = None,
                   ) -> Iterator[tuple[int, int, int, int]]:  # fmt: skip
    """(start, end, content start, content end) of each display block (`\\begin{equation}`...,
    `\\[...\\]`, `$$...$$`) in `text`, in linear time; an unterminated one is skipped."""
    opener = _DISPLAY_OPEN_RE if envs == _DISPLAY_ENVS else re.compile(
        r"\\begin\{(" + envs + r")(\*?)\}|\\\[|\$\$")

    def closer(m: re.Match) -> str:
        if m.group(1) is not None:
            return re.escape(f"\\end{{{m.group(1)}{m.group(2)}}}")
        return r"\\\]" if m.group(0) == "\\[" else r"\$\$"

    for m, a, b in paired(text, opener, closer, budget):
        yield m.start(), b, m.end(), a


def _environments(text: str, names: str, star_closer: bool = False, budget: _Budget | None = None,
                  ) -> Iterator[tuple[int, int, int, int]]:  # fmt: skip
    """(start, end, content start, content end) of each `\\begin{name}...\\end{name}` (`names` a
    regex alternation); with `star_closer` the end may carry a `*` whatever the begin had."""
    opener = re.compile(r"\\begin\{(" + names + r")" + (r"\*?" if star_closer else "") + r"\}")
    for m, a, b in paired(text, opener, lambda m: re.escape(f"\\end{{{m.group(1)}") + (r"\*?\}" if star_closer else r"\}"),
                          budget):  # fmt: skip
        yield m.start(), b, m.end(), a


def _inline_maths(text: str, budget: _Budget | None = None) -> Iterator[tuple[int, int, int, int]]:
    """(start, end, content start, content end) of each `$...$` and `\\(...\\)`, as the old single
    regex found them, in linear time."""
    closers = _Closers(text)
    opener = re.compile(r"(?<![\\$])\$(?!\$)|\\\(")
    pos = 0
    while (m := opener.search(text, pos)) is not None:
        if budget is not None:
            budget.check()
        if m.group(0) == "$":
            d = _INLINE_DOLLAR_RE.match(text, m.start())
            if d is not None:
                yield d.start(), d.end(), d.start(1), d.end(1)
                pos = d.end()
                continue
        elif (found := closers.first(r"\\\)", m.end())) is not None:
            yield m.start(), found[1], m.end(), found[0]
            pos = found[1]
            continue
        pos = m.start() + 1


def brace_ends(text: str) -> dict[int, int]:
    """Each unescaped `{` -> index of the `}` closing it (len(text) when unbalanced), in one pass."""
    ends: dict[int, int] = {}
    stack: list[int] = []
    for m in re.finditer(r"(?<!\\)[{}]", text):
        if m.group() == "{":
            stack.append(m.start())
        elif stack:
            ends[stack.pop()] = m.start()
    for i in stack:
        ends[i] = len(text)
    return ends


class _SentenceBounds:
    """`sentence_around` for many positions of one text, in linear time: the boundaries it looks for
    are listed once and found by bisection instead of walking character by character."""

    def __init__(self, text: str) -> None:
        self.text = text
        n = len(text)
        self.left: list[int] = []  # `left` values where the walk left stops whatever the start
        for m in re.finditer(r"[\n.?!]", text):
            left, c = m.end(), m.group()
            line_stop = c == "\n" and text[max(0, left - 2)] in "\n}"
            sentence_stop = c != "\n" and left < n and text[left].isspace() and not text[left - 2 : left].strip(".").isdigit()
            if line_stop or sentence_stop:
                self.left.append(left)
        # a brace stops the walk only 200 characters or more from the start
        self.brace = [m.end() for m in re.finditer(r"[{}]", text) if text[m.end() - 2 : m.end() - 1] != "\\"]
        self.right: list[tuple[int, int]] = []  # (position, right end when the walk right stops there)
        for m in re.finditer(r"(?=(\n\n))|[.?!](?=\s|\Z)", text):  # a lookahead: "\n\n\n" stops at either newline
            r = m.start()
            self.right.append((r, r if m.group(1) is not None else r + 1))

    def around(self, start: int, end: int) -> tuple[int, int]:
        k = bisect.bisect_right(self.left, start)
        left = self.left[k - 1] if k else 0
        k = bisect.bisect_right(self.brace, start - 201)
        if k:
            left = max(left, self.brace[k - 1])
        k = bisect.bisect_left(self.right, (end, -1))
        right = self.right[k][1] if k < len(self.right) else len(self.text)
        left = _SPACES.match(self.text, left, max(left, start)).end()
        return left, right


_SPACES = re.compile(r"\s*")


def _blank_ranges(prose: list[str], ranges: Iterable[tuple[int, int]]) -> None:
    """Blank the union of `ranges` in `prose`, each character once (nested ranges to the end of an
    unbalanced file would otherwise be blanked over and over)."""
    merged: list[list[int]] = []
    for a, b in sorted(ranges):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    for a, b in merged:
        prose[a:b] = [" "] * (b - a)


@dataclass
class PaperIndex:
    """Spans of what injectors need, for the compiled files of one paper."""

    comments: dict[str, list[Span]] = field(default_factory=dict)
    display_math: list[Span] = field(default_factory=list)  # inner content of each display block
    inline_math: list[Span] = field(default_factory=list)
    tables: list[Span] = field(default_factory=list)  # inner content of each tabular
    citations: list[Citation] = field(default_factory=list)
    labels: dict[str, Span] = field(default_factory=dict)
    references: list[LabelReference] = field(default_factory=list)
    abstract: list[Span] = field(default_factory=list)
    sections: list[tuple[Span, str]] = field(default_factory=list)
    numbers: list[Number] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # file -> why it was not indexed (over the CPU budget)
    masked: dict[str, str] = field(default_factory=dict)  # text with comments/maths/non-prose blanked

    @property
    def cite_keys(self) -> set[str]:
        return {k for c in self.citations for k in c.keys}

    def in_abstract(self, span: Span) -> bool:
        return any(a.file == span.file and a.start <= span.start and span.end <= a.end for a in self.abstract)

    def in_table(self, span: Span) -> bool:
        return any(t.file == span.file and t.start <= span.start and span.end <= t.end for t in self.tables)

    @classmethod
    def build(cls, paper: LatexPaper, cpu_budget_s: float = INDEX_CPU_BUDGET_S) -> PaperIndex:
        """Index every compiled file; a file that takes over `cpu_budget_s` CPU seconds is left out
        whole and recorded in `skipped` (a hostile file must not hang the corpus build)."""
        idx = cls()
        for rel in paper.compiled:
            part = cls()
            try:
                part._index_file(rel, paper.files[rel], Path(rel).stem == "abstract", _Budget(cpu_budget_s))
            except IndexBudgetExceeded as exc:
                idx.skipped[rel] = str(exc)
                continue
            idx._merge(part)
        return idx

    def _merge(self, part: PaperIndex) -> None:
        for name in ("display_math", "inline_math", "tables", "citations", "references", "abstract", "sections",
                     "numbers"):  # fmt: skip
            getattr(self, name).extend(getattr(part, name))
        self.comments.update(part.comments)
        self.masked.update(part.masked)
        for key, span in part.labels.items():
            self.labels.setdefault(key, span)

    def _index_file(self, rel: str, text: str, abstract_file: bool, budget: _Budget) -> None:
        clean = blank_comments(text)
        self.comments[rel] = [Span(rel, a, b) for a, b in comment_spans(text)]
        prose = list(clean)
        braces = brace_ends(clean)

        def blank(a: int, b: int) -> None:
            prose[a:b] = [" "] * (b - a)

        def spans(matches: Iterable[re.Match]) -> Iterator[re.Match]:
            for m in matches:
                budget.check()
                yield m

        ranges = []
        for start, end, a, b in display_blocks(clean, budget=budget):
            self.display_math.append(Span(rel, a, b))
            ranges.append((start, end))
        _blank_ranges(prose, ranges)
        ranges = []
        for start, end, a, b in _inline_maths("".join(prose), budget):
            self.inline_math.append(Span(rel, a, b))
            ranges.append((start, end))
        _blank_ranges(prose, ranges)
        for _, _, a, b in _environments(clean, _TABULAR_ENVS, budget=budget):
            self.tables.append(Span(rel, a, b))
        for _, _, a, b in _environments(clean, "abstract", budget=budget):
            self.abstract.append(Span(rel, a, b))
        m = _RESCIENCE_ABSTRACT_RE.search(clean)
        if m:
            end = braces.get(m.end() - 1, len(clean))
            self.abstract.append(Span(rel, m.end(), end))
        if abstract_file:
            self.abstract.append(Span(rel, 0, len(text)))
        for m in spans(_SECTION_RE.finditer(clean)):
            self.sections.append((Span(rel, m.start(), m.end()), m.group(2)))
        for m in spans(LABEL_RE.finditer(clean)):
            self.labels.setdefault(m.group(1).strip(), Span(rel, m.start(), m.end()))
        for m in spans(REF_RE.finditer(clean)):
            for key in m.group(1).split(","):
                k = key.strip()
                off = m.group(1).find(k) + m.start(1)
                self.references.append(LabelReference(Span(rel, m.start(), m.end()), k, Span(rel, off, off + len(k))))
        joined = "".join(prose)
        sentences = _SentenceBounds(joined)
        for m in spans(CITE_RE.finditer(clean)):
            keys = tuple(k.strip() for k in m.group(1).split(",") if k.strip())
            s, e = sentences.around(m.start(), m.end())
            self.citations.append(Citation(Span(rel, m.start(), m.end()), keys, Span(rel, s, e)))
        for m in spans(_NON_PROSE_ARG_RE.finditer(joined)):
            blank(m.start(), m.end())
        for m in spans(_OPTIONAL_ARG_RE.finditer("".join(prose))):
            blank(m.start(), m.end())
        # macro bodies: settings and generated data, not prose (an unbalanced one runs to the end, once)
        _blank_ranges(prose, [(m.start(), braces.get(m.end() - 1, m.end() - 1) + 1)
                              for m in spans(_DEFINITION_RE.finditer(clean))
                              if (m.group(1) or m.group(2)) != "articleABSTRACT"])  # fmt: skip
        _blank_ranges(prose, [(start, end) for start, end, _, _ in _environments(clean, _CODE_ENVS, True, budget)])
        for m in spans(_NAMING_NUMBER_RE.finditer("".join(prose))):
            blank(m.start(), m.end())
        for m in spans(_URL_RE.finditer("".join(prose))):  # URLs, DOIs and catalogue ids are not quantities
            blank(m.start(), m.end())
        for m in spans(IDENTIFIER_NUMBER_RE.finditer("".join(prose))):  # names, not quantities (issue 21)
            blank(m.start(), m.end())
        preamble_end = clean.find("\\begin{document}")
        if preamble_end > 0:  # the preamble holds settings and metadata, not prose
            blank(0, preamble_end)
        joined = "".join(prose)
        self.masked[rel] = joined
        found = [(m.start(), m.end()) for m in spans(NUMBER_RE.finditer(joined))]
        for span in self.inline_math:  # a quantity written as maths: $200$, $Re = 200$, $2\%$
            if span.file == rel and (m := _INLINE_NUMBER_RE.match(text, span.start, span.end)):
                found.append((m.start(1), m.end(1)))
        sentences = _SentenceBounds(joined)
        for a, b in sorted(found):
            budget.check()
            if re.match(r"\$?\^", text[b : b + 2]):  # the base of a power (10$^3$) is not the quantity
                continue
            span = Span(rel, a, b)
            s, e = sentences.around(a, b)
            self.numbers.append(Number(span, text[a:b], Span(rel, s, e), self.in_abstract(span)))


# --- The paper in reading order (issue 15): what a reviewer model is shown --------------------------

_IFFALSE_RE = re.compile(r"\\iffalse\b")
_SOURCE_EXTS = (".tex", ".ltx", ".sty", ".cls", ".txt", "")


@dataclass(frozen=True)
class ReadingText:
    """The paper as one text in reading order, and where each piece of it came from.

    `pieces` are (offset in `text`, file, offset in that file, length): exact copies of source
    characters, so a source offset maps to a reading offset (`position`) and a truncation to the
    source ranges it kept (`shown_spans`)."""

    text: str
    pieces: tuple[tuple[int, str, int, int], ...]

    def position(self, file: str, offset: int) -> int | None:
        """Offset in `text` of source character `file[offset]`; None when it is not printed."""
        for out, f, src, n in self.pieces:
            if f == file and src <= offset < src + n:
                return out + offset - src
        return None

    def shown_spans(self, max_chars: int | None) -> list[dict[str, int | str]]:
        """Source ranges {file, start, end} inside the first `max_chars` characters of `text`;
        consecutive pieces of one file are merged (the gaps between them are never printed)."""
        limit = len(self.text) if max_chars is None else max_chars
        spans: list[dict[str, int | str]] = []
        for out, f, src, n in self.pieces:
            if out >= limit:
                break
            end = src + min(n, limit - out)
            if spans and spans[-1]["file"] == f and int(spans[-1]["end"]) <= src:
                spans[-1]["end"] = end
            else:
                spans.append({"file": f, "start": src, "end": end})
        return spans


def _unprinted(text: str) -> list[tuple[int, int]]:
    """Ranges of a file that are never printed: comments, \\iffalse ... \\fi, comment environments."""
    blank = blank_comments(text)
    ranges = list(comment_spans(text))
    ranges += [(m.start(), b) for m, _, b in paired(blank, _IFFALSE_RE, lambda m: r"\\fi\b")]
    ranges += [(a, b) for a, b, _, _ in _environments(blank, "comment")]
    merged: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def unprinted_at(text: str, start: int, end: int) -> bool:
    """Does [start, end) touch a comment, an \\iffalse block or a comment environment?"""
    return any(a < max(end, start + 1) and b > start for a, b in _unprinted(text))


def _target(files: dict[str, str], name: str) -> str | None:
    name = name.strip().removeprefix("./")
    for cand in (name, name + ".tex"):
        if cand in files and not cand.endswith(".bib"):
            return cand
    return None


def reading_order_text(files: dict[str, str], main_file: str = "main.tex") -> ReadingText:
    """The main file with every `\\input`/`\\include`/`\\subfile` replaced by the file it names
    (recursively, each file at most once), without comments, `\\iffalse` blocks or `.bib` files;
    the document body (from `\\begin{document}`) comes before the preamble;
    a `% ==== file: <path> ====` line marks where each file starts. Without the main file, the
    source files in path order."""
    out: list[str] = []
    pieces: list[tuple[int, str, int, int]] = []
    size = 0
    seen: set[str] = set()

    def emit(s: str, file: str | None = None, src: int = 0) -> None:
        nonlocal size
        if not s:
            return
        if file is not None:
            pieces.append((size, file, src, len(s)))
        out.append(s)
        size += len(s)

    def visit(rel: str, lo: int = 0, hi: int | None = None, label: str = "", depth: int = 0) -> None:
        seen.add(rel)
        text = files[rel]
        hi = len(text) if hi is None else hi
        emit(f"{'' if size == 0 else chr(10)}% ==== file: {rel}{label} ====\n")
        skip = _unprinted(text)
        blank = list(text)
        for a, b in skip:
            blank[a:b] = " " * (b - a)
        blanked = "".join(blank)
        keep = [(a, b) for a, b in zip([0] + [b for _, b in skip], [a for a, _ in skip] + [len(text)], strict=True) if b > a]
        cuts = [(m.start(), m.end(), _target(files, m.group(2))) for m in _INPUT_RE.finditer(blanked, lo, hi)]
        keep = [(max(a, lo), min(b, hi)) for a, b in keep if min(b, hi) > max(a, lo)]
        pos = lo
        for start, end, target in [*cuts, (hi, hi, None)]:
            for a, b in keep:
                lo, hi = max(a, pos), min(b, start)
                if hi > lo:
                    emit(text[lo:hi], rel, lo)
            if target is not None and target not in seen and depth < MAX_INPUT_DEPTH:  # deeper stays as written
                visit(target, depth=depth + 1)
                emit("\n")
            elif start < end:
                emit(text[start:end], rel, start)  # an input we cannot follow stays visible as written
            pos = end

    if main_file in files:
        # The document body first, its preamble (package options, macro files) last: a cut to fit
        # a small context then drops definitions, not the paper.
        m = re.search(r"\\begin\s*\{document\}", blank_comments(files[main_file]))
        if m:
            visit(main_file, m.start(), None, " (document)")
            visit(main_file, 0, m.start(), " (preamble)")
        else:
            visit(main_file)
    else:
        for rel in sorted(files):
            if rel.endswith(_SOURCE_EXTS[:5]) and rel not in seen:
                visit(rel)
    return ReadingText("".join(out), tuple(pieces))

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

import json
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

MAIN_NAMES = ("main.tex", "ms.tex", "article.tex", "preprint.tex", "paper.tex")
_INPUT_RE = re.compile(r"\\(input|include|subfile)\s*\{([^}]+)\}")
_BIB_RE = re.compile(r"\\(?:bibliography|addbibresource)\s*(?:\[[^\]]*\])?\s*\{([^}]+)\}")
_RESCIENCE_BIB_RE = re.compile(r"\\def\s*\\articleBIBLIOGRAPHY\s*\{([^}]+)\}")
CITE_RE = re.compile(
    r"\\(?:[cC]ite[a-zA-Z]*|[pP]arencite|[tT]extcite|[aA]utocite|footcite|nocite)\*?"
    r"(?:\s*\[[^\]]*\]){0,2}\s*\{([^}]*)\}"
)
LABEL_RE = re.compile(r"\\label\s*\{([^}]+)\}")
REF_RE = re.compile(r"\\(?:ref|eqref|autoref|cref|Cref|pageref|vref)\*?\s*\{([^}]+)\}")
_DISPLAY_ENVS = "equation|align|gather|multline|eqnarray|displaymath|dmath|flalign|alignat"
_DISPLAY_RE = re.compile(
    r"\\begin\{(" + _DISPLAY_ENVS + r")(\*?)\}(.*?)\\end\{\1\2\}|\\\[(.*?)\\\]|\$\$(.*?)\$\$", re.S
)
_INLINE_RE = re.compile(r"(?<![\\$])\$(?!\$)((?:\\\$|[^$])+?)\$|\\\((.*?)\\\)", re.S)
_TABULAR_RE = re.compile(r"\\begin\{(tabular\*?|tabularx|longtable|deluxetable\*?)\}(.*?)\\end\{\1\}", re.S)
_SECTION_RE = re.compile(r"\\(part|chapter|section|subsection|subsubsection|paragraph)\*?\s*\{([^}]*)\}")
_ABSTRACT_RE = re.compile(r"\\begin\{abstract\}(.*?)\\end\{abstract\}", re.S)
_RESCIENCE_ABSTRACT_RE = re.compile(r"\\def\s*\\articleABSTRACT\s*\{")
#: A number as printed in prose: 12, 3.14, 1,234, 0.5 (sign and exponent handled by injectors).
NUMBER_RE = re.compile(r"(?<![\w.\\{-])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w}])")
#: Commands whose braced argument is not prose (names, keys, paths, lengths).
_NON_PROSE_ARG_RE = re.compile(
    r"\\(?:label|ref|eqref|autoref|cref|Cref|pageref|cite[a-zA-Z]*|citep|citet|input|include|subfile|"
    r"includegraphics|bibliography|bibliographystyle|addbibresource|usepackage|documentclass|url|href|"
    r"begin|end|newcommand|renewcommand|def|setlength|vspace|hspace|color|definecolor|hypersetup|"
    r"graphicspath|doi|email|affiliation|textwidth|linewidth|columnwidth|fig|figref|todo)(?![a-zA-Z])\*?"
    r"(?:\s*\[[^\]]*\])*(?:\s*\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})?(?:\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})*"
)
#: Environments whose content is code or drawing, not prose.
_CODE_ENV_RE = re.compile(r"\\begin\{(tikzpicture|pgfpicture|lstlisting|verbatim|minted|algorithmic|comment)\*?\}.*?\\end\{\1\*?\}", re.S)
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
#: Numbers that name things, not quantities: dates, cross-reference numbers, enumerations.
_NAMING_NUMBER_RE = re.compile(
    rf"(?:{_MONTHS})\.?\s+\d{{1,2}}\b|\b\d{{1,2}}\s+(?:{_MONTHS})\b|"
    r"\b(?:Fig|Figs|Figure|Figures|Table|Tables|Tab|Section|Sections|Sec|Secs|Eq|Eqs|Equation|Equations|"
    r"Appendix|Chapter|Ref|Refs|Line|Lines|Step|Steps|Algorithm|Theorem|Lemma|Proposition)\.?~?\s*\d+|"
    r"\(\d\)"
)

#: Optional arguments of any command (`\\author[0000-0001]`, `\\newcommand{\\x}[2]`): settings, not prose.
_OPTIONAL_ARG_RE = re.compile(r"\\[a-zA-Z]+\*?(?:\s*\{[^{}]*\})*(?:\s*\[[^\]]*\])+")

_DEFINITION_RE = re.compile(
    r"\\(?:(?:re|provide)?newcommand\*?\s*\{?\\([a-zA-Z@]+)\}?(?:\s*\[[^\]]*\])*|def\s*\\([a-zA-Z@]+)[^{]*?)\s*\{"
)
_INLINE_NUMBER_RE = re.compile(
    r"\s*(?:\\?[A-Za-z][\w{}\\ ]{0,20}?\s*(?:=|<|>|\\approx|\\simeq|\\sim)\s*|\\sim\s*|\\approx\s*|[<>+-]\s*)?"
    r"(\d+(?:\.\d+)?)\s*(?:\\%|\^o|\^\{?\\circ\}?)?\s*\Z"
)
_URL_RE = re.compile(r"https?://[^\s}]+|\b10\.\d{4,}/[^\s}]+|\b\d{7,}\b")


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
class Reference:
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


def strip_comments(text: str) -> str:
    """`text` with every comment replaced by spaces (same length, so offsets still hold)."""
    return re.sub(r"(?<!\\)%[^\n]*", lambda m: " " * len(m.group(0)), text)


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
            elif (root / inside).is_file():
                return inside, None
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
        if contained(root, rel)[0] is None or not p.is_file():
            continue
        text = strip_comments(_read(p)[0])
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
        return target

    def visit(rel: str) -> None:
        if rel in files:
            return
        text, enc = _read(root / rel)
        files[rel], encodings[rel] = text, enc
        compiled.append(rel)
        clean = strip_comments(text)
        for m in _INPUT_RE.finditer(clean):
            if (target := find(rel, m, m.group(2), ".tex")) is not None:
                visit(target)
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
            elif p.is_file() and "\\documentclass" not in strip_comments(_read(p)[0]):
                visit(rel)
    for rel in bibs:
        files[rel], encodings[rel] = _read(root / rel)
    return LatexPaper(paper_id or root.name, root, main, files, compiled, bibs, missing, encodings, refused)


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


@dataclass
class PaperIndex:
    """Spans of what injectors need, for the compiled files of one paper."""

    comments: dict[str, list[Span]] = field(default_factory=dict)
    display_math: list[Span] = field(default_factory=list)  # inner content of each display block
    inline_math: list[Span] = field(default_factory=list)
    tables: list[Span] = field(default_factory=list)  # inner content of each tabular
    citations: list[Citation] = field(default_factory=list)
    labels: dict[str, Span] = field(default_factory=dict)
    references: list[Reference] = field(default_factory=list)
    abstract: list[Span] = field(default_factory=list)
    sections: list[tuple[Span, str]] = field(default_factory=list)
    numbers: list[Number] = field(default_factory=list)
    masked: dict[str, str] = field(default_factory=dict)  # text with comments/maths/non-prose blanked

    @property
    def cite_keys(self) -> set[str]:
        return {k for c in self.citations for k in c.keys}

    def in_abstract(self, span: Span) -> bool:
        return any(a.file == span.file and a.start <= span.start and span.end <= a.end for a in self.abstract)

    def in_table(self, span: Span) -> bool:
        return any(t.file == span.file and t.start <= span.start and span.end <= t.end for t in self.tables)

    @classmethod
    def build(cls, paper: LatexPaper) -> PaperIndex:
        idx = cls()
        for rel in paper.compiled:
            text = paper.files[rel]
            idx._index_file(rel, text, abstract_file=Path(rel).stem == "abstract")
        return idx

    def _index_file(self, rel: str, text: str, abstract_file: bool) -> None:
        clean = strip_comments(text)
        self.comments[rel] = [Span(rel, m.start(), m.end()) for m in re.finditer(r"(?<!\\)%[^\n]*", text)]
        prose = list(clean)

        def blank(a: int, b: int) -> None:
            prose[a:b] = [" "] * (b - a)

        for m in _DISPLAY_RE.finditer(clean):
            g = 3 if m.group(3) is not None else (4 if m.group(4) is not None else 5)
            self.display_math.append(Span(rel, m.start(g), m.end(g)))
            blank(m.start(), m.end())
        for m in _INLINE_RE.finditer("".join(prose)):
            g = 1 if m.group(1) is not None else 2
            self.inline_math.append(Span(rel, m.start(g), m.end(g)))
            blank(m.start(), m.end())
        for m in _TABULAR_RE.finditer(clean):
            self.tables.append(Span(rel, m.start(2), m.end(2)))
        for m in _ABSTRACT_RE.finditer(clean):
            self.abstract.append(Span(rel, m.start(1), m.end(1)))
        m = _RESCIENCE_ABSTRACT_RE.search(clean)
        if m:
            end = _brace_end(clean, m.end() - 1)
            self.abstract.append(Span(rel, m.end(), end))
        if abstract_file:
            self.abstract.append(Span(rel, 0, len(text)))
        for m in _SECTION_RE.finditer(clean):
            self.sections.append((Span(rel, m.start(), m.end()), m.group(2)))
        for m in LABEL_RE.finditer(clean):
            self.labels.setdefault(m.group(1).strip(), Span(rel, m.start(), m.end()))
        for m in REF_RE.finditer(clean):
            for key in m.group(1).split(","):
                k = key.strip()
                off = m.group(1).find(k) + m.start(1)
                self.references.append(Reference(Span(rel, m.start(), m.end()), k, Span(rel, off, off + len(k))))
        joined = "".join(prose)
        for m in CITE_RE.finditer(clean):
            keys = tuple(k.strip() for k in m.group(1).split(",") if k.strip())
            s, e = sentence_around(joined, m.start(), m.end())
            self.citations.append(Citation(Span(rel, m.start(), m.end()), keys, Span(rel, s, e)))
        for m in _NON_PROSE_ARG_RE.finditer(joined):
            blank(m.start(), m.end())
        for m in _OPTIONAL_ARG_RE.finditer("".join(prose)):
            blank(m.start(), m.end())
        for m in _DEFINITION_RE.finditer(clean):  # macro bodies: settings and generated data, not prose
            if (m.group(1) or m.group(2)) != "articleABSTRACT":
                blank(m.start(), _brace_end(clean, m.end() - 1) + 1)
        for m in _CODE_ENV_RE.finditer(clean):
            blank(m.start(), m.end())
        for m in _NAMING_NUMBER_RE.finditer("".join(prose)):
            blank(m.start(), m.end())
        for m in _URL_RE.finditer("".join(prose)):  # URLs, DOIs and catalogue ids are not quantities
            blank(m.start(), m.end())
        preamble_end = clean.find("\\begin{document}")
        if preamble_end > 0:  # the preamble holds settings and metadata, not prose
            blank(0, preamble_end)
        joined = "".join(prose)
        self.masked[rel] = joined
        found = [(m.start(), m.end()) for m in NUMBER_RE.finditer(joined)]
        for span in self.inline_math:  # a quantity written as maths: $200$, $Re = 200$, $2\%$
            if span.file == rel and (m := _INLINE_NUMBER_RE.match(text, span.start, span.end)):
                found.append((m.start(1), m.end(1)))
        for a, b in sorted(found):
            if re.match(r"\$?\^", text[b : b + 2]):  # the base of a power (10$^3$) is not the quantity
                continue
            span = Span(rel, a, b)
            s, e = sentence_around(joined, a, b)
            self.numbers.append(Number(span, text[a:b], Span(rel, s, e), self.in_abstract(span)))


def _brace_end(text: str, open_pos: int) -> int:
    """Index of the `}` closing the `{` at `open_pos` (len(text) when unbalanced)."""
    depth = 0
    for i in range(open_pos, len(text)):
        c = text[i]
        if c == "{" and text[i - 1] != "\\":
            depth += 1
        elif c == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return i
    return len(text)


# --- The paper in reading order (issue 15): what a reviewer model is shown --------------------------

_IFFALSE_RE = re.compile(r"\\iffalse\b.*?\\fi\b", re.S)
_COMMENT_ENV_RE = re.compile(r"\\begin\{comment\}.*?\\end\{comment\}", re.S)
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
    blank = strip_comments(text)
    ranges = [(m.start(), m.end()) for m in re.finditer(r"(?<!\\)%[^\n]*", text)]
    ranges += [(m.start(), m.end()) for m in _IFFALSE_RE.finditer(blank)]
    ranges += [(m.start(), m.end()) for m in _COMMENT_ENV_RE.finditer(blank)]
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

    def visit(rel: str, lo: int = 0, hi: int | None = None, label: str = "") -> None:
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
            if target is not None and target not in seen:
                visit(target)
                emit("\n")
            elif start < end:
                emit(text[start:end], rel, start)  # an input we cannot follow stays visible as written
            pos = end

    if main_file in files:
        # The document body first, its preamble (package options, macro files) last: a cut to fit
        # a small context then drops definitions, not the paper.
        m = re.search(r"\\begin\s*\{document\}", strip_comments(files[main_file]))
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

"""Natural errors: real errata found in a paper's git history (issue 15, the "natural" track).

Where a later commit fixes an equation, a number or a reference in the printed text of a paper,
the paper as it stood before that commit is a copy with a real error, and the diff is its truth:
the exact erroneous characters in the earlier copy (`changed_start`/`changed_end`, its
`changed_injected` text) and the correction (`changed_original`). These copies are audited beside
the injected ones with the same detection machinery and reported as a separate track.

What counts as a fix (each rule names the reason a candidate is dropped, counted in
`ErrataScan.rejected`):

* commits with one parent only (a merge's diff is a whole branch); commits changing more than
  `max_commit_hunks` hunks of the paper's `.tex` files are revisions, not errata;
* a hunk replaces at most `max_lines` lines by at most `max_lines` lines (pure additions are new
  text: new sections, new sentences; pure deletions remove text), the two blocks are similar
  (difflib ratio >= `min_similarity`) and differ in at most `max_edits` localised places, each of
  at most `max_changed_chars` characters;
* the edit is printed on both sides (not in a comment, `\\iffalse` block or comment
  environment), not whitespace or formatting only (`\\left`, spacing commands, `\\rm`, a number
  written another way with the same value);
* it touches a citation (`\\cite…`, type citations), a cross-reference (`\\ref`, `\\eqref`…, type
  general), a number the paper prints as a quantity (`PaperIndex.numbers`: not a date, a label,
  a figure number or a URL; type numerics) or maths (type mathematics); prose edits (typos,
  wording) are not taken;
* the same replacement made in `max_repeats` places or more of one commit is a notation change;
  the same fix met again in another commit (merged from another branch) is taken once;
* a citation key replaced by another while the old key named an entry of the paper's
  bibliography is a key rename (the printed citation was right); an unresolved key is an error;
* the edited file must be part of the paper loaded at the earlier commit;
* not notation (issue 21): an equation edit whose maths says the same thing before and after
  (`corpora/papers/tex_maths.py`: layout, fonts, vector macros, where a `*` sits, or equal under
  sympy at random values), a symbol renamed in several hunks of the commit, or the same text added in
  several places of one commit (a model revised throughout);
* not a re-analysis: a number changed by a commit that also changes a figure, data or code file,
  adds or edits a figure or table, or changes `max_numbers_changed` numbers or more;
* not a draft: a line holding a todo note or placeholder (`?`, `CITE`, `TBD`) or an outline item;
  a number edit must change a value (`sin^2` -> `sin$^2$` does not);
* not a choice being revised: a place edited to different values by several commits, or an edit
  reverted by a later commit, is dropped with every such edit;
* a reference whose old label the same commit renamed is a label rename, and a citation key that
  resolved in the `.bib` or (with no `.bib`) in the `.bbl` was right.

The truth span is exactly the characters the fix changed in the erroneous copy: an edit is widened
only within the token it cuts (a digit of 0.35 is the number 0.35), never into unchanged text; an
insertion (nothing of the erroneous copy changed) points at the token it attaches to.
Precision against hand labels: `bench/bench_errata_precision.py`, labels in
`tests/corpora/data/errata_labels.jsonl`.

One copy per fixing commit: the paper folder as it stood at the commit's parent, its truth every
accepted erratum of that commit. Errors fixed by later commits are also present in that copy and
are not in its truth: a reviewer flagging them is not credited, which can only lower its rate.
Git is read through its CLI (`git log`, `git diff`, `git show`, `git ls-tree`, `git cat-file`); nothing
is written to the repository. The history is untrusted: a tree entry is written into the temporary
paper folder only when it is a plain file (no symlink, no submodule) with a plain relative path
inside the paper folder (no `..`, no absolute path, no `.git`) and at most `MAX_BLOB_BYTES`; any
other entry is refused unread and reported (`ErrataScan.refused`, the corpus's load errors), and a
commit changing a paper source over the cap is not diffed.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from corpora.loaded_corpus import LoadedCorpus, LoadError
from corpora.papers.audit_corpus import Injection, PaperCopy, copy_rows
from corpora.papers.latex_paper import (
    CITE_RE,
    LABEL_RE,
    REF_RE,
    LatexPaper,
    Refused,
    load_latex_paper,
    unprinted_at,
)
from corpora.papers.tex_maths import argless_macros, expand_macros, layout_normalised, same_rendered_maths
from storage.latex_comments import remove_comments
from storage.schemas import ITEM_SCHEMA, TRUTH_SCHEMA, table_from_rows

__all__ = ["ErrataScan", "ErrataSource", "Erratum", "add_natural_track", "errata_copies", "find_errata",
           "paper_at_commit"]

TRACK = "natural"
MAX_BLOCK_CHARS = 8000
"""Replaced lines longer than this (together) are generated text, not a paragraph being corrected."""
KIND_TYPES = {"citation": "citations", "cross_reference": "general", "number": "numerics", "equation": "mathematics"}
"""Erratum kind -> error type of the audit's taxonomy."""
MAX_BLOB_BYTES = 8 * 2**20
"""A paper source over this size is refused unread: a .tex or .bib file is kilobytes, and a hostile
history may hold a 1 GB blob that must never be read whole."""


@dataclass(frozen=True)
class ErrataSource:
    """One paper repository to mine (a `[papers] errata_repos` entry)."""

    repo: str
    """A local git repository (a working copy or a bare one)."""
    folder: str = ""
    """The paper's folder inside the repository ("" for its root)."""
    main_file: str | None = None
    """The main file, relative to `folder` (found as `load_latex_paper` does when not given)."""
    paper_id: str | None = None
    """Paper id of the copies (default: the folder's name, else the repository's)."""
    max_copies: int | None = None
    """At most this many copies (the most recent fixing commits), None for all."""
    rev: str = "HEAD"
    """History mined: the commits reachable from this revision."""

    def __post_init__(self) -> None:
        if self.rev.startswith("-"):  # it reaches git's command line: never let it read as an option
            raise ValueError(f"errata_repos entry for '{self.repo}': rev {self.rev!r} must name a revision, not an option")
        if self.max_copies is not None and self.max_copies < 0:
            raise ValueError(f"errata_repos entry for '{self.repo}': max_copies must be >= 0")

    @classmethod
    def parse(cls, entry: str | dict[str, Any]) -> ErrataSource:
        if isinstance(entry, str):
            return cls(repo=entry)
        unknown = set(entry) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"errata_repos entry {entry!r}: unknown field(s) {sorted(unknown)}; "
                             f"known: {sorted(cls.__dataclass_fields__)}")  # fmt: skip
        if "repo" not in entry:
            raise ValueError(f"errata_repos entry {entry!r}: 'repo' (a local git repository) is required")
        return cls(**entry)

    @property
    def id(self) -> str:
        return self.paper_id or PurePosixPath(self.folder).name or Path(self.repo).resolve().name.removesuffix(".git")


@dataclass(frozen=True)
class Erratum:
    """One real error: in `file` (relative to the paper folder) at commit `parent`, the characters
    [changed_start, changed_end) read `erroneous`; commit `commit` made them `corrected`."""

    commit: str
    parent: str
    subject: str
    file: str
    kind: str
    start: int
    end: int
    old_block: str
    new_block: str
    changed_start: int
    changed_end: int
    erroneous: str
    corrected: str

    @property
    def error_type(self) -> str:
        return KIND_TYPES[self.kind]


@dataclass
class ErrataScan:
    """What a scan of one repository found: the errata and, by reason, the candidates dropped."""

    errata: list[Erratum] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)
    commits_scanned: int = 0
    head: str = ""
    max_blob_bytes: int = MAX_BLOB_BYTES
    refused: list[Refused] = field(default_factory=list)
    """Tree entries refused unread (unsafe path, link, submodule, over the size cap), each path and reason once."""

    def note_refused(self, paper: LatexPaper) -> None:
        known = {(r.target, r.reason) for r in self.refused}
        for r in paper.refused:
            if (r.target, r.reason) not in known:
                known.add((r.target, r.reason))
                self.refused.append(r)

    def by_commit(self) -> dict[str, list[Erratum]]:
        out: dict[str, list[Erratum]] = {}
        for e in self.errata:
            out.setdefault(e.commit, []).append(e)
        return out


class GitError(RuntimeError):
    pass


def _git(repo: str | Path, *args: str, stdin: bytes | None = None) -> bytes:
    # a repository's own config must not run commands here (fsmonitor hook, diff drivers: see --no-textconv)
    proc = subprocess.run(["git", "-C", str(repo), "-c", "core.fsmonitor=false", *args], capture_output=True,
                          check=False, input=stdin)
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args[:3])} in {repo}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _hunk_texts(diff: str) -> list[tuple[str, str, str]]:
    """(path, removed text, added text) of every hunk of a `-U0` diff."""
    out: list[list] = []
    path = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = None if line[4:] == "/dev/null" else line[6:]
        elif line.startswith("--- "):
            continue
        elif path and _HUNK_RE.match(line):
            out.append([path, "", ""])
        elif out and line[:1] == "-":
            out[-1][1] += line[1:] + "\n"
        elif out and line[:1] == "+":
            out[-1][2] += line[1:] + "\n"
    return [tuple(h) for h in out]


def _hunks(diff: str) -> list[tuple[str, int, int, int, int]]:
    """(path, old_start, old_count, new_start, new_count) of every hunk of a `-U0` diff."""
    out, path = [], None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = None if line[4:] == "/dev/null" else line[6:]
        elif path and (m := _HUNK_RE.match(line)):
            out.append((path, int(m.group(1)), int(m.group(2) or 1), int(m.group(3)), int(m.group(4) or 1)))
    return out


def _line_offsets(text: str) -> list[int]:
    offs = [0]
    for m in re.finditer("\n", text):
        offs.append(m.end())
    offs.append(len(text))
    return offs


def _block(text: str, start_line: int, count: int) -> tuple[int, int]:
    offs = _line_offsets(text)
    a = offs[min(start_line - 1, len(offs) - 1)]
    b = offs[min(start_line - 1 + count, len(offs) - 1)]
    return a, b


_TOKEN = re.compile(r"[\w.]")
_COMMAND_START = "\\"
_FORMATTING = re.compile(
    r"\\(?:left|right|big|Big|bigg|Bigg|displaystyle|textstyle|rm|mathrm|quad|qquad|nonumber|notag)(?![a-zA-Z])"
    r"|\\[,;!: ]|\\\\|&|\s+|[{}]|(?<!\d)[.,;](?!\d)|(?<!\\)\$"
)
"""Markup that changes layout, not meaning: sizing, spacing, alignment, line breaks, punctuation, a math
delimiter (a `$` added to close maths left open prints no other value)."""
_PLACEHOLDER = re.compile(r"todo|\bCITE\b|\bXXX\b|\?|TBD", re.I)
"""An unfinished draft (a citation or number still to come) is not an erratum when it is filled in."""
_DRAFT_LINE = re.compile(r"\\[a-zA-Z]*(?i:todo)\b|\bCITE\b|\bXXX\b|\bTBD\b|^\s*(?:[a-z]|\d{1,2})\)\.?\s"
                         r"|(?:^|&)\s*\?\s*(?=&|\\\\|$)", re.M)
"""A line that is still a draft: it holds an author's todo note or placeholder, or is an outline
item (`j). Approximating various kernels ...`) or a table cell still `?` (neural-fingerprint aa0bb38: `Dataset size & 1000
& ? & ?`); an edit there is the draft being written, not a fix."""
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_FIGURE_OR_TABLE = re.compile(r"\\includegraphics|\\begin\s*\{(?:figure|table|tabular)")
_SOURCE_SUFFIXES = (".tex", ".bib", ".bbl", ".cls", ".sty", ".bst", ".md", ".txt", ".yml", ".yaml", ".gitignore",
                    ".log", ".aux", ".blg", ".out", ".swp", ".synctex.gz", "~")
"""Files whose change is writing (or its by-products), not analysis: any other file changed with a
number (a figure, data, a script, a notebook) means the number was re-computed."""
_SYMBOL = re.compile(r"(?:\\?[A-Za-z]+)(?:[_^](?:\{[^{}]*\}|\\?\w))*")

def _edits(old: str, new: str, max_gap: int = 8) -> list[tuple[int, int, int, int]]:
    """Localised edits between two blocks: difflib regions closer than `max_gap` characters merged,
    each widened to whole tokens (a digit changed inside 0.35 is the number 0.35 changed)."""
    ops = [op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if op[0] != "equal"]
    merged: list[list[int]] = []
    for _, o1, o2, n1, n2 in ops:
        if merged and o1 - merged[-1][1] < max_gap and n1 - merged[-1][3] < max_gap:
            merged[-1][1], merged[-1][3] = o2, n2
        else:
            merged.append([o1, o2, n1, n2])
    out = []
    for o1, o2, n1, n2 in merged:
        # the text before and after an edit is equal on both sides: widen both by the same amount, and only
        # into the token the edit cuts (a digit of 0.35), never across a boundary into unchanged text
        # (deleting "\\frac{1}{4} " before "h_2" must not make "h_2" part of the truth)
        # (an insertion changes no character of the erroneous copy: its span is the token it attaches to)
        insertion = o1 == o2
        left_cut = insertion or (_TOKEN.match(old[o1]) or (n1 < n2 and _TOKEN.match(new[n1])))
        right_cut = insertion or (_TOKEN.match(old[o2 - 1]) or (n1 < n2 and _TOKEN.match(new[n2 - 1])))
        while left_cut and o1 > 0 and n1 > 0 and _TOKEN.match(old[o1 - 1]) and old[o1 - 1] == new[n1 - 1]:
            o1, n1 = o1 - 1, n1 - 1
        if o1 > 0 and n1 > 0 and old[o1 - 1] == _COMMAND_START == new[n1 - 1] and old[o1 : o1 + 1].isalpha():
            o1, n1 = o1 - 1, n1 - 1  # a command's name: its backslash belongs to the edit
        while right_cut and o2 < len(old) and n2 < len(new) and _TOKEN.match(old[o2]) and old[o2] == new[n2]:
            o2, n2 = o2 + 1, n2 + 1
        if o1 == o2 and o1 > 0 and n1 > 0:  # an insertion: the erroneous copy's span holds the character before it
            o1, n1 = o1 - 1, n1 - 1
        out.append((o1, o2, n1, n2))
    return out


def _formatting_only(a: str, b: str) -> bool:
    if _FORMATTING.sub("", a) == _FORMATTING.sub("", b):
        return True
    try:  # 0.50 -> 0.5, 1,000 -> 1000: the same number written another way
        return float(a.replace(",", "").strip()) == float(b.replace(",", "").strip())
    except ValueError:
        return False


def _overlaps(spans: Iterable[tuple[int, int]], a: int, b: int) -> bool:
    b = max(b, a + 1)
    return any(s < b and e > a for s, e in spans)


_ANY_LABEL = re.compile(r"\\[a-zA-Z]*label\s*\{[^}]*\}")
_YEAR = re.compile(r"\b(?:1[89]|20)\d\d\b")
_WORDS = re.compile(r"(?<![\\{a-zA-Z])[a-zA-Z]{2,}\s+[a-zA-Z]{2,}|(?<![\\{a-zA-Z])[a-zA-Z]{5,}")


def _within(spans: Iterable[tuple[int, int]], a: int, b: int) -> bool:
    return any(s <= a and max(b, a + 1) <= e for s, e in spans)


def _cmd_spans(rx: re.Pattern, text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in rx.finditer(text)]


def _keys(rx: re.Pattern, text: str, a: int, b: int) -> set[str]:
    return {k.strip() for m in rx.finditer(text) if m.start() < max(b, a + 1) and m.end() > a
            for k in m.group(1).split(",") if k.strip()}


def _resolved_keys(paper: LatexPaper, keys: set[str], bbl: str = "") -> bool:
    """Do all `keys` name entries of the paper's bibliography (so the printed citation was right)?
    A paper may ship only the `.bbl` BibTeX wrote (no `.bib`): its `\\bibitem[...]{key}` entries count too."""
    bib = "".join(paper.files[b] for b in paper.bib_files)
    return bool(keys) and all(re.search(r"@\w+\s*\{\s*" + re.escape(k) + r"\s*,", bib)
                              or re.search(r"\\bibitem\s*(?:\[[^\]]*\])?\s*\{\s*" + re.escape(k) + r"\s*\}", bbl)
                              for k in keys)  # fmt: skip


def _values(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in _NUMBER.findall(text)]


def _math_around(paper: LatexPaper, rel: str, start: int, end: int) -> tuple[int, int] | None:
    """The span of the display or inline maths of `rel` that holds [start, end)."""
    spans = [(m.start, m.end) for m in paper.index.display_math + paper.index.inline_math
             if m.file == rel and m.start <= start and max(end, start + 1) <= m.end]  # fmt: skip
    return min(spans, key=lambda s: s[1] - s[0]) if spans else None


@dataclass(frozen=True)
class _CommitDiff:
    """What one commit changed as a whole (the rules that look past one hunk)."""

    hunks: list[tuple[str, str, str]]
    """(path, removed text, added text) of every hunk of the paper's .tex/.bib files."""
    other_files: list[str]
    """Files of the paper folder changed by the commit besides its .tex/.bib sources."""
    starts: list[tuple[int, int]] = field(default_factory=list)
    """(old start line, old line count) of each hunk, in the order of `hunks` (empty: positions unknown)."""

    @property
    def analysis_files(self) -> list[str]:
        """The changed files that hold results (figures, data, scripts), not writing or its by-products."""
        return [f for f in self.other_files if not f.endswith(_SOURCE_SUFFIXES)
                and not PurePosixPath(f).name.startswith(".")]  # fmt: skip

    @property
    def removed(self) -> str:
        return "".join(h[1] for h in self.hunks)

    @property
    def added(self) -> str:
        return "".join(h[2] for h in self.hunks)

    def numbers_changed(self) -> int:
        """Values removed and not put back, over all hunks: many means the results were recomputed."""
        return sum(sum((Counter(_NUMBER.findall(h[1])) - Counter(_NUMBER.findall(h[2]))).values())
                   for h in self.hunks)  # fmt: skip

    def reanalysis(self, max_numbers: int) -> str | None:
        if self.analysis_files:
            return f"numbers changed with a figure, data or code file ({self.analysis_files[0]}): a re-analysis"
        if _FIGURE_OR_TABLE.search(self.added) or _FIGURE_OR_TABLE.search(self.removed):
            return "numbers changed with a figure or table: a re-analysis"
        if self.numbers_changed() >= max_numbers:
            return f"{max_numbers} or more numbers changed in one commit: a re-analysis"
        return None

    def renamed_elsewhere(self, wrong: str, right: str) -> bool:
        """Is `wrong` replaced by `right` in more than one hunk (a symbol renamed through the paper)?"""
        def has(text: str, sym: str) -> bool:
            return re.search(r"(?<![\\\w])" + re.escape(sym) + r"(?![\w{])", text) is not None

        return sum(has(h[1], wrong) and has(h[2], right) for h in self.hunks) >= 2

    def _others(self, own: tuple[str, str]) -> list[tuple[str, str, str]]:
        return [h for h in self.hunks if (h[1].strip(), h[2].strip()) != (own[0].strip(), own[1].strip())]

    def changed_consistently(self, before: str, after: str, wrong: str, right: str, own: tuple[str, str]) -> bool:
        """Does the maths `before` -> `after` replace symbols by other symbols (both sets non-empty) that other hunks
        of the commit replace the same way (gpss 0c558ac: `\\prod_j \\kLin_j ... \\sigma_m` became
        `\\kLin^m ... \\sigma^n` here and in the equation that defines the form)? The notation changed through
        the paper. A value fixed (digits are no symbol), a factor dropped or a symbol added is not this rule's, nor
        is an edit `wrong` -> `right` changing no symbol of that rename (celerite ec069a2: a sign fixed in an
        equation whose `t_2` the commit also renamed `\\tau_{3,2}`)."""
        removed, added = set(_symbols(before) - _symbols(after)), set(_symbols(after) - _symbols(before))
        if not removed or not added:
            return False
        own_removed, own_added = set(_symbols(wrong) - _symbols(right)), set(_symbols(right) - _symbols(wrong))
        if not own_removed | own_added or not (own_removed <= removed and own_added <= added):
            return False
        others = self._others(own)
        removed_else = set().union(*(set(_symbols(h[1]) - _symbols(h[2])) for h in others))
        added_else = set().union(*(set(_symbols(h[2]) - _symbols(h[1])) for h in others))
        return removed <= removed_else and added <= added_else

    def moved(self, old_block: str, new_block: str) -> bool:
        """Is a line of this hunk one another hunk removes or adds (deep-limits 5732ba7: the rows of a table of
        panels moved about; a line that moved was not corrected)?"""
        def lines(text: str) -> set[str]:
            return {n for line in remove_comments(text).splitlines()
                    if len(n := re.sub(r"\s+|\\\\$", "", line.strip())) >= 8}  # fmt: skip

        others = self._others((old_block, new_block))
        removed_else = set().union(*(lines(h[1]) for h in others))
        added_else = set().union(*(lines(h[2]) for h in others))
        return bool(lines(new_block) & removed_else or lines(old_block) & added_else)

    def revised_around(self, path: str, line: int, wrong: str, right: str, window: int = 12) -> bool:
        """Is this edit a rewrite of whole terms (3 or more symbols in or out) in a passage the commit rewrites: another
        maths hunk and 10 or more words of prose changed within `window` lines (gpss 25cc637: the changepoint
        equations re-written with the other convention, their prose with them)? A model being revised; a sign,
        index or factor fixed amid edits (celerite's referee fixes) changes fewer symbols and stays."""
        if sum(((_symbols(wrong) - _symbols(right)) + (_symbols(right) - _symbols(wrong))).values()) < 3:
            return False
        near = [h for h, (start, count) in zip(self.hunks, self.starts, strict=False)
                if h[0] == path and not start <= line < start + max(count, 1) and abs(start - line) <= window
                and _printed(h[1]) != _printed(h[2])]  # fmt: skip
        words = sum(((_words(h[1]) - _words(h[2])) + (_words(h[2]) - _words(h[1]))).total() for h in near)
        return words >= 10 and any(_MATHS_HINT.search(_printed(h[1]) + _printed(h[2])) for h in near)

    def removed_label(self, key: str) -> bool:
        return any(m.group(1).strip() == key for m in LABEL_RE.finditer(self.removed))


_SYMBOL_TOKEN = re.compile(r"\\[A-Za-z]+|[A-Za-z]+")
_MATHS_HINT = re.compile(r"\$|\\begin\s*\{(?:equation|align|eqnarray|gather|multline)|\\frac|[=^_]")


def _symbols(text: str) -> Counter[str]:
    """The symbols and commands of `text` outside comments, layout and fonts (`\\kLin`, `m`, `\\prod`)."""
    return Counter(t for t in _SYMBOL_TOKEN.findall(_FORMATTING.sub(" ", remove_comments(text)))
                   if t.lstrip("\\") not in _FONT_NAMES)  # fmt: skip


_FONT_NAMES = frozenset(["mathrm", "mathbf", "mathit", "mathcal", "mathsf", "mathtt", "mathbb", "boldsymbol", "bm",
                         "textrm", "textnormal", "text", "rm", "bf", "it", "left", "right"])


_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")


def _words(text: str) -> Counter[str]:
    """The prose words of `text` (3+ letters, not commands, outside comments and inline maths)."""
    return Counter(_WORD.findall(re.sub(r"\$[^$]*\$", " ", _printed(text))))


def _printed(text: str) -> str:
    return " ".join(remove_comments(text).split())


def _kind(old_text: str, new_text: str, o: tuple[int, int], n: tuple[int, int], paper: LatexPaper | None,
          rel: str) -> str | None:
    """Which printed thing in the erroneous copy an edit fixes (None: wording, labels, additions)."""
    if _overlaps(_cmd_spans(_ANY_LABEL, old_text), *o):
        return None  # a label is a name, never printed
    for kind, rx in (("citation", CITE_RE), ("cross_reference", REF_RE)):
        if _overlaps(_cmd_spans(rx, old_text), *o):
            # a wrong key replaced; keys only added (more references) fix nothing that was wrong
            return kind if _keys(rx, old_text, *o) - _keys(rx, new_text, *n) else None
    if paper is None or rel not in paper.files:
        return None
    idx = paper.index
    wrong, right = old_text[o[0] : o[1]], new_text[n[0] : n[1]]
    if (_overlaps([(x.span.start, x.span.end) for x in idx.numbers if x.span.file == rel], *o)
            and re.search(r"\d", wrong) and re.search(r"\d", right)):
        return None if _YEAR.search(wrong) or _YEAR.search(right) else "number"  # a year names a work or a date
    if _within([(s.start, s.end) for s in idx.display_math + idx.inline_math if s.file == rel], *o):
        # words on either side: a stray `$` made prose look like maths
        return None if _WORDS.search(wrong) or _WORDS.search(right) else "equation"
    return None


@dataclass
class _Limits:
    max_lines: int = 3
    max_changed_chars: int = 120
    max_edits: int = 3
    min_similarity: float = 0.6
    max_commit_hunks: int = 12
    max_repeats: int = 2
    max_numbers_changed: int = 3


def _tex_in(path: str, folder: str) -> str | None:
    """`path` relative to `folder` when it is a .tex file inside it."""
    p = PurePosixPath(path)
    if p.suffix != ".tex":
        return None
    if not folder:
        return str(p)
    try:
        return str(p.relative_to(PurePosixPath(folder)))
    except ValueError:
        return None


def _tex_specs(folder: str) -> list[str]:
    base = f"{folder}/" if folder else ""
    return [f":(glob){base}**/*.tex", f":(glob){base}**/*.bib"]


_SAFE_MODES = {"100644", "100755"}


def _entry_refusal(mode: str, kind: str, path: str, size: str, max_bytes: int) -> str | None:
    """Why a tree entry must not be written into the paper folder (None: a plain file, safe to write).
    Git stores any name a tree holds (`..`, `/etc/x`, `.git/hooks/...`); a clone succeeds, fsck only warns."""
    if path.startswith("/"):
        return "absolute path"
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "a '..', '.' or empty component climbs out of the paper folder"
    if any(p.lower() == ".git" for p in parts):
        return "names a .git folder"
    if any(ord(c) < 32 or c == "\x7f" for c in path):
        return "control character in the path"
    if kind == "commit" or mode == "160000":
        return "a submodule (gitlink) entry, not a file"
    if mode == "120000":
        return "a symbolic link (never followed)"
    if kind != "blob" or mode not in _SAFE_MODES:
        return f"unexpected entry (mode {mode}, type {kind})"
    if not size.isdigit() or int(size) > max_bytes:
        return f"{size} bytes, over the {max_bytes}-byte cap: not read"
    return None


def _tree_listing(source: ErrataSource, commit: str) -> list[tuple[str, str, str, str, str]]:
    """(mode, type, sha, size, path) of every entry under the paper folder at `commit` (nothing read)."""
    listing = _git(source.repo, "ls-tree", "-r", "-z", "-l", commit, "--", source.folder or ".")  # no pathspec magic here
    out = []
    for rec in listing.split(b"\0"):
        if not rec:
            continue
        meta, path = rec.split(b"\t", 1)
        mode, kind, sha, size = meta.decode("ascii", errors="replace").split()
        out.append((mode, kind, sha, size, path.decode("utf-8", errors="replace")))
    return out


def paper_at_commit(source: ErrataSource, commit: str, max_blob_bytes: int = MAX_BLOB_BYTES) -> LatexPaper:
    """The paper folder as it stood at `commit`: its .tex and .bib files (what `load_latex_paper`
    reads; figures are never fetched) written into a temporary folder and loaded from there.

    Only plain files with a plain relative path inside the paper folder are written, each checked
    before it is read (`_entry_refusal`) and created exclusively inside the temporary folder; every
    other .tex/.bib entry, and any entry whose path is unsafe, is refused unread and recorded in the
    paper's `refused` (file `<commit>:<path in the tree>`, line 0)."""
    refused: list[Refused] = []
    entries: list[tuple[str, str]] = []
    taken: set[str] = set()
    for mode, kind, sha, size, path in _tree_listing(source, commit):
        named = path.endswith((".tex", ".bib"))
        reason = _entry_refusal(mode, kind, path, size, max_blob_bytes)
        rel = None
        if reason is None and named:
            rel = _tex_in(path, source.folder) if path.endswith(".tex") else _rel(path, source.folder)
            if rel is not None and rel in taken:
                reason = "a second entry with the same path"
        if reason is not None and (named or reason.startswith(("absolute", "a '..'", "names a .git", "control"))):
            refused.append(Refused(f"{commit[:10]}:{path}", 0, path, reason))
        elif rel is not None:
            taken.add(rel)
            entries.append((sha, rel))
    with tempfile.TemporaryDirectory(prefix="scrutineer-errata-") as tmp:
        root = Path(tmp).resolve()
        for sha, rel in entries:
            target = root / rel
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                if not target.parent.resolve().is_relative_to(root):  # defence in depth: nothing lands outside
                    raise OSError("its folder resolves outside the paper folder")
                with open(target, "xb") as fh:  # never through an existing file or link
                    fh.write(_git(source.repo, "cat-file", "blob", sha))
            except OSError as exc:
                refused.append(Refused(f"{commit[:10]}:{rel}", 0, rel, f"cannot be written: {exc}"))
        paper = load_latex_paper(root, main_file=source.main_file, paper_id=source.id)
    paper.refused[:0] = refused
    return paper


def _rel(path: str, folder: str) -> str | None:
    try:
        return str(PurePosixPath(path).relative_to(PurePosixPath(folder))) if folder else path
    except ValueError:
        return None


def _oversized(source: ErrataSource, parent: str, commit: str, max_bytes: int) -> bool:
    """Does the commit change a paper source larger than `max_bytes` (on either side)? Sizes come from
    the object headers (`git cat-file --batch-check`): nothing is read before the diff is taken."""
    raw = _git(source.repo, "diff", "--raw", "-z", "--no-abbrev", "--no-renames", parent, commit, "--",
               *_tex_specs(source.folder))  # fmt: skip
    shas = {sha for rec in raw.split(b"\0") if rec.startswith(b":") for sha in rec.split()[2:4]
            if sha.strip(b"0")}  # all zeros: the file is absent on that side
    if not shas:
        return False
    sizes = _git(source.repo, "cat-file", "--batch-check=%(objectsize)", stdin=b"\n".join(sorted(shas)) + b"\n")
    return any(not n.isdigit() or int(n) > max_bytes for n in sizes.split())


def find_errata(source: ErrataSource, *, max_lines: int = 3, max_changed_chars: int = 120, max_edits: int = 3,
                min_similarity: float = 0.6, max_commit_hunks: int = 12, max_repeats: int = 2,
                max_numbers_changed: int = 3, max_blob_bytes: int = MAX_BLOB_BYTES) -> ErrataScan:
    """Every erratum in the history of `source` (newest commit first); see the module docstring."""
    lim = _Limits(max_lines, max_changed_chars, max_edits, min_similarity, max_commit_hunks, max_repeats,
                  max_numbers_changed)
    scan = ErrataScan(head=_git(source.repo, "rev-parse", source.rev).decode().strip(), max_blob_bytes=max_blob_bytes)
    log = _decode(_git(source.repo, "log", "--format=%H%x09%P%x09%s", source.rev, "--", source.folder or "."))
    papers: dict[str, LatexPaper | None] = {}
    seen: set[tuple[str, str, str]] = set()
    for line in log.splitlines():
        commit, parents, subject = (line.split("\t", 2) + [""])[:3]
        parents_l = parents.split()
        scan.commits_scanned += 1
        if len(parents_l) != 1:
            scan.rejected["merge or root commit"] += 1
            continue
        parent = parents_l[0]
        if re.match(r"(Revert|Merge)\b", subject):
            scan.rejected["revert or merge commit"] += 1
            continue
        try:  # only .tex files: a snapshot may lack large blobs (figures) nobody needs here
            if _oversized(source, parent, commit, max_blob_bytes):
                scan.rejected[f"a changed file over {max_blob_bytes} bytes (not read)"] += 1
                continue
            diff = _decode(_git(source.repo, "diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv",
                                "--no-renames", parent, commit, "--", *_tex_specs(source.folder)))  # fmt: skip
            names = _decode(_git(source.repo, "diff", "--name-only", "-z", "--no-renames", parent, commit, "--",
                                 source.folder or "."))  # fmt: skip
        except GitError:
            scan.rejected["commit not readable"] += 1
            continue
        hunks = [(rel, *h[1:]) for h in _hunks(diff) if (rel := _tex_in(h[0], source.folder)) is not None]
        if not hunks:
            continue
        if len(hunks) > lim.max_commit_hunks:
            scan.rejected[f"commit changes more than {lim.max_commit_hunks} hunks (a revision)"] += len(hunks)
            continue
        whole = _CommitDiff([h for h in _hunk_texts(diff) if _tex_in(h[0], source.folder) is not None],
                            [n for n in names.split("\0") if n], [(h[1], h[2]) for h in hunks])
        found = _commit_errata(source, commit, parent, subject, hunks, lim, scan, papers, max_blob_bytes, whole)
        repeats = Counter((e.erroneous, e.corrected) for e in found)
        inserted = Counter(_inserted(e) for e in found)
        reanalysis = whole.reanalysis(lim.max_numbers_changed)
        for e in found:
            if repeats[(e.erroneous, e.corrected)] >= lim.max_repeats:
                scan.rejected["same replacement in many places (a notation change)"] += 1
            elif _inserted(e) and inserted[_inserted(e)] >= lim.max_repeats:
                scan.rejected["same text added in many places (a model or notation revision)"] += 1
            elif e.kind == "number" and reanalysis:
                scan.rejected[reanalysis] += 1
            elif (e.kind == "equation" and len(e.erroneous) >= 2 and len(e.corrected) >= 2
                  and _SYMBOL.fullmatch(e.erroneous) and _SYMBOL.fullmatch(e.corrected)
                  and whole.renamed_elsewhere(e.erroneous, e.corrected)):
                scan.rejected["symbol renamed in several places of the commit (a notation change)"] += 1
            elif whole.moved(e.old_block, e.new_block):
                scan.rejected["lines moved, not corrected (the line is removed or added elsewhere in the commit)"] += 1
            elif (e.file, e.old_block, e.new_block) in seen:
                scan.rejected["the same fix in another commit (another branch)"] += 1
            else:
                seen.add((e.file, e.old_block, e.new_block))
                scan.errata.append(e)
    _drop_revised_places(scan)
    return scan


def _inserted(e: Erratum) -> str:
    """The text an edit only adds (nothing of the erroneous copy replaced), "" for any other edit."""
    if not e.corrected.startswith(e.erroneous) and not e.corrected.endswith(e.erroneous):
        return ""
    return e.corrected.removeprefix(e.erroneous) if e.corrected.startswith(e.erroneous) else e.corrected.removesuffix(e.erroneous)


def _place(e: Erratum) -> tuple[str, str]:
    """Where an erratum sits: its file and its block with the erroneous characters masked."""
    a, b = e.changed_start - e.start, e.changed_end - e.start
    return e.file, " ".join((e.old_block[:a] + "\0" + e.old_block[b:]).split())


def _drop_revised_places(scan: ErrataScan) -> None:
    """A place changed to different values by several commits (9 -> 8 components, later 6 -> 8) or a
    change undone by a later commit (a definition proposed, then reverted) is a choice being revised,
    not an error fixed once: every such edit is dropped."""
    edits: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for e in scan.errata:
        edits.setdefault(_place(e), set()).add((e.erroneous, e.corrected))
    blocks = {(e.file, " ".join(e.old_block.split()), " ".join(e.new_block.split())) for e in scan.errata}
    kept = [e for e in scan.errata if len(edits[_place(e)]) < 2
            and (e.file, " ".join(e.new_block.split()), " ".join(e.old_block.split())) not in blocks]
    scan.rejected["the same place revised in several commits (a value or definition being chosen)"] += (
        len(scan.errata) - len(kept))
    scan.errata[:] = kept


def _bbl_at(source: ErrataSource, commit: str, max_blob_bytes: int) -> str:
    """The `.bbl` files of the paper folder at `commit` (safe plain files only), joined."""
    out = []
    for mode, kind, sha, size, path in _tree_listing(source, commit):
        if path.endswith(".bbl") and _entry_refusal(mode, kind, path, size, max_blob_bytes) is None:
            out.append(_decode(_git(source.repo, "cat-file", "blob", sha)))
    return "".join(out)


def _commit_errata(source: ErrataSource, commit: str, parent: str, subject: str, hunks: list, lim: _Limits,
                   scan: ErrataScan, papers: dict[str, LatexPaper | None], max_blob_bytes: int,
                   whole: _CommitDiff) -> list[Erratum]:
    texts: dict[tuple[str, str], str | None] = {}

    def text_at(rev: str, rel: str) -> str | None:
        if (rev, rel) not in texts:
            path = f"{source.folder}/{rel}" if source.folder else rel
            try:
                texts[(rev, rel)] = _decode(_git(source.repo, "show", f"{rev}:{path}"))
            except GitError:
                texts[(rev, rel)] = None
        return texts[(rev, rel)]

    def paper() -> LatexPaper | None:
        if parent not in papers:
            try:
                papers[parent] = paper_at_commit(source, parent, max_blob_bytes)
                scan.note_refused(papers[parent])
            except (GitError, ValueError, OSError):
                papers[parent] = None
        return papers[parent]

    macros: dict[str, dict[str, str]] = {}

    def macros_at(side: str) -> dict[str, str]:
        """The paper's argument-less macros before (`old`) and after (`new`) the commit: a macro renamed or
        redefined in the commit is read with its own definition on each side."""
        if side not in macros:
            p = paper()
            old = argless_macros("".join(t for f, t in (p.files.items() if p else []) if f.endswith(".tex")))
            macros["old"] = old
            macros["new"] = {**old, **argless_macros("".join(text_at(commit, r) or "" for r in {h[0] for h in hunks}))}
        return macros[side]

    found = []
    for rel, os_, oc, ns, nc in hunks:
        if oc == 0 or nc == 0:
            scan.rejected["lines added or removed only (new or dropped text)"] += 1
            continue
        if oc > lim.max_lines or nc > lim.max_lines:
            scan.rejected[f"more than {lim.max_lines} lines replaced (a rewrite)"] += 1
            continue
        old_text, new_text = text_at(parent, rel), text_at(commit, rel)
        if old_text is None or new_text is None:
            scan.rejected["file missing on one side"] += 1
            continue
        a, b = _block(old_text, os_, oc)
        c, d = _block(new_text, ns, nc)
        old, new = old_text[a:b], new_text[c:d]
        if max(len(old), len(new)) > MAX_BLOCK_CHARS:
            # a generated file (showyourwork's macros.tex: 80 kB of \newcommand on one line) is no hand-made fix,
            # and a character diff of it takes quadratic time
            scan.rejected[f"lines longer than {MAX_BLOCK_CHARS} characters (generated text)"] += 1
            continue
        if difflib.SequenceMatcher(None, old, new, autojunk=False).ratio() < lim.min_similarity:
            scan.rejected["blocks too different (a rewrite)"] += 1
            continue
        edits = _edits(old, new)
        if len(edits) > lim.max_edits:
            scan.rejected[f"more than {lim.max_edits} edits in one hunk (a rewrite)"] += 1
            continue
        for o1, o2, n1, n2 in edits:
            wrong, right = old[o1:o2], new[n1:n2]
            if max(len(wrong), len(right)) > lim.max_changed_chars:
                scan.rejected[f"edit longer than {lim.max_changed_chars} characters"] += 1
                continue
            if unprinted_at(old_text, a + o1, a + o2) or unprinted_at(new_text, c + n1, c + n2):
                scan.rejected["in a comment or unprinted block"] += 1
                continue
            if _PLACEHOLDER.search(wrong):
                scan.rejected["a draft placeholder filled in"] += 1
                continue
            if _formatting_only(wrong, right):
                scan.rejected["whitespace or formatting only"] += 1
                continue
            line_a = old_text.rfind("\n", 0, a + o1) + 1
            line_b = old_text.find("\n", a + o2)
            if _DRAFT_LINE.search(old_text[line_a : line_b if line_b >= 0 else len(old_text)]):
                scan.rejected["draft text (a todo note, placeholder or outline item on the line)"] += 1
                continue
            p = paper()
            if p is None or rel not in p.files or rel in p.bib_files:
                scan.rejected["file not part of the paper at the earlier commit"] += 1
                continue
            if _formatting_only(expand_macros(wrong, macros_at("old")), expand_macros(right, macros_at("new"))):
                scan.rejected["a macro renamed or redefined (the same printed text)"] += 1
                continue
            if any(_NAMING.fullmatch(t) for t in _inserted_texts(wrong, right)):
                scan.rejected["only a name or an = put before unchanged maths"] += 1
                continue
            if _DASHES.sub("-", old[:o1] + right + old[o2:]) == _DASHES.sub("-", old):
                scan.rejected["a dash typed as -- or --- (typography)"] += 1
                continue
            if _named_by_definition(wrong, right, new_text):
                scan.rejected["an expression written with the symbol the paper defines for it"] += 1
                continue
            if _notation_macro_adopted(wrong, right, macros_at("new"), old_text):
                scan.rejected["a symbol written with the paper's notation macro for it"] += 1
                continue
            kind = _kind(old_text, new_text, (a + o1, a + o2), (c + n1, c + n2), p, rel)
            if kind is None:
                scan.rejected["prose edit (not an equation, number or reference)"] += 1
                continue
            if kind == "citation" and _resolved_keys(p, _keys(CITE_RE, old_text, a + o1, a + o2)
                                                     - _keys(CITE_RE, new_text, c + n1, c + n2),
                                                     _bbl_at(source, parent, max_blob_bytes)):
                scan.rejected["citation key renamed (the old key resolved)"] += 1
                continue
            if kind == "cross_reference" and any(
                    whole.removed_label(k) for k in _keys(REF_RE, old_text, a + o1, a + o2)
                    - _keys(REF_RE, new_text, c + n1, c + n2)):
                scan.rejected["label renamed with its references (the old reference resolved)"] += 1
                continue
            if kind == "number" and _values(wrong) == _values(right):
                scan.rejected["no value changed (markup around a number)"] += 1
                continue
            if kind == "equation" and (span := _math_around(p, rel, a + o1, a + o2)) is not None:
                before = old_text[span[0] : span[1]]
                after = old_text[span[0] : a + o1] + right + old_text[a + o2 : span[1]]
                # every edit of the hunk inside this maths (a relation rearranged moves terms in several edits)
                inside = [e for e in edits if span[0] <= a + e[0] and a + e[1] <= span[1]]
                lo, hi = max(span[0], a), min(span[1], b)  # the maths may run past the hunk's lines
                after_all = old_text[span[0] : lo] + _applied(old, new, inside, lo - a, hi - a) + old_text[hi : span[1]]
                # this edit alone, or the whole hunk when it lies in display maths (a factor taken out
                # of a bracket is several edits that only together say the same thing)
                in_display = any(m.file == rel and m.start <= a and b <= m.end for m in p.index.display_math)
                before_x = expand_macros(before, macros_at("old"))
                if (same_rendered_maths(before, after) or same_rendered_maths(before, after_all)
                        or same_rendered_maths(before_x, expand_macros(after_all, macros_at("new")))
                        or (in_display and same_rendered_maths(old, new))):
                    scan.rejected["notation only (the same maths written another way)"] += 1
                    continue
                if whole.changed_consistently(before, after_all, wrong, right, (old, new)):
                    scan.rejected["notation changed the same way in other places of the commit"] += 1
                    continue
                if whole.revised_around(f"{source.folder}/{rel}" if source.folder else rel, os_, wrong, right):
                    scan.rejected["equation rewritten with the passage around it (a model revision)"] += 1
                    continue
            found.append(Erratum(commit, parent, subject, rel, kind, a, b, old, new, a + o1, a + o2, wrong, right))
    return found


def _applied(old: str, new: str, edits: list[tuple[int, int, int, int]], start: int, end: int) -> str:
    """old[start:end] with `edits` (offsets in the blocks `old`/`new`, all inside [start, end)) made."""
    out, at = [], start
    for o1, o2, n1, n2 in sorted(edits):
        out += [old[at:o1], new[n1:n2]]
        at = o2
    return "".join(out) + old[at:end]


_DASHES = re.compile(r"-{2,3}")
_NAMING = re.compile(r"\s*(?:(?:\\mathcal\{[A-Za-z]\}|\\?[A-Za-z]+(?:_\{?\w+\}?)?)\s*(?:\\equiv|:=|\\coloneqq)|=)(?:\s|\\[,;:! ])*")
"""An insertion that only names what follows (`\\mathcal{C} \\equiv \\{1, ..., 80\\}`, symbolicgw 2023425) or puts
an `=` between a symbol and its printed value (coveringbasis 4c7e2ce): nothing printed before was wrong."""


def _inserted_texts(wrong: str, right: str) -> list[str]:
    """What an edit only inserts, read both ways (`\\` -> `\\mathcal{C}\\equiv \\` inserts before or after the
    backslash); none when it also replaces or removes characters."""
    return ([right[len(wrong) :]] if right.startswith(wrong) else []) + (
        [right[: len(right) - len(wrong)]] if right.endswith(wrong) else [])
_DEFINITION = re.compile(r"\$([^$=<>]{1,60}?)=([^$=<>]{1,200}?)\$|^\s*([^=<>&\n$]{1,60}?)&?=&?([^=<>\n$]{1,200}?)\s*(?:\\\\)?\s*$",
                         re.M)


def _bare(tex: str) -> str:
    """Layout-normalised maths without one pair of outer brackets (`\\left[d^o - d_k\\right]` is `d^o-d_k`)."""
    t = layout_normalised(tex.strip())
    return t[1:-1] if len(t) > 2 and (t[0], t[-1]) in (("[", "]"), ("(", ")")) else t


def _named_by_definition(wrong: str, right: str, new_text: str) -> bool:
    """`\\mathbf{B}_k[\\mathbf{d}^o - \\mathbf{d}_k]` -> `\\mathbf{B}_k\\mathbf{r}_k` where the paper (after the commit)
    states `\\mathbf{r}_k = [\\mathbf{d}^o - \\mathbf{d}_k]` (euler-inversion 66ba0b5): an expression replaced by
    the symbol defined as it, or the reverse, is the same quantity written another way."""
    a, b = _bare(wrong), _bare(right)
    if not a or not b or a == b:
        return False
    for m in _DEFINITION.finditer(new_text):
        lhs, rhs = (m.group(1), m.group(2)) if m.group(1) is not None else (m.group(3), m.group(4))
        name, value = _bare(lhs), _bare(rhs.rstrip(".,; "))
        if _SYMBOL.fullmatch(name) and {a, b} == {name, value}:
            return True
    return False


def _notation_macro_adopted(wrong: str, right: str, macros: dict[str, str], old_text: str) -> bool:
    """`n` -> `\\layerindex`: a plain symbol replaced by a macro the paper defines for one symbol and already
    uses in several places (deep-limits b9afdd8: the paper's notation adopted, not a value fixed)."""
    m = re.fullmatch(r"\\([A-Za-z]+)", right.strip())
    if not m or m.group(1) not in macros or not _SYMBOL.fullmatch(wrong.strip()):
        return False
    body = layout_normalised(macros[m.group(1)])
    uses = len(re.findall(re.escape(right.strip()) + r"(?![A-Za-z])", old_text))
    return bool(_SYMBOL.fullmatch(body)) and uses >= 3


def errata_copies(source: ErrataSource, scan: ErrataScan, corpus: str) -> tuple[list[dict], list[dict]]:
    """Item and truth rows of the natural-error copies of one repository (newest fixing commit first)."""
    items, truth = [], []
    commits = list(scan.by_commit().items())
    if source.max_copies is not None:
        commits = commits[: source.max_copies]
    for n, (commit, errata) in enumerate(commits, start=1):
        paper = paper_at_commit(source, errata[0].parent, scan.max_blob_bytes)
        scan.note_refused(paper)
        injections = []
        for k, e in enumerate(errata, start=1):
            if paper.files.get(e.file, "")[e.changed_start : e.changed_end] != e.erroneous:
                # truth whose offsets miss the copy's text would score nonsense: leave it out, counted
                scan.rejected["offsets do not hold in the loaded copy"] += 1
                continue
            injections.append(Injection(
                injection_id=f"{source.id}/erratum-{commit[:10]}/{k}", error_type=e.error_type, severity="natural",
                subtype=f"natural:{e.kind}", file=e.file, start=e.start, end=e.end, original=e.new_block,
                injected=e.old_block, rationale=f"fixed by commit {commit[:10]}: {e.subject}", mechanism="natural",
                changed_start=e.changed_start, changed_end=e.changed_end, changed_original=e.corrected,
                changed_injected=e.erroneous))  # fmt: skip
        if not injections:
            continue
        item, t = copy_rows(paper, PaperCopy(source.id, n, paper.files, injections, []), corpus, None)
        item_id = f"{source.id}/erratum-{commit[:10]}"
        extra = json.loads(t["extra_json"])
        extra.update(track=TRACK, erratum={"repo": str(source.repo), "folder": source.folder, "commit": commit,
                                           "parent": errata[0].parent, "subject": errata[0].subject})  # fmt: skip
        extra.pop("invalid_draws", None)
        extra.pop("draws", None)
        item.update(item_id=item_id, source=f"{source.repo}@{errata[0].parent[:10]}:{source.folder}")
        t.update(item_id=item_id, extra_json=json.dumps(extra, sort_keys=True, ensure_ascii=False))
        items.append(item)
        truth.append(t)
    return items, truth


def add_natural_track(corpus: LoadedCorpus, sources: Iterable[str | dict[str, Any] | ErrataSource],
                      **limits: Any) -> tuple[LoadedCorpus, dict[str, ErrataScan]]:
    """`corpus` plus the natural-error copies of every source; the version also names each
    repository's mined revision, the limits and this module's code."""
    items, truth = corpus.items.to_pylist(), corpus.truth.to_pylist()
    errors = list(corpus.errors)
    digest = hashlib.sha256(corpus.version.encode() + Path(__file__).read_bytes()
                            + json.dumps(limits, sort_keys=True).encode())  # fmt: skip
    scans: dict[str, ErrataScan] = {}
    for entry in sources:
        source = entry if isinstance(entry, ErrataSource) else ErrataSource.parse(entry)
        try:  # a configured track that silently vanished would publish an audit without it: stop here
            scan = find_errata(source, **limits)
            new_items, new_truth = errata_copies(source, scan, corpus.name)
        except (GitError, ValueError, OSError) as exc:
            raise ValueError(f"[papers] errata_repos: '{source.repo}' (folder '{source.folder}') not read: {exc}") from exc
        scans[source.id] = scan
        # entries refused unread lose no copy, but a hostile or broken history must be seen
        errors.extend(LoadError(f"{source.repo}@{r.file}", 0, f"git tree entry refused: {r.reason}") for r in scan.refused)
        digest.update(json.dumps(asdict(source), sort_keys=True).encode() + scan.head.encode())
        items += new_items
        truth += new_truth
    return (LoadedCorpus(corpus.name, digest.hexdigest()[:12], corpus.split, table_from_rows(items, ITEM_SCHEMA),
                         table_from_rows(truth, TRUTH_SCHEMA), errors), scans)  # fmt: skip

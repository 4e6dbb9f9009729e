"""The mechanical validator every proposed edit passes (appendix C).

An edit is accepted only if: its file is a LaTeX file of the compiled document (not a .bib);
the text to replace is non-empty and occurs exactly once in the current copy of that file; the
replacement changes the text; it does not overlap an earlier injection of the same copy; no
citation key is added, removed or altered anywhere in the file; the edit changes meaning in
printed text (`meaning_check`, issue 15: not inside a comment, `\\iffalse ... \\fi`, a comment
environment or a macro definition body such as ReScience's metadata `\\def`s; maths whose two
versions agree at sample points (sympy, via the checkers' parser, never eval) is no change; a
changed number must not be a software version, a year, or part of a label, reference, citation
key or URL); and, when a TeX engine is on the PATH and the clean copy compiles, the edited copy
still compiles. `tex_engine()` says which engine
(if any) is used; with none, `ValidationResult.compile_checked` is False and the reason says so.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from corpora.papers.injectors_core import Proposal
from corpora.papers.latex_paper import CITE_RE, unprinted_at
from storage.latex_comments import blank_comments

ENGINES = ("latexmk", "tectonic", "pdflatex")
MEANINGLESS = "not a meaningful printed change"
LABEL_MISMATCH = "not the error its type names"
INVALID_PREFIXES = (MEANINGLESS, LABEL_MISMATCH)
"""Rejections that make a draw invalid (re-drawn and counted), as opposed to a place that is taken or unique."""
COMPILE_TIMEOUT_S = 120


@dataclass(frozen=True)
class ValidationResult:
    ok: bool
    reason: str | None = None
    compile_checked: bool = False


def tex_engine() -> str | None:
    """The first TeX engine on the PATH (latexmk, tectonic, pdflatex), or None."""
    for name in ENGINES:
        if shutil.which(name):
            return name
    return None


def compiles(files: dict[str, str], main_file: str, engine: str | None = None) -> bool:
    """Whether the project `files` compiles with `engine` (raises when no engine is available)."""
    engine = engine or tex_engine()
    if engine is None:
        raise RuntimeError("no TeX engine on the PATH (looked for latexmk, tectonic, pdflatex)")
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in files.items():
            path = Path(tmp) / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="")
        cmd = {
            "latexmk": ["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", main_file],
            "tectonic": ["tectonic", "--keep-logs", main_file],
            "pdflatex": ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", main_file],
        }[Path(engine).name]
        try:
            done = subprocess.run(cmd, cwd=tmp, capture_output=True, timeout=COMPILE_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0


def cite_keys(text: str) -> Counter[str]:
    """Multiset of citation keys cited in `text` (comments ignored)."""
    return Counter(k.strip() for m in CITE_RE.finditer(blank_comments(text)) for k in m.group(1).split(",") if k.strip())


_DEF_BODY_RE = re.compile(r"\\(?:def\s*\\[A-Za-z@]+|(?:re)?newcommand\*?\s*\{?\\[A-Za-z@]+\}?(?:\[\d\])?)\s*\{")
_NAME_CMD_RE = re.compile(r"\\(?:label|ref|eqref|autoref|cref|Cref|pageref|cite[a-zA-Z]*|url|href|includegraphics"
                          r"|input|include|bibliography)\*?\s*(?:\[[^\]]*\])*\{[^{}]*$")
_SEPARATORS = "=&$<>\n"


def _brace_close(text: str, open_pos: int) -> int:
    depth = 0
    for i in range(open_pos, len(text)):
        if text[i] == "{" and text[i - 1] != "\\":
            depth += 1
        elif text[i] == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def _segment(text: str, a: int, b: int) -> str:
    """The maths operand around text[a:b]: out to the nearest relation, alignment, `$` or line break."""
    left = max((text.rfind(c, 0, a) for c in _SEPARATORS), default=-1) + 1
    rights = [i for i in (text.find(c, b) for c in _SEPARATORS) if i >= 0]
    return text[left:min(rights) if rights else len(text)].strip().rstrip(".,;").strip()


SameMaths = Callable[[str, str], bool]
"""Do two LaTeX expressions agree at sample points? (`checkers.equivalence.same_at_sample_points`;
corpora may not import checkers, so jobs pass it in.)"""


def meaning_check(text: str, start: int, proposal: Proposal, same_maths: SameMaths | None = None) -> str | None:
    """Why the edit of `text` at `start` (replacing proposal.original) changes no printed meaning, or None.
    Without `same_maths` the maths test is skipped."""
    import difflib

    ops = [o for o in difflib.SequenceMatcher(None, proposal.original, proposal.injected, autojunk=False).get_opcodes()
           if o[0] != "equal"]
    if not ops:
        return "replacement does not change the text"
    o1, o2, n1, n2 = ops[0][1], ops[-1][2], ops[0][3], ops[-1][4]
    a, b = start + o1, start + o2
    if unprinted_at(text, a, b):
        return "edit is not printed (a comment, an \\iffalse block or a comment environment)"
    for m in _DEF_BODY_RE.finditer(text, 0, a + 1):
        body = m.end() - 1
        if body < a and _brace_close(text, body) >= b:
            return "edit is inside a macro definition body (metadata, not printed text where it stands)"
    before = text[max(0, a - 200):a]
    old_chunk, new_chunk = proposal.original[o1:o2], proposal.injected[n1:n2]
    if re.fullmatch(r"[\d.,]*", old_chunk) and re.fullmatch(r"[\d.,]*", new_chunk):
        # A number edit must change a printed value, not a name (a broken \\ref is its own sub-type).
        if _NAME_CMD_RE.search(before):
            return "changed number is inside a label, reference, citation key, URL or file name"
        num = re.search(r"[vV]?\d[\d.,]*$", proposal.original[:o1] + old_chunk)
        tail = re.match(r"[\d.,]*", proposal.original[o2:])
        token = (num.group(0) if num else old_chunk) + (tail.group(0) if tail else "")
        if token[:1] in "vV" or re.search(r"\d+\.\d+\.\d+", token) or re.search(r"(?i)version\s*$", before + proposal.original[:o1]):
            return f"changed number {token!r} is a software version"
        if re.fullmatch(r"(1[89]|20)\d\d", token.strip(".,")):
            return f"changed number {token!r} is a year"
    old_seg = _segment(proposal.original, o1, o2)
    new_seg = _segment(proposal.injected, n1, n2)
    if (same_maths is not None and old_seg != new_seg and re.search(r"[\\^_{}+\-*/=]|\d", old_seg + new_seg)
            and same_maths(old_seg, new_seg)):
        return f"maths unchanged: {old_seg!r} and {new_seg!r} agree at sample points"
    return None


def validate(files: dict[str, str], compiled: list[str], proposal: Proposal,
             taken: list[tuple[str, int, int]] = (), main_file: str | None = None,
             engine: str | None = None, same_maths: SameMaths | None = None,
             label_check: Callable[[Proposal], str | None] | None = None) -> ValidationResult:  # fmt: skip
    """Check `proposal` against the current copy `files` (see the module docstring for the rules).

    Args:
        files: the copy's sources, relpath -> text, with earlier injections applied.
        compiled: the relpaths that make up the compiled document.
        proposal: the edit to check.
        taken: (file, start, end) of earlier injections in this copy.
        main_file: the main file, for the compile check.
        engine: a TeX engine to compile with (None: no compile check).
        same_maths: the maths-equivalence test of `meaning_check` (None: maths not sampled).
        label_check: why the edit is not the error its sub-type names (`label_check.label_mismatch`
            bound to the paper and sub-type), or None; a reason rejects the edit (issue 21).
    """
    if proposal.file not in compiled or proposal.file.endswith(".bib"):
        return ValidationResult(False, f"{proposal.file} is not a LaTeX file of the compiled document")
    text = files[proposal.file]
    if not proposal.original:
        return ValidationResult(False, "empty original text")
    count = text.count(proposal.original)
    if count != 1:
        return ValidationResult(False, f"original text occurs {count} times in {proposal.file} (want exactly 1)")
    if proposal.injected == proposal.original:
        return ValidationResult(False, "replacement does not change the text")
    start = text.index(proposal.original)
    end = start + len(proposal.original)
    for file, a, b in taken:
        if file == proposal.file and a < end and start < b:
            return ValidationResult(False, "edit overlaps an earlier injection of this copy")
    why = meaning_check(text, start, proposal, same_maths)
    if why is not None:
        return ValidationResult(False, f"{MEANINGLESS}: {why}")
    if label_check is not None and (why := label_check(proposal)) is not None:
        return ValidationResult(False, f"{LABEL_MISMATCH}: {why}")
    new_text = text[:start] + proposal.injected + text[end:]
    if cite_keys(new_text) != cite_keys(text):
        return ValidationResult(False, "a citation key is added, removed or altered")
    if engine is None:
        return ValidationResult(True, "no TeX engine: compile not checked")
    edited = dict(files)
    edited[proposal.file] = new_text
    if main_file is None or not compiles(edited, main_file, engine):
        return ValidationResult(False, f"edited copy does not compile with {engine}", compile_checked=True)
    return ValidationResult(True, None, compile_checked=True)

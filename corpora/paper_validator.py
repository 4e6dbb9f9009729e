"""The mechanical validator every proposed edit passes (appendix C).

An edit is accepted only if: its file is a LaTeX file of the compiled document (not a .bib);
the text to replace is non-empty and occurs exactly once in the current copy of that file; the
replacement changes the text; it does not overlap an earlier injection of the same copy; no
citation key is added, removed or altered anywhere in the file; and, when a TeX engine is on the
PATH and the clean copy compiles, the edited copy still compiles. `tex_engine()` says which engine
(if any) is used; with none, `ValidationResult.compile_checked` is False and the reason says so.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from corpora.latex_paper import CITE_RE, strip_comments
from corpora.paper_injectors_core import Proposal

ENGINES = ("latexmk", "tectonic", "pdflatex")
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
    return Counter(k.strip() for m in CITE_RE.finditer(strip_comments(text)) for k in m.group(1).split(",") if k.strip())


def validate(files: dict[str, str], compiled: list[str], proposal: Proposal,
             taken: list[tuple[str, int, int]] = (), main_file: str | None = None,
             engine: str | None = None) -> ValidationResult:  # fmt: skip
    """Check `proposal` against the current copy `files` (see the module docstring for the rules).

    Args:
        files: the copy's sources, relpath -> text, with earlier injections applied.
        compiled: the relpaths that make up the compiled document.
        proposal: the edit to check.
        taken: (file, start, end) of earlier injections in this copy.
        main_file: the main file, for the compile check.
        engine: a TeX engine to compile with (None: no compile check).
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

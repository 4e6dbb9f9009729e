"""A paper copy's sources as one text, for judges that get the full paper (escalation, panels).

The main file first, then the other files in path order, each under a `% ==== file: <path> ====`
header, so quotes stay verbatim and locations can name their file. (Same layout as the
reviewers' `verifiers.reviewers.llm.paper_text`: adjudication does not import verifiers.)
"""

from __future__ import annotations

__all__ = ["paper_text"]


def paper_text(files: dict[str, str], main_file: str = "main.tex") -> str:
    order = [main_file] + sorted(p for p in files if p != main_file)
    return "\n\n".join(f"% ==== file: {p} ====\n{files[p]}" for p in order if p in files)

"""Issue 21 on held-out papers: extraction defects found on papers never used to tune the rules.

* A `\\\\` inside braces (`\\sup_{\\substack{f \\in H \\\\ \\|f\\| = 1}}`) was read as the end of a display
  row, so the rows were cut inside the subscript and fragments such as `\\Hnorm{f} = 1}} | ...` were
  checked as equations (duvenaud/herding-paper@cecf8f1, paper/herding-bmc.tex).
* A number opening a range (`10--20\\%`) was compared by its first end with another range in the
  body (`5-10\\%`): "abstract 10 vs body 5" flagged on a clean paper (rodluger/everest_paper@47b7047,
  everest.tex).
"""

from __future__ import annotations

from verifiers.reviewers.statements import _display_rows, extract_statements

SUBSTACK = r"""\begin{document}
This allows us to rewrite the error into the following minimax forms:
\begin{align}
\epsilon^{2} &= \sup_{\substack{f\in\He\\\Hnorm{f}=1}} \left| \int f_x p(x) dx - \sum_{n=1}^{N}w_n f_{x_n}\right|^2\\
	&= \inf_{\bm{w}\in\mathbb{R}^N} \sup_{\substack{f\in\He\\\Hnorm{f}=1}} \left| \int f_x p(x) dx - \sum_{n=1}^{N}w_n f_{x_n}\right|^2
\end{align}
\end{document}
"""


def test_a_double_backslash_inside_braces_does_not_end_a_row():
    body = r"a &= \sup_{\substack{f\in H\\\|f\|=1}} g \\ &= h"
    rows = [row for row, _ in _display_rows(body, 0)]
    assert rows == [r"a &= \sup_{\substack{f\in H\\\|f\|=1}} g ", r" &= h"]


def test_substack_rows_are_checked_whole_never_as_fragments():
    statements = [s.payload["statement"] for s in extract_statements({"main.tex": SUBSTACK}, "main.tex")
                  if s.kind == "math.statement"]  # fmt: skip
    assert statements, "the step between the two minimax forms is a claim"
    for text in statements:
        assert text.count("{") == text.count("}"), text
        assert not text.lstrip().startswith(r"\Hnorm{f}"), text


ABSTRACT = r"""\begin{document}
\begin{abstract}
We present a new version of the pipeline for de-trending the photometry of stars observed by the
mission. On average, the new light curves have {VALUE} higher photometric precision than those in
version 1, yielding the highest precision light curves at all magnitudes of any publicly available
pipeline.
\end{abstract}
\section{Results}
Short cadence light curves have {BODY} lower CDPP on average.
\end{document}
"""


def abstract_body(value: str, body: str) -> list:
    text = ABSTRACT.replace("{VALUE}", value).replace("{BODY}", body)
    return [s for s in extract_statements({"main.tex": text}, "main.tex") if s.kind == "numerics.abstract_body"]


def test_a_range_is_not_compared_by_its_first_end():
    assert abstract_body(r"10--20\%", r"5-10\%") == []
    assert abstract_body(r"10--20\%", r"15\%") == []
    assert abstract_body(r"12\%", r"15 to 25\%") == []


def test_two_single_values_with_the_same_wording_are_still_compared():
    (statement,) = abstract_body(r"12\%", r"15\%")
    assert statement.payload == {"abstract": "12", "body": "15"}

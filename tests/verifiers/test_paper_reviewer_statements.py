"""Issue 15: the mechanical reviewer sends display equations as `math.statement` with the paper's macros.

A hand-made paper whose derivative is written with its own `\\newcommand` macros: the correct copy
raises no flag, a sign flipped inside the derivation step raises one flag quoting the changed
span, and a definition (`k = 2\\pi/\\lambda n`, where ...) is never flagged. The checks run in the
sandboxed checker pool, as in a real run.
"""

from __future__ import annotations

import asyncio

import pytest

from storage.records import Item
from verifiers.registry import SystemSpec, build_system
from verifiers.reviewers.statements import extract_statements, paper_macros, preamble_for
from verifiers.system import RunContext

PREAMBLE = r"""\documentclass{article}
\newcommand{\dd}{\mathrm{d}}
\newcommand{\damp}[1]{e^{-#1 t}}
\def\rate{\gamma}
\begin{document}
"""
BODY = r"""\section{Decay}
The amplitude decays as $\damp{\rate}$, and its time derivative follows from the chain rule:
\begin{equation}
\frac{\dd}{\dd t}\left(t\,\damp{\rate}\right) = \damp{\rate} - \rate\, t\,\damp{\rate} .
\label{eq:decay}
\end{equation}
The wave number in the medium is
\begin{equation}
k = 2\pi/\lambda n ,
\end{equation}
where $n$ is the refractive index.
\end{document}
"""
CORRECT = PREAMBLE + BODY
RIGHT_SIDE = r"\damp{\rate} - \rate\, t\,\damp{\rate}"
FLIPPED_SIDE = r"\damp{\rate} + \rate\, t\,\damp{\rate}"


def item(copy: int, text: str) -> Item:
    payload = {"paper_id": "D1", "copy": copy, "main_file": "main.tex", "files": {"main.tex": text}}
    return Item(f"D1/copy-{copy}", "paper_copy", "hand", None, payload)


@pytest.fixture(scope="module")
def reviewer():
    system = build_system(SystemSpec("paper_reviewer_mechanical", {"workers": 1}))
    yield system
    system.close()


def review(system, items):
    return asyncio.run(system.run(items, RunContext("run-s", "2026-05-05")))


def test_display_equations_go_as_math_statement_with_only_the_macros_they_use():
    statements = extract_statements({"main.tex": CORRECT}, "main.tex")
    assert [s.kind for s in statements] == ["math.statement"]  # the definition k = ... is not a claim
    payload = statements[0].payload
    # as printed, less spacing and \left/\right (the checker expands the macros itself)
    assert payload["statement"] == r"\frac{\dd}{\dd t} (t \damp{\rate} ) = \damp{\rate} - \rate  t \damp{\rate}"
    assert payload["preamble"].splitlines() == [r"\newcommand{\damp}[1]{e^{-#1 t}}",
                                                r"\newcommand{\dd}{\mathrm{d}}", r"\newcommand{\rate}{\gamma}"]


def test_macros_from_an_input_file_and_the_main_preamble_later_definition_wins():
    files = {"main.tex": r"\newcommand{\vr}{r}\begin{document}\end{document}", "macros.tex": r"\renewcommand{\vr}{x}"}
    macros = paper_macros(files, "main.tex")
    assert macros["vr"].body == "x"
    assert preamble_for(r"\alpha + 1", macros) == ""


@pytest.mark.integration
def test_correct_derivative_with_macros_gives_no_flag_and_is_confirmed(reviewer):
    (out,) = review(reviewer, [item(0, CORRECT)])
    assert out.error is None
    assert out.detail["flags"] == []
    assert out.detail["outcomes_by_kind"] == {"math.statement": {"confirmed": 1}}


@pytest.mark.integration
def test_sign_flip_in_the_derivative_is_flagged_quoting_the_changed_span(reviewer):
    assert CORRECT.count(RIGHT_SIDE) == 1
    text = CORRECT.replace(RIGHT_SIDE, FLIPPED_SIDE)
    start = text.index(FLIPPED_SIDE)
    (out,) = review(reviewer, [item(1, text)])
    (flag,) = out.detail["flags"]
    assert flag["check"]["kind"] == "math.statement" and flag["check"]["result"]["outcome"] == "refuted"
    assert flag["type"] == "mathematics"
    q = flag["check"]["quotes"][0]
    assert text[q["start"]:q["end"]] == q["text"] == flag["quote"]
    assert q["start"] <= start and start + len(FLIPPED_SIDE) <= q["end"]  # the quote covers the changed span
    assert FLIPPED_SIDE in flag["quote"] and "k = 2" not in flag["quote"]


def test_definition_alone_gives_no_flag_even_when_sent_to_the_checker(reviewer):
    text = PREAMBLE + "Let\n\\begin{equation}\nk = 2\\pi/\\lambda n\n\\end{equation}\n\\end{document}\n"
    assert extract_statements({"main.tex": text}, "main.tex") == []
    (out,) = review(reviewer, [item(2, text)])
    assert out.error is None and out.detail["flags"] == [] and out.detail["statements"] == 0


def test_a_law_without_calculus_is_not_checked_but_an_integral_is():
    text = (r"\begin{equation} a^2 + b^2 = c^2 \end{equation}" "\n"
            r"\begin{equation} \int_0^1 x^2\,dx = \frac{1}{3} \end{equation}" "\n"
            r"\begin{equation} m_1 v_1 = m_2 v_2 \end{equation}")
    statements = extract_statements({"main.tex": text})
    assert [s.payload["statement"] for s in statements] == [r"\int_0^1 x^2 dx = \frac{1}{3}"]


def test_value_lists_and_equation_hooks_are_read_as_the_paper_means_them():
    text = (r"\newcommand{\hook}[2]{https://example.org/#1.#2.html}" "\n"
            r"\begin{equation} m_1 = m_2 = 10\,M_\odot, d = 8 = \int_0^1 x\,dx \end{equation}" "\n"
            r"\begin{equation}{\hook{evol}{de_dt}} \int_0^1 2x\,dx = 1 \end{equation}")
    statements = extract_statements({"main.tex": text})
    # the hook's URL is not math (`context`: the paper's other equations, issue 21)
    assert [{k: v for k, v in s.payload.items() if k != "context"} for s in statements] == [
        {"statement": r"\int_0^1 2x dx = 1"}]


def test_makeatletter_internals_are_not_sent_as_macros():
    text = (r"\makeatletter\newcommand{\unit}[1]{\,\mathrm{#1}\checknext}"
            r"\newcommand{\checknext}{\@ifnextchar\bgroup{\gobble}{}}\newcommand{\gobble}[1]{\,\mathrm{#1}\checknext}")
    assert preamble_for(r"10 \unit{kpc}", paper_macros({"main.tex": text})) == r"\newcommand{\unit}[1]{\,\mathrm{#1}\checknext}"


def test_one_digit_case_labels_are_not_a_drifting_constant_but_a_decimal_is():
    text = ("Dipole ($\\ell = 1$) modes are suppressed.\n\nWe neglect the $\\ell = 1$ modes.\n\n"
            "The $\\ell = 0$ modes remain.\n\nWe adopt $h = 0.7$ here.\n\nAgain $h = 0.7$ there.\n\nBut $h = 0.8$ once.")
    statements = extract_statements({"main.tex": text})
    assert [(s.kind, s.quotes[0].text) for s in statements] == [("numerics.repeated_constant", "$h = 0.8$")]


def test_a_constant_alone_in_another_section_is_another_setting_not_a_drift():
    text = ("\\section{Transformer}\nWe use $\\alpha = 0.3$ here.\n\nAgain with $\\alpha = 0.3$ there.\n\n"
            "\\subsection{Distillation}\nThe teacher uses $\\alpha = 0.1$.\n")
    assert extract_statements({"main.tex": text}) == []
    drift = text.replace("Again with", "Again with $\\alpha = 0.1$ and")
    assert [s.quotes[0].text for s in extract_statements({"main.tex": drift})] == []  # 2 vs 2: no majority
    drift = text.replace("there.", "there, then $\\alpha = 0.4$ once.")
    (s,) = extract_statements({"main.tex": drift.replace("$\\alpha = 0.1$", "")})
    assert s.quotes[0].text == "$\\alpha = 0.4$"


def test_a_row_closing_an_inner_environment_is_a_fragment_and_control_spaces_are_dropped():
    text = (r"\begin{equation}\begin{gathered} a = \int_0^1 x\,dx \\ \int_0^1 2x\,dx = 1 \ . \end{gathered}"
            r"\end{equation}")
    statements = extract_statements({"main.tex": text})
    assert [s.payload["statement"] for s in statements] == []  # every row holds \begin or \end of the inner block
    text = r"\begin{equation} \int_0^1 2x\,dx = 1 \ . \end{equation}"
    assert [s.payload["statement"] for s in extract_statements({"main.tex": text})] == [r"\int_0^1 2x dx = 1"]

"""Issue 21 item 3: paper notation the statement checker misread, and symbols the paper does not leave free.

Each case failed before the change: `;` arguments and `_` inside subscripts ended in `error`, two
equations side by side (`\\qquad`) were merged into one chain and refuted, a bare `d` in a
denominator made a false identity inconclusive, an integral of a quantity the paper writes as
`A(t)` was refuted (or confirmed) as if A were a constant, and a relation between symbols tied by
a coordinate relation was refuted as if they were free.
"""

from __future__ import annotations

import pytest

from checkers.latex_parser import parse_expr
from checkers.registry import run_check


def statement(text: str, **extra) -> tuple[str, str]:
    result = run_check("math.statement", {"statement": text, **extra})
    return result.outcome, result.reason


@pytest.mark.parametrize("text", [r"a/b + c/d = (a+c)/(b+d)", r"\frac{a}{b} + \frac{c}{d} = \frac{a+c}{b+d}"])
def test_a_bare_d_in_a_denominator_is_a_plain_symbol_and_the_false_identity_is_refuted(text):
    assert statement(text)[0] == "refuted"


def test_a_d_followed_by_a_variable_still_counts_as_a_possible_differential():
    result = run_check("math.statement", {"statement": r"a d x = 2 a x d"})
    assert result.outcome == "inconclusive" and "differential" in result.reason


def test_semicolon_arguments_are_a_function_call_not_an_error():
    assert statement(r"f(0;0) = 1")[0] == "inconclusive"
    outcome, reason = statement(r"k_\mathrm{SHO}(\tau;\,S_0,\,Q) = S_0 Q \tau")
    assert outcome == "inconclusive" and "bad input" not in reason


def test_underscores_and_commas_inside_a_subscript_make_one_symbol_name():
    assert str(parse_expr(r"\phi_{1s,\Gamma_1}")) == "phi_1s_Gamma_1"
    assert statement(r"\phi_{1s,\Gamma_1} + \phi_{1s,\Gamma_1} = 2\phi_{1s,\Gamma_1}")[0] == "confirmed"
    assert statement(r"\phi_{1s,\Gamma_1} + \phi_{1s,\Gamma_1} = 3\phi_{1s,\Gamma_1}")[0] == "refuted"


def test_qquad_separated_equations_are_checked_apart_never_as_one_chain():
    assert statement(r"(x+1)^2 = x^2 + 2x + 1, \qquad y = 2y - y")[0] == "confirmed"
    outcome, reason = statement(r"(x+1)^2 = x^2 + 1 \qquad y = 2y - y")
    assert outcome == "refuted" and reason.startswith("equation 1 of 2")


def test_a_condition_after_quad_is_not_multiplied_into_the_equation():
    assert statement(r"(x+1)^2 = x^2 + 2x + 1 \quad \text{for } x > 0")[0] == "confirmed"
    assert statement(r"(x+1)^2 = x^2 + 1 \quad \text{for } x > 0")[0] == "inconclusive"


CONTEXT = [
    {"latex": r"A(t) = A_0 e^{-t/\tau}", "where": "main.tex:100"},
    {"latex": r"x = r\cos\theta", "where": "main.tex:200"},
    {"latex": r"\tan\psi = 2\tan\theta", "where": "main.tex:300"},
    {"latex": r"\frac{d}{dx} x^2 = 2x", "where": "main.tex:400"},
]


def test_an_integral_of_a_function_of_the_integration_variable_is_no_constant():
    outcome, reason = statement(r"\int_0^T A\,dt = 2 A T", context=CONTEXT)
    assert outcome == "inconclusive" and "A is not free" in reason and "main.tex:100" in reason
    outcome, reason = statement(r"\int_0^T A\,dt = A T", context=CONTEXT)
    assert outcome == "inconclusive" and "not confirmed" in reason
    assert statement(r"\int_0^T A\,dt = 2 A T")[0] == "refuted"  # without the paper's context A is free


def test_symbols_tied_by_a_coordinate_relation_or_a_constraint_are_not_refuted():
    outcome, reason = statement(r"x + \theta = 2\theta", context=CONTEXT)
    assert outcome == "inconclusive" and "x is not free" in reason and "r\\cos\\theta" in reason
    outcome, reason = statement(r"\sin\psi + \theta = \sin\theta + \psi", context=CONTEXT)
    assert outcome == "inconclusive" and "tied to" in reason


def test_free_symbols_and_identities_in_the_context_keep_refutations():
    # x is defined through r and theta, neither of which is in the statement: x is free here
    assert statement(r"(x+1)^2 = x^2 + 1", context=CONTEXT)[0] == "refuted"
    # an identity elsewhere (d/dx x^2 = 2x) ties nothing
    assert statement(r"\int_0^1 x\,dx = 1", context=CONTEXT)[0] == "refuted"
    assert statement(r"\int_0^1 x\,dx = \frac{1}{2}", context=CONTEXT)[0] == "confirmed"


def test_the_extractor_sends_the_papers_other_equations_and_prose_dependences():
    from verifiers.reviewers.statements import extract_statements

    tex = (r"We show $A$ as a function of $t$ in Fig. 1."
           "\n\\begin{equation}\\int_0^T A\\,dt = \\frac{d}{dt} A\\,T = 2 A T\\end{equation}\n")  # fmt: skip
    found = [s for s in extract_statements({"main.tex": tex}) if s.kind == "math.statement"]
    assert found and all({"latex": "A(t)", "where": "main.tex:8"} in s.payload["context"] for s in found)
    own = found[0].quotes[0]
    assert not any(c["where"] == f"main.tex:{own.start}" for c in found[0].payload["context"])
    assert all(run_check(s.kind, s.payload).outcome != "refuted" for s in found)


def test_qquad_separated_display_equations_are_extracted_as_separate_statements():
    from verifiers.reviewers.statements import extract_statements

    tex = "\\begin{equation}\\int_0^1 x\\,dx = \\frac{1}{2}, \\qquad \\int_0^1 x^2\\,dx = \\frac{1}{3}\\end{equation}"
    found = [s.payload["statement"] for s in extract_statements({"main.tex": tex})]
    assert found == [r"\int_0^1 x dx = \frac{1}{2}", r"\int_0^1 x^2 dx = \frac{1}{3}"]


def test_a_confirmation_that_holds_with_the_dependent_symbol_as_a_function_stands():
    # A(t) in the paper: the integral of A + A is twice the integral of A whatever A(t) is
    outcome, reason = statement(r"\int_0^T (A + A)\,dt = 2\int_0^T A\,dt", context=CONTEXT)
    assert outcome == "confirmed" and "as functions of their variables" in reason

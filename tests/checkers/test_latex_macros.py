"""Issue 15: a paper's own macros are expanded from its preamble before parsing (text only, bounded)."""

from __future__ import annotations

import pytest

from checkers.latex_macros import expand_macros, parse_macros, preamble_of
from checkers.registry import run_check
from checkers.result import CheckInputError

PREAMBLE = r"""
\documentclass{article}
\newcommand{\dd}{\ensuremath{\,\mathrm{d}}}      % celerite's differential
\newcommand\sq[1]{{#1}^{2}}
\renewcommand{\half}{\frac{1}{2}}
\newcommand{\pw}[2][2]{{#2}^{#1}}
\def\avg#1#2{\frac{#1 + #2}{2}}
\def\delim#1.{#1}
\DeclareMathOperator{\Lagr}{\mathcal{L}}
% \newcommand{\commented}{1}
\begin{document}
\newcommand{\late}{3}
"""


def test_definitions_are_read_with_arguments_defaults_and_operators():
    macros = parse_macros(preamble_of(PREAMBLE))
    assert macros["sq"].n_args == 1 and macros["sq"].body == "{#1}^{2}"
    assert macros["pw"].n_args == 2 and macros["pw"].default == "2"
    assert macros["avg"].n_args == 2
    assert macros["Lagr"].body == r"\operatorname{\mathcal{L}}"
    assert "delim" not in macros  # delimited parameters are not read: the command stays
    assert "commented" not in macros and "late" not in macros  # comments, and the body after \begin{document}


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        (r"\sq{x+1}", "{x+1}^{2}"),
        (r"\sq x", "{x}^{2}"),
        (r"\pw{y}", "{y}^{2}"),
        (r"\pw[3]{y}", "{y}^{3}"),
        (r"\avg{a}{b}", r"\frac{a + b}{2}"),
        (r"\int f \dd t", r"\int f \ensuremath{\,\mathrm{d}} t"),
        (r"\half\sq{\half}", r"\frac{1}{2}{\frac{1}{2}}^{2}"),
    ],
)
def test_uses_are_expanded(text, expanded):
    assert expand_macros(text, parse_macros(PREAMBLE)).replace("  ", " ") == expanded


def test_recursive_and_exploding_macros_are_input_errors_not_hangs():
    with pytest.raises(CheckInputError, match="macro expansions"):
        expand_macros(r"\loop", parse_macros(r"\newcommand{\loop}{\loop x}"))
    with pytest.raises(CheckInputError, match="characters"):
        bomb = r"\def\a{" + "x" * 100 + r"}\def\b{\a\a\a\a\a\a\a\a\a\a}\def\c{\b\b\b\b\b\b\b\b\b\b}"
        expand_macros(r"\c\c", parse_macros(bomb))


def test_a_statement_is_checked_in_the_paper_s_own_notation():
    payload = {"statement": r"\int_0^1 \sq{x} \dd x = \half - \frac{1}{6}", "preamble": PREAMBLE}
    assert run_check("math.statement", payload).outcome == "confirmed"
    payload["statement"] = r"\int_0^1 \sq{x} \dd x = \half"
    assert run_check("math.statement", payload).outcome == "refuted"
    # without the preamble the paper's commands are unknown: inconclusive, never refuted
    assert run_check("math.statement", {"statement": payload["statement"]}).outcome == "inconclusive"

"""Issue 21, item 4, second round: the invalid injections the hand labels found on the 14 shared
papers at seed 7, each reduced to a small paper that keeps the real case's text.

Label check: a citation sub-type outside the sentence or clause its citation supports, in a table,
or in a sentence about the authors' own work cut off by maths; a number in a sentence that continues
a cited one ("They ..."); round numbers repeated only for other things; a factor changed tenfold.
Injectors: hedge stand-ins that overstate nothing or break grammar; method words that are names; a
1/2 before a leading minus, on a set or an argmin; a dimensional term after a comma, on a function
composition, a set or an argmin; a bound moved onto a term that vanishes; percent_of on a sentence
whose numbers no ratio relates.
"""

from __future__ import annotations

import pytest

from corpora.papers.injectors_core import Proposal
from corpora.papers.injectors_math import dimensional_absurdity, index_bound_shift, spurious_prefactor
from corpora.papers.injectors_numerics import percent_of_break
from corpora.papers.injectors_prose import (
    cited_hedge_drop,
    cited_method_swap,
    cited_qualifier_swap,
    hedge_to_certainty,
)
from tests.corpora.latex_snippets import check, paper_of

# The 90 % credibility of cover-your-basis: the sentence's subject ("we") is more than 200 characters
# before the number, behind braces, where the reader's sentence split stopped.
CREDIBILITY = ("Following the rules in \\citet{Fishbach_2022}, \nwe place conservative upper bounds on the fraction of "
               "hierarchical mergers $f_\\mathrm{HM}$ and fraction of dynamically formed BBHs, $f_\\mathrm{dyn}$ with \n"
               "the B-spline $\\chi_\\mathrm{eff}$ model constraining $f_\\mathrm{HM} < $\\result{$\\macros[ChiEffective]"
               "[iid][frac_hm][10th percentile]$} \nand $f_\\mathrm{dyn} < $\\result{$\\macros[ChiEffective][iid][frac_dyn]"
               "[10th percentile]$} at 90\\% credibility. This is consistent with the 90\\% credible interval found "
               "before \\citep{o3a_pop}.")  # fmt: skip


@pytest.mark.parametrize(("body", "original", "injected", "subtype", "reason"), [
    # cover-your-basis: the catalog is cited, the paper's own framing before ", producing" is not
    ("Observations of gravitational waves from mergers are becoming a regular occurrence, \nproducing a catalog "
     "of events that recently surpassed 90 such detections \\citep{GWTC1,GWTC3}.", "Observations of", "Simulations of",
     "methodology_category_misattribution", "outside the clause"),
    # auto-stat: the 11-year cycle is the paper's report; the citation is for the Maunder minimum
    ("This part of the report describes the approximately 11-year sunspot cycle, also noting its disappearance "
     "during the 16th century, a time known as the Maunder minimum \\citep{lean}. The 11-year cycle is clear.",
     "approximately 11-year", "approximately 13-year", "quantitative_qualifier_misquote", "outside the clause"),
    # neural-fingerprints: the citation is for the solubility data, the linear model is the authors'
    ("The fingerprint network was trained as inputs to a linear model predicting solubility, as measured in "
     "\\citep{delaney}.", "a linear model", "a nonlinear model", "cited_method_qualifier_swap", "outside the clause"),
    # legwork: the fit is cited two sentences up, behind a display equation
    ("In addition, we implement the fit from \\citet{Mandel} that approximates the time as\n\\begin{equation}\n"
     "t = t_c (1 - e^2)^{7/2}\n\\end{equation}\nwhich gives $t$ with an error below 3\\% for eccentricities below "
     "$0.9999$.", "below 3\\% for", "below 4\\% for", "quantitative_qualifier_misquote", "cites nothing"),
    ("The characteristic strain is removed here \\citep{Robson}.\n\nThe characteristic strain represents the strain "
     "measured by the detector over the mission.", "strain measured by", "strain simulated by",
     "methodology_category_misattribution", "cites nothing"),
    (CREDIBILITY, "at 90\\% credibility", "at 98\\% credibility", "quantitative_qualifier_misquote", "authors' own"),
    # neural-fingerprints: a row name of the authors' table; the citation is in the column header
    ("\\begin{tabular}{cc}\nDataset & Solubility \\citet{delaney} \\\\\nCircular FPs + linear layer & 1.71 \\\\\n"
     "\\end{tabular}\n", "+ linear layer", "+ nonlinear layer", "cited_method_qualifier_swap", "inside a table"),
    # neural-fingerprints: "They" is the cited work; 150 compounds is stated once
    ("\\citet{Kireev} developed a neural network model for graphs whose inner loop optimises the correlation.\n"
     "They apply their model to a dataset of boiling points of 150 molecular compounds.", "of 150 molecular",
     "of 510 molecular", "headline_digit_swap", "only the cited work"),
    # symbolic-gw: GWTC-1's 11 events and the GMM's 11 components are different counts
    ("The GMM model has 11 independent Gaussian components.\nWhen 11 events were announced in the first catalog "
     "\\cite{GWTC1}, a power law was sufficient.", "has 11 independent", "has 110 independent",
     "sample_size_disagreement", "only for other things"),
    ("The GMM model has 11 independent Gaussian components.\nWhen 11 events were announced in the first catalog "
     "\\cite{GWTC1}, a power law was sufficient.", "When 11 events", "When 13 events",
     "quantitative_qualifier_misquote", "only the cited work"),
    # celerite: a run time of 10 CPU minutes is no count another "10" repeats
    ("The fit took about 10~CPU minutes. The figure shows a 10~day subset of the data.", "about 10~CPU",
     "about 1~CPU", "sample_size_disagreement", "only for other things"),
    # gp-kernel-search: 10-fold cross validation is stated once; the other 10 is a depth
    ("We performed 10 fold cross validation. The search was run to depth 10.", "performed 10 fold",
     "performed 11 fold", "repeated_constant_drift", "only for other things"),
    # micromag: 100 windows vs 100 replications and N=100
    ("We replicated the procedure 100 times. The simulation was replicated (N=100).\nIt was possible to determine "
     "the windows for 100 potential sources.", "windows for 100 potential", "windows for 110 potential",
     "repeated_constant_drift", "only for other things"),
    # pzflow: a learning-rate drop by a factor of 10 -> 100 is as plausible
    ("We decreased the learning rate by a factor of 10 after the 100th epoch.", "factor of 10 after",
     "factor of 100 after", "order_of_magnitude_mismatch", "a factor"),
])  # fmt: skip
def test_second_round_invalid_injections_are_refused(tmp_path, body, original, injected, subtype, reason):
    why = check(tmp_path, body, original, injected, subtype)
    assert why is not None and reason in why, why


@pytest.mark.parametrize(("body", "original", "injected", "subtype"), [
    # the citation's clause: an apposition before it, a relative clause right after it, a cited subject
    ("This flat region corresponds to the Maunder minimum, a period in which sunspots were extremely rare "
     "\\citep{lean}.", "Maunder minimum, a", "Maunder maximum, a", "direction_reversal"),
    ("Data is handled in Pandas \\citep{pandas}, while the flows are implemented in Jax \\citep{jax}, which allows "
     "for efficient, parallel calculations.", "for efficient, parallel", "for inefficient, parallel", "direction_reversal"),
    ("\\cite{SalHin08} used a deep neural network to learn feature transforms for kernels, which learn invariances "
     "in an unsupervised manner.", "an unsupervised manner", "an supervised manner", "cited_method_qualifier_swap"),
    # repeats of the same quantity: the same symbol, the same counted word, the same sentence, 3+ digits
    ("We use $K=16$ spline knots.\n\nWe find good performance with $K \\approx 16$ in practice.", "\\approx 16$",
     "\\approx 160$", "sample_size_disagreement"),
    ("On 24 simulated runs the estimator works. Of the 24 runs, 18 converged.", "On 24 simulated",
     "On 240 simulated", "sample_size_disagreement"),
    ("We replicated the square $10$ times, so that its length is $\\sqrt{10}$.", "square $10$ times",
     "square $1$ times", "sample_size_disagreement"),
    ("It contains 103 dipoles. A thin section of rock with 103 particles is shown.", "with 103 particles",
     "with 113 particles", "repeated_constant_drift"),
])  # fmt: skip
def test_second_round_valid_injections_pass(tmp_path, body, original, injected, subtype):
    assert check(tmp_path, body, original, injected, subtype) is None


def edits(proposals: list[Proposal]) -> list[tuple[str, str]]:
    return [(p.original, p.injected) for p in proposals]


def lines_after(paper, proposals: list[Proposal]) -> list[str]:
    """Each edit applied to the paper: the edited line (edit windows are only as wide as uniqueness needs)."""
    out = []
    for p in proposals:
        text = paper.files[p.file]
        at = text.index(p.original)
        new = text[:at] + p.injected + text[at + len(p.original) :]
        first = at + next((i for i, (a, b) in enumerate(zip(p.original, p.injected, strict=False)) if a != b),
                          min(len(p.original), len(p.injected)))  # fmt: skip
        out.append(new[new.rfind("\n", 0, first) + 1 : new.find("\n", first)])
    return out


def test_spurious_prefactor_goes_after_a_leading_sign_and_never_on_a_set_or_argmin(tmp_path):
    paper = paper_of(tmp_path, "\\begin{equation}\n\\dot a = -\\frac{64}{5} \\frac{G^{3} m}{c^{5} a^{3}} F(e).\n"
                               "\\end{equation}\n\\begin{equation}\n\\hat S = \\{s_c \\mid L(s_c) < L(s_q)\\},\n"
                               "\\end{equation}\n\\begin{equation}\ns_c = \\mathop{\\arg\\min}_{s} L(s)\n\\end{equation}\n")  # fmt: skip
    made = lines_after(paper, spurious_prefactor(paper))
    assert [line for line in made if "\\frac{64}{5}" in line] == [
        "\\dot a = -\\frac{1}{2} \\frac{64}{5} \\frac{G^{3} m}{c^{5} a^{3}} F(e)."]
    assert not [line for line in made if "\\{s_c" in line or "\\arg" in line], made


def test_dimensional_term_before_punctuation_and_never_on_compositions_sets_or_argmin(tmp_path):
    paper = paper_of(tmp_path, "\\begin{equation}\nm = a b,\\quad\\text{for each } c\n\\end{equation}\n"
                               "\\begin{align}\nf &= f_3 \\circ f_2 \\circ f_1.\n\\end{align}\n"
                               "\\begin{equation}\ns_c = \\mathop{\\arg\\min}_{s} L(s),\n\\end{equation}\n"
                               "\\begin{equation}\n\\hat S = \\{s_c \\mid L(s_c) < L(s_q)\\}\n\\end{equation}\n")  # fmt: skip
    made = lines_after(paper, dimensional_absurdity(paper))
    assert "m = a b + \\left(m\\right)^{2},\\quad\\text{for each } c" in made, made
    assert not any("\\circ" in line or "L(s)" in line or "L(s_c)" in line for line in made), made


def test_no_bound_shift_onto_a_vanishing_term(tmp_path):
    # brownian-bug: sum_{k=2} k(k-1) c_k from k=1 adds 1*0*c_1 = 0
    paper = paper_of(tmp_path, "\\begin{equation}\nG = \\sum_{k=2}^{\\infty}k(k-1)c_{k} + \\sum_{n=1}^{N} n\\,b_n"
                               " + \\sum_{j=2}^{N} c_j\n\\end{equation}\n")  # fmt: skip
    made = lines_after(paper, index_bound_shift(paper))
    assert not any("k=1" in line or "n=0" in line for line in made), made
    assert any("j=1" in line for line in made), made


def test_hedge_stand_ins_overstate_the_papers_own_claims_grammatically(tmp_path):
    paper = paper_of(tmp_path, (
        "Increasing the training data will likely alleviate these issues.\n\n"  # no claim of the paper
        "A CFD solver typically outputs the primary variables.\n\n"  # background
        "Our results suggest the flow will likely converge.\n\n"
        "Our model gives a better picture of the likely fine-scale structure.\n\n"
        "Our set has approximately $1.2$ million images.\n\n"
        "We describe it as `An approximately periodic function' in our report.\n\n"
        "The method typically converges in few steps.\n"))  # fmt: skip
    made = lines_after(paper, hedge_to_certainty(paper))
    assert sorted(made) == ["Our results prove the flow will likely converge.",
                            "Our results suggest the flow will certainly converge.",
                            "The method always converges in few steps."], made  # fmt: skip


def test_cited_swaps_skip_legends_names_and_verbs(tmp_path):
    paper = paper_of(tmp_path, (
        "* indicates a model that could not be expressed by the language of \\citet{Duv}.\n\n"
        "Calculate the TGA, also known as the 3D analytic signal \\citep{Roest}.\n\n"
        "Both show that these kernels can approximate any stationary covariance \\citep{bochner}.\n\n"
        "The survey results indicate a trend \\citep{s}, and the measured rates are linear \\citep{t}.\n"))  # fmt: skip
    hedges = lines_after(paper, cited_hedge_drop(paper))
    assert hedges == ["The survey results prove a trend \\citep{s}, and the measured rates are linear \\citep{t}."], hedges
    methods = lines_after(paper, cited_method_swap(paper))
    assert methods == ["The survey results indicate a trend \\citep{s}, and the simulated rates are linear \\citep{t}."]
    quals = lines_after(paper, cited_qualifier_swap(paper))
    assert quals == ["The survey results indicate a trend \\citep{s}, and the measured rates are nonlinear \\citep{t}."]


def test_percent_of_needs_a_ratio_that_relates_the_numbers(tmp_path):
    paper = paper_of(tmp_path, (
        "It gives an error below 3\\% for eccentricities below $0.9999$.\n\n"  # nothing relates 0.9999 to 3 %
        "\\begin{figure}\\caption{History at Reynolds numbers $100$, $200$, and $400$.}\\end{figure}\n"
        "\\begin{tabular}{cc}\n$200$ & $2.65$ ($+25\\%$) \\\\\n\\end{tabular}\n\n"
        "The grid is stretched with a constant ratio of $1.2$ over $40$ cells.\n\n"
        "A binary with eccentricity $0.5$ loses energy at 5 times the rate of a circular one.\n"))  # fmt: skip
    made = lines_after(paper, percent_of_break(paper))
    assert "A binary with eccentricity $0.8$ loses energy at 5 times the rate of a circular one." in made, made
    assert not any("0.9999" in line or "Reynolds" in line or "ratio of $1.8" in line for line in made), made

"""Every rule injector on the bundled example paper and on real papers: eligible, valid, as described."""

from collections import Counter

import pytest

from corpora.papers.injectors import RULES
from corpora.papers.latex_paper import REF_RE, load_latex_paper
from corpora.papers.subtypes import paper_subtypes
from corpora.papers.validator import validate
from tests.helpers.paths import REPO_ROOT, SHARED_DATA, require_shared_data

EXAMPLE = load_latex_paper(REPO_ROOT / "corpora" / "samples" / "papers" / "example-paper")
PAPERS = SHARED_DATA / "papers"
REAL = ["legwork-2022", "rescience-brownian-bug-2022", "gp-kernel-search-2013", "rescience-label-smoothing",
        "micromag-euler-2024"]  # fmt: skip


@pytest.fixture(scope="module")
def real_papers():
    require_shared_data()
    return [load_latex_paper(PAPERS / name) for name in REAL]


def _valid(paper, proposals):
    return [p for p in proposals if validate(paper.files, paper.compiled, p).ok]


# Rule stand-ins (issue 21) edit hedge and qualifier words the example paper does not use; they are
# tested on papers that do (tests/corpora/test_paper_label_check.py) and on the real papers below.
STAND_IN_RULES = {s.rule for s in paper_subtypes().subtypes if s.stands_in_for}


@pytest.mark.parametrize("rule", sorted(set(RULES) - STAND_IN_RULES))
def test_rule_is_eligible_and_valid_on_the_example(rule):
    proposals = RULES[rule](EXAMPLE)
    assert proposals, f"{rule} finds no place in the example paper"
    assert len(_valid(EXAMPLE, proposals)) == len(proposals)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_on_real_papers(rule, real_papers):
    eligible = 0
    for paper in real_papers:
        proposals = RULES[rule](paper)
        if proposals:
            eligible += 1
            results = [validate(paper.files, paper.compiled, p) for p in proposals[:40]]
            # Issue 15: a draw that changes no printed meaning (e.g. ReScience's unprinted metadata
            # abstract) is rejected by the meaning check and re-drawn; every other rule must hold.
            bad = [r.reason for r in results if not r.ok and not r.reason.startswith("not a meaningful printed change")]
            assert not bad, (rule, paper.paper_id, bad)
            valid = [p for p, r in zip(proposals[:40], results, strict=True) if r.ok]
            for p in valid:  # never inside a comment, never on a bib file
                assert not p.file.endswith(".bib")
    # hedge_to_certainty overstates only the paper's own claims ("we", "our", "the method"; issue 21)
    minimum = {"abstract_decimal_drift": 0, "percent_over_100": 1, "index_bound_shift": 2, "hedge_to_certainty": 2}.get(rule, 3)
    assert eligible >= minimum, f"{rule}: eligible on {eligible} of {len(real_papers)} real papers"


def _edits(rule):
    return {(p.original, p.injected) for p in RULES[rule](EXAMPLE)}


def test_math_rules_do_what_they_say():
    assert ("\\dot{x} + k x = 0", "\\dot{x} - k x = 0") in _edits("sign_flip")
    assert _edits("coefficient_change") == {("ot{x} + 2 m \\gamm", "ot{x} + 4 m \\gamm")}
    assert any("_{i=1}" in o and "_{i=0}" in i for o, i in _edits("index_bound_shift"))
    assert ("\\frac{k}{m}", "\\frac{m}{k}") in _edits("fraction_inversion")
    assert any("\\sum" in o and "\\prod" in i for o, i in _edits("operator_swap"))
    assert _edits("exponent_flip") == {("-\\gamma t", "\\gamma t")}  # $t^{b-1}$ is inline: not edited
    assert any("\\left(x(t)\\right)^{2}" in i for _, i in _edits("dimensional_absurdity"))
    assert _edits("term_deletion") == {("+ 2 m \\gamma \\dot{x} ", ""), ("+ k x ", ""),
                                       ("+ \\lambda \\sum_{j=1}^{P} \\theta_j^{2} ", "")}  # fmt: skip
    assert ("\\frac{1}{N}", "") in _edits("spurious_prefactor")  # normalisation drop


def test_numeric_rules_do_what_they_say():
    assert ("0.35", "0.36") in _edits("abstract_decimal_drift")
    assert any(i.endswith("(with the remaining 55\\% in the complementary case)") for _, i in _edits("percent_over_100"))
    assert any("24" in o and "240" in i for o, i in _edits("order_of_magnitude"))
    assert any("12" in o and "21" in i for o, i in _edits("digit_swap"))
    assert all("99" not in o for o, _ in _edits("order_of_magnitude"))  # numbers in comments are left alone
    table = _edits("table_cell_nudge")
    assert table and all("&" in o or "\\\\" in o or o.strip().isdigit() for o, _ in table)


def test_prose_rules_do_what_they_say():
    assert ("sec:results", "sec:resultss") in _edits("ref_label_typo") or any(
        "sec:results" in o for o, _ in _edits("ref_label_typo"))  # fmt: skip
    labels = set(EXAMPLE.index.labels)
    retargets = RULES["ref_retarget"](EXAMPLE)
    assert retargets
    for p in retargets:
        before = Counter(REF_RE.findall(EXAMPLE.files[p.file]))
        after = Counter(REF_RE.findall(EXAMPLE.files[p.file].replace(p.original, p.injected)))
        (gone,), (new,) = list(before - after), list(after - before)
        assert {gone, new} <= labels and gone.split(":")[0] == new.split(":")[0]
    assert ("upper", "lower") in _edits("cited_direction_flip")
    assert ("improves", "degrades") in _edits("abstract_polarity_flip")
    assert ("observed", "predicted") in _edits("cited_method_swap")
    assert ("effect", "affect") in _edits("homophone_swap")

"""The appendix-C test set of reference 002 (C.2.2 numerics, C.2.3 mathematics).

For every example the original statement must be confirmed and the injected one refuted, by the
same check. Each case says which mechanical check decides it and what had to be supplied beside
the quoted formula (a general form, a canonical form, an anchor value, declared units). Cases
that cannot be decided mechanically from what the reference prints are marked as such and
assert the checker's honest answer instead of a forced verdict.
"""

from __future__ import annotations

import pytest

from checkers.registry import run_check

SERSIC_GENERAL = (
    r"I_p \left[1+\left(\frac{R_b}{R}\right)^{\alpha}\right]^{\gamma/\alpha}"
    r" \exp\left[-b\left(\frac{R^{\alpha}+R_b^{\alpha}}{R_e^{\alpha}}\right)^{1/(\alpha m)}\right]"
)
SERSIC_PREFACTOR = r"I_b 2^{-\gamma/\alpha} \exp\left[b \left(2^{1/\alpha} R_b/R_e\right)^{1/m}\right]"
SERSIC_DOMAIN = {"R": [2, 4], "R_b": [0.2, 1.5], "R_e": [1, 5], "m": [1, 6], "b": [0.5, 5], r"\gamma": [0, 1],
                 "I_b": [0.5, 2]}  # fmt: skip
LEE_X = r"\left(\frac{10^{M_\star}}{10^{M_0}}\right)"
LEE_DOMAIN = {r"M_\star": [8, 12], "M_0": [9, 11], "S_0": [-1, 2], r"\gamma_1": [0.2, 2]}


def both(kind: str, original: dict, injected: dict) -> tuple:
    return run_check(kind, original), run_check(kind, injected)


def assert_pair(original, injected) -> None:
    assert original.outcome == "confirmed", original
    assert injected.outcome == "refuted", injected


# ---- C.2.3 mathematics ------------------------------------------------------------------------


@pytest.mark.parametrize("sign", ["+", "-"])
def test_core_sersic_sign_flip_against_general_form(sign):
    """S1 sign flip (2604.20344). Decided: the sharp-transition form must be the alpha -> infinity
    limit of the general core-Sersic form (Graham et al. 2003) for R > R_b, evaluated at ten
    random points of the other parameters."""
    limiting = rf"I_b\exp\left[-b(R/R_e)^{{1/m}}{sign}b(R_b/R_e)^{{1/m}}\right]"
    result = run_check("math.limiting_form", {"general": SERSIC_GENERAL, "var": r"\alpha", "to": r"\infty",
                                              "limiting": limiting, "definitions": {"I_p": SERSIC_PREFACTOR},
                                              "domain": SERSIC_DOMAIN})  # fmt: skip
    if sign == "+":
        assert result.outcome == "confirmed", result
        assert result.evidence["points_evaluated"] == 10
    else:
        assert result.outcome == "refuted", result
        point = result.evidence["counterexample"]
        assert point["R"] > point["R_b"]  # inside the declared domain
        assert float(result.evidence["limit_value"]) > float(result.evidence["expected_value"])


def test_conformal_factor_coefficient_against_canonical_form():
    """S1 coefficient 2 -> 4 (2604.20086). Not derivable from the quoted line alone: the canonical
    form 1 + 2 xi_M kappa^2 phi has to be supplied (the stage-2 knowledge audit of appendix A.2);
    the mechanical part is the equality with it, decided at random points."""
    canonical = r"1+2\xi_M\kappa^2\phi"
    original, injected = both("math.equality", {"lhs": r"1+2\xi_M\kappa^2\phi", "rhs": canonical},
                              {"lhs": r"1+4\xi_M\kappa^2\phi", "rhs": canonical})  # fmt: skip
    assert_pair(original, injected)
    assert injected.evidence["residual"] == "2*kappa**2*phi*xi_M"
    assert set(injected.evidence["counterexample"]) == {"kappa", "phi", "xi_M"}


@pytest.mark.parametrize("lower", ["1", "0"])
def test_klein_nishina_sum_lower_bound(lower):
    """S1 index shift n=1 -> n=0 (2604.20142). Decided: the series must equal its closed form
    Li_2(1/(1+4E))/E with every term defined; at n=0 the term 1/n^2 is 1/0."""
    result = run_check("math.series", {
        "series": rf"\frac{{1}}{{E}}\sum_{{n={lower}}}^{{\infty}}\frac{{(1+4E)^{{-n}}}}{{n^2}}",
        "equals": r"\frac{1}{E}\mathrm{Li}_2\left(\frac{1}{1+4E}\right)"})  # fmt: skip
    if lower == "1":
        assert result.outcome == "confirmed", result
        assert result.evidence["residual"] == "0"
    else:
        assert result.outcome == "refuted", result
        assert result.evidence["undefined_terms"][0]["index"] == "n=0"
        assert result.evidence["undefined_terms"][0]["term"] == "zoo"


def test_alpha_co_zero_point_deletion_at_solar_anchor():
    """S2 term deletion "-8.7" (2604.20080). Decided with the calibration's anchor: at solar
    metallicity Z = 12 + log(O/H) = 8.7 the relation must return log alpha_CO = 0.7."""
    original, injected = both(
        "math.limit", {"expr": "0.7-1.5[Z-8.7]", "var": "Z", "to": "8.7", "dir": "+-", "equals": "0.7"},
        {"expr": "0.7-1.5[Z]", "var": "Z", "to": "8.7", "dir": "+-", "equals": "0.7"})  # fmt: skip
    assert_pair(original, injected)
    assert injected.evidence["limit"] == "-247/20"  # 0.7 - 1.5 * 8.7 = -12.35


@pytest.mark.parametrize("operator", ["sum", "prod"])
def test_beamforming_sum_to_product_swap(operator):
    """S2 operator swap (2604.20262). The set-indexed sum over baselines is written over N indexed
    baselines. Decided by the normalisation the definition implies: with zero phases and equal
    visibilities V, S must reduce to V (a coherent mean). The physics of the phase term is not
    checked mechanically."""
    result = run_check("math.limiting_form", {
        "general": rf"\frac{{1}}{{N}}\{operator}_{{k=1}}^{{N}} V \exp(2\pi \mathrm{{i}}\,\phi)",
        "var": r"\phi", "to": "0", "limiting": "V", "domain": {"N": [2, 20]}})  # fmt: skip
    assert result.outcome == ("confirmed" if operator == "sum" else "refuted"), result


@pytest.mark.parametrize("prefactor", ["", r"\frac{1}{2}"])
def test_lee15_spurious_half_prefactor(prefactor):
    """S2 prefactor insertion (2604.20411). Decided by the paper's own stated reduction: with
    gamma_2 = 0 the modified main sequence must reduce to the unmodified Lee+15 form."""
    result = run_check("math.limiting_form", {
        "general": rf"S_0 - {prefactor}\log\left[{LEE_X}^{{-\gamma_1}} + {LEE_X}^{{\gamma_2}}\right]",
        "var": r"\gamma_2", "to": "0", "limiting": rf"S_0 - \log\left[1 + {LEE_X}^{{-\gamma_1}}\right]",
        "domain": LEE_DOMAIN})  # fmt: skip
    assert result.outcome == ("confirmed" if not prefactor else "refuted"), result


@pytest.mark.parametrize("extra", ["", r"+ 10^{M_\star}"])
def test_lee15_bare_additive_mass_term_units(extra):
    """S3 dimensional absurdity (2604.20411). Decided by pint: M_star and M_0 are log10 of a mass,
    so 10^{M_star} carries solar masses; every other term is logarithmic in Msun/yr."""
    units = {r"\mathrm{SFR}": "Msun/yr", "S_0": "log10(Msun/yr)", r"M_\star": "log10(Msun)",
             "M_0": "log10(Msun)", r"\gamma_1": "", r"\gamma_2": ""}  # fmt: skip
    result = run_check(
        "units.dimensions",
        {
            "units": units,
            "equation": (
                rf"\log \mathrm{{SFR}} = S_0 {extra} - \log\left[{LEE_X}^{{-\gamma_1}} + {LEE_X}^{{\gamma_2}}\right]"
            ),
        },
    )
    if not extra:
        assert result.outcome == "confirmed", result
        assert result.evidence["lhs"] == result.evidence["rhs"] == "log([mass] / [time])"
    else:
        assert result.outcome == "refuted", result
        assert result.evidence["rhs_terms"]["10**M_star"] == "[mass]"


@pytest.mark.parametrize("exponent", ["b-1", "1-b"])
def test_beta_pdf_exponent_flip_boundary_limit(exponent):
    """S3 false limit claim (2604.20203). Decided: for b > 1 the Beta pdf must tend to 0 as P -> 1
    from below; with 1-b it diverges. Ten random (a, b) with a, b in [1.2, 5]."""
    result = run_check("math.limit", {
        "expr": rf"\frac{{1}}{{\mathrm{{B}}(a,b)}}P^{{a-1}}(1-P)^{{{exponent}}}", "var": "P", "to": "1",
        "dir": "-", "equals": "0", "domain": {"a": [1.2, 5], "b": [1.2, 5]}})  # fmt: skip
    if exponent == "b-1":
        assert result.outcome == "confirmed", result
    else:
        assert result.outcome == "refuted", result
        assert result.evidence["limit_value"] == "oo"


def test_lorentz_factor_wrong_but_plausible():
    """S3 wrong-but-plausible formula (2604.20809): gamma^2 = 1/(1-v^2) vs 1/1 - v^2. Decided by
    substituting the definition gamma = 1/sqrt(1 - v^2) (c = 1)."""
    definition = {r"\gamma": r"\frac{1}{\sqrt{1-v^2}}"}
    original, injected = both(
        "math.equality", {"statement": r"\gamma^2 = \frac{1}{1-v^2}", "definitions": definition, "domain": {"v": [0, 0.99]}},
        {"statement": r"\gamma^2 = 1/1-v^2", "definitions": definition, "domain": {"v": [0, 0.99]}})  # fmt: skip
    assert_pair(original, injected)


def test_symmetric_mass_ratio_small_q_approximation():
    """C.2.2 S3 ratio (2604.20971): q/(1+q)^2 ~ q for q << 1, injected q/4. Decided as an
    asymptotic statement: lim_{q->0} lhs/rhs must be 1 (it is 4 for the injection)."""
    original, injected = both("math.approximation",
                              {"statement": r"\frac{q}{(1+q)^2} \approx q", "var": "q", "to": "0"},
                              {"statement": r"\frac{q}{(1+q)^2} \approx q/4", "var": "q", "to": "0"})  # fmt: skip
    assert_pair(original, injected)
    assert injected.evidence["limit"] == "4"


# ---- C.2.2 numerics ---------------------------------------------------------------------------


def test_percentages_40_plus_75():
    """S3 (2604.20344): 40% inadmissible + 75% admissible = 115%. The original sentence has no
    percentages; the complementary reading 40% + 60% stands in for it."""
    original, injected = both("numerics.percentages_sum", {"percentages": ["approximately 40%", "60%"]},
                              {"percentages": ["approximately 40%", "75%"]})  # fmt: skip
    assert_pair(original, injected)
    assert injected.evidence["computed"] == pytest.approx(115.0)
    assert injected.severity == "high"


def test_speedup_13_hours_over_200():
    """S2 (2604.20914): "~200 times speedup, from about 13 hours to 4 minutes" vs "6 minutes"."""
    original, injected = both("numerics.ratio", {"numerator": "about 13 hours", "denominator": "4 minutes",
                                                 "stated": "∼200"},
                              {"numerator": "about 13 hours", "denominator": "6 minutes", "stated": "∼200"})  # fmt: skip
    assert_pair(original, injected)
    assert original.evidence["computed"] == pytest.approx(195.0, rel=0.05)
    assert injected.evidence["computed"] == pytest.approx(130.0, rel=0.05)
    assert injected.severity == "medium"


def test_sample_size_290k_vs_29k():
    """S2 (2604.20411): body "∼290k" (original) / "∼29k" (injected) vs abstract "approximately 290,000"."""
    original, injected = both("numerics.integer_equality", {"values": ["∼290k", "approximately 290,000"]},
                              {"values": ["∼29k", "approximately 290,000"]})  # fmt: skip
    assert_pair(original, injected)
    assert injected.severity == "high"


def test_abstract_body_r21_second_decimal():
    """S1 (2604.20080): abstract R21 upper bound 0.34 -> 0.35, body still 0.34."""
    original, injected = both("numerics.abstract_body", {"abstract": "0.34", "body": "0.34"},
                              {"abstract": "0.35", "body": "0.34"})  # fmt: skip
    assert_pair(original, injected)
    assert injected.severity == "low"
    assert injected.evidence["discrepancy"] == pytest.approx(0.01)


def test_headline_alpha_digit_swap():
    """S2 (2604.20142): abstract alpha ≈ −1.5 -> −5.1; body reports −1.5."""
    original, injected = both("numerics.abstract_body", {"abstract": "≈−1.5", "body": "-1.5"},
                              {"abstract": "≈−5.1", "body": "-1.5"})  # fmt: skip
    assert_pair(original, injected)


def test_dwarf_count_order_of_magnitude():
    """S3 (2604.20086): abstract "14 dwarf spheroidal galaxies" -> 140; body says 14."""
    original, injected = both(
        "numerics.integer_equality", {"values": ["14", "14"]}, {"values": ["140", "14"]}
    )
    assert_pair(original, injected)
    assert injected.severity == "high"


def test_repeated_constant_turbulence_normalisation():
    """S1 (2604.20971): C = 360 in Sec. 3, Sec. 4.1 and the conclusion; injected 370 in Sec. 4.1."""
    original, injected = both("numerics.repeated_constant", {"values": ["360", "360", "360"]},
                              {"values": ["360", "370", "360"]})  # fmt: skip
    assert_pair(original, injected)
    assert injected.evidence["disagreeing"] == ["370"]
    assert injected.severity == "low"


def test_table_row_47279_not_decidable_from_the_printed_aggregate():
    """S1 (2604.20411): one row count 47279 -> 47269. NOT decidable mechanically from what the
    reference prints: the other rows of Table 1 are not given, and the only printed aggregate,
    "∼290k", has a precision of ±500, far coarser than the 10-galaxy change. The checker must
    answer within printed precision, i.e. it cannot tell the two apart; we assert exactly that."""
    rest = "242,721"  # a stand-in for the other rows, making the original sum exactly 290,000
    original = run_check("numerics.table_column_total", {"values": ["47,279", rest], "total": "∼290k"})
    injected = run_check("numerics.table_column_total", {"values": ["47,269", rest], "total": "∼290k"})
    assert original.outcome == injected.outcome == "confirmed"
    exact = run_check("numerics.table_column_total", {"values": ["47,269", rest], "total": "290,000"})
    assert exact.outcome == "refuted"  # with an exactly printed total the same change is caught
    assert exact.evidence["discrepancy"] == pytest.approx(-10.0)

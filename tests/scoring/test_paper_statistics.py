"""The paper-audit statistics' building blocks against hand-computed small cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scoring.multiple_testing import benjamini_hochberg
from scoring.papers.agreement import cohen_kappa, dispersion_ratio, kappa_of_table, pearson_r, phi_of_table
from scoring.papers.bootstrap import (
    paired_difference,
    ratio_estimate,
    ratio_samples,
    sign_reversal,
    weights,
)
from scoring.papers.rows import metric_row, stratum
from scoring.papers.trend import page_l, page_test


def test_page_l_with_mid_ranks_on_a_3x3_table():
    # Rows ranked within themselves: [1,2,3], [1.5,1.5,3] (tie -> mid-ranks), [2,1,3].
    # Column sums R = [4.5, 4.5, 9]; L = 1*4.5 + 2*4.5 + 3*9 = 40.5.
    table = np.array([[0.2, 0.5, 0.9], [0.5, 0.5, 1.0], [0.3, 0.1, 0.6]])
    assert page_l(table) == pytest.approx(40.5)


def test_page_exact_permutation_p_value_on_a_3x3_table():
    # Per-row contributions sum_j j * r_perm(j) over the 6 relabellings of each row:
    #   rows 1 and 3 (ranks {1,2,3}): {14, 13, 13, 11, 11, 10}; row 2 (ranks {1.5,1.5,3}):
    #   {13.5, 13.5, 12, 12, 10.5, 10.5}. Total >= 40.5 needs row2 = 13.5 (prob 1/3) and
    #   rows 1+3 >= 27: (14,14), (14,13)x2, (13,14)x2 = 5 of 36. p = 1/3 * 5/36 = 5/108.
    table = np.array([[0.2, 0.5, 0.9], [0.5, 0.5, 1.0], [0.3, 0.1, 0.6]])
    t = page_test(table)
    assert t.exact and t.n_rows == 3
    assert t.statistic == pytest.approx(40.5)
    assert t.p_value == pytest.approx(5 / 108)


def test_page_monte_carlo_agrees_with_exact_and_drops_incomplete_rows():
    table = np.array([[0.2, 0.5, 0.9], [0.5, 0.5, 1.0], [0.3, 0.1, 0.6], [np.nan, 0.2, 0.3]])
    mc = page_test(table, max_exact=1, n_permutations=20_000, seed=3)
    assert not mc.exact and mc.n_rows == 3
    assert mc.p_value == pytest.approx(5 / 108, abs=0.006)
    empty = page_test(np.full((2, 3), np.nan))
    assert math.isnan(empty.p_value) and empty.n_rows == 0


def test_page_decreasing_table_is_not_significant():
    # Every row strictly decreasing: L = 1*3n + 2*2n + 3*n = 10n, the minimum; p = 1.
    table = np.array([[0.9, 0.5, 0.1]] * 4)
    t = page_test(table)
    assert t.statistic == pytest.approx(40.0)
    assert t.p_value == pytest.approx(1.0)


def test_cohen_kappa_and_phi_on_a_2x2_table():
    # Table: both yes 4, x only 2, y only 1, both no 3 (n = 10). p_o = 0.7; P(x=1) = 0.6,
    # P(y=1) = 0.5; p_e = 0.6*0.5 + 0.4*0.5 = 0.5; kappa = 0.2 / 0.5 = 0.4.
    # phi = (4*3 - 2*1) / sqrt(6*4*5*5) = 10 / sqrt(600) = 0.408248.
    x = [1] * 4 + [1] * 2 + [0] * 1 + [0] * 3
    y = [1] * 4 + [0] * 2 + [1] * 1 + [0] * 3
    assert cohen_kappa(x, y) == pytest.approx(0.4)
    assert pearson_r(x, y) == pytest.approx(10 / math.sqrt(600))


def test_table_forms_match_the_hand_2x2():
    # the same table as above, as counts [x][y] with categories (0, 1): [[3, 1], [2, 4]]
    T = np.array([[3.0, 1.0], [2.0, 4.0]])
    assert kappa_of_table(T) == pytest.approx(0.4)
    assert phi_of_table(T, np.array([False, True])) == pytest.approx(10 / math.sqrt(600))
    stacked = np.stack([T, np.zeros((2, 2)), np.array([[1.0, 0.0], [0.0, 0.0]])])
    k = kappa_of_table(stacked)
    assert k[0] == pytest.approx(0.4) and math.isnan(k[1]) and math.isnan(k[2])


def test_kappa_three_categories_and_undefined_cases():
    # x: fp .5, amb .25, conf .25; y: fp .5, conf .5; p_o = 2/4; p_e = .25 + 0 + .125 = .375;
    # kappa = (.5 - .375) / (1 - .375) = 0.2.
    x = ["fp", "amb", "conf", "fp"]
    y = ["fp", "fp", "conf", "conf"]
    assert cohen_kappa(x, y) == pytest.approx(0.2)
    assert math.isnan(cohen_kappa([], []))
    assert math.isnan(cohen_kappa([1, 1], [1, 1]))  # p_e = 1
    assert math.isnan(pearson_r([1, 1, 1], [0, 1, 0]))  # constant vector


def test_weights_are_seeded_and_sum_to_the_number_of_papers():
    a, b = weights(5, 100, seed=7), weights(5, 100, seed=7)
    assert np.array_equal(a, b)
    assert np.all(a.sum(axis=1) == 5)
    assert not np.array_equal(a, weights(5, 100, seed=8))


def test_ratio_over_resampled_papers_by_hand():
    # Paper 1: 3 of 4 detected, paper 2: 1 of 4. Resamples {1,1} -> 6/8, {2,2} -> 2/8, {1,2} -> 4/8.
    num, den = np.array([3.0, 1.0]), np.array([4.0, 4.0])
    W = np.array([[2.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    assert ratio_samples(num, den, W).tolist() == [0.75, 0.25, 0.5]
    est = ratio_estimate(num, den, weights(2, 2000, seed=0))
    # each resample is one of the three with probabilities 1/4, 1/4, 1/2: percentiles hit the ends
    assert est.value == 0.5 and est.n == 8
    assert est.ci == (0.25, 0.75)
    empty = ratio_estimate(np.zeros(2), np.zeros(2), W)
    assert math.isnan(empty.value) and empty.n == 0


def test_paired_difference_sign_reversal_by_hand():
    # A: 3/4 and 1/4 per paper; B: 1/4 and 1/4. d = 0.5 - 0.25 = 0.25. Resamples: {1,1} -> 0.5,
    # {2,2} -> 0 (reversal: not > 0), {1,2} -> 0.25. Fraction reversed = 1/3.
    W = np.array([[2.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    d = paired_difference(np.array([3.0, 1.0]), np.array([4.0, 4.0]), np.array([1.0, 1.0]),
                          np.array([4.0, 4.0]), W)
    assert d.value == pytest.approx(0.25)
    assert d.sign_reversal == pytest.approx(1 / 3)
    assert sign_reversal(-0.1, np.array([-0.2, 0.1, 0.0, -0.3])) == pytest.approx(0.5)
    assert sign_reversal(0.0, np.array([0.1, 0.2])) == 1.0


def test_benjamini_hochberg_reproduces_the_papers_astrophysics_decisions():
    # Table 10 astrophysics raw p: citations .005, numerics .026, mathematics .126, general .397.
    # BH: .005*4/1 = .02, .026*4/2 = .052, .126*4/3 = .168, .397 -> only citations rejected at .05.
    q = benjamini_hochberg([0.005, 0.026, 0.126, 0.397])
    assert q == pytest.approx([0.02, 0.052, 0.168, 0.397])
    assert (q <= 0.05).tolist() == [True, False, False, False]


def test_metric_row_empty_is_nan_with_n_zero():
    row = metric_row("r", "s", "detection_rate", stratum(type="numerics", severity="S2"), float("nan"), n=5)
    assert row["stratum"] == "type=numerics|severity=S2"
    assert math.isnan(row["value"]) and row["n"] == 0
    assert stratum() == "all"


def test_dispersion_ratio_by_hand():
    # 3 of 4 and 1 of 4: q = .5; chi2 = (3-2)^2/(4*.25) + (1-2)^2/(4*.25) = 2; df = 1 -> 2.
    assert dispersion_ratio(np.array([3.0, 1.0]), np.array([4.0, 4.0])) == pytest.approx(2.0)
    # papers with nothing scored are left out; a single paper or q = 0 is undefined
    assert dispersion_ratio(np.array([3.0, 1.0, 0.0]), np.array([4.0, 4.0, 0.0])) == pytest.approx(2.0)
    assert math.isnan(dispersion_ratio(np.array([3.0]), np.array([4.0])))
    assert math.isnan(dispersion_ratio(np.array([0.0, 0.0]), np.array([4.0, 4.0])))

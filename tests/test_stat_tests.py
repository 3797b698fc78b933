"""isg_gym.stat_tests returns the very float bits scipy.stats returns, on the kinds of columns the
generator writes (continuous, rounded, small integers with many ties, skewed), and the env no
longer imports scipy.stats."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.stats.contingency import expected_freq

from isg_gym import stat_tests

CASES = 400


def _bits(value: float) -> bytes:
    return np.float64(value).tobytes()


def assert_same(mine: tuple[float, float], ref: tuple[float, float]) -> None:
    for m, r in zip(mine, ref, strict=True):
        if np.isnan(r):
            assert np.isnan(m), (mine, ref)
        else:
            assert _bits(m) == _bits(r), (mine, ref)


def _pairs(seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(CASES):
        n = int(rng.integers(3, 250))
        match i % 4:
            case 0:
                x = rng.normal(size=n) * 10 ** rng.uniform(-3, 5)
                y = 0.3 * x + rng.normal(size=n)
            case 1:
                x = rng.integers(0, 5, n).astype(float)
                y = rng.integers(0, 7, n).astype(float)
            case 2:
                x = np.round(rng.normal(50, 10, n), 1)
                y = np.round(x * 2 + rng.normal(0, 5, n), 2)
            case _:
                x = rng.lognormal(size=n)
                y = rng.exponential(size=n) + x
        if not (np.all(x == x[0]) or np.all(y == y[0])):
            out.append((x, y))
    return out


@pytest.fixture(scope="module")
def pairs() -> list[tuple[np.ndarray, np.ndarray]]:
    return _pairs(20261202)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_correlations_and_slope_match_scipy(pairs) -> None:
    for x, y in pairs:
        r = stats.pearsonr(x, y)
        assert_same(stat_tests.pearsonr(x, y), (r.statistic, r.pvalue))
        r = stats.spearmanr(x, y)
        assert_same(stat_tests.spearmanr(x, y), (r.statistic, r.pvalue))
        r = stats.linregress(x, y)
        assert_same(stat_tests.linregress(x, y), (r.slope, r.pvalue))


def test_welch_and_kruskal_match_scipy(pairs) -> None:
    rng = np.random.default_rng(7)
    for x, y in pairs:
        cut = int(rng.integers(1, len(x)))
        a, b = x[:cut], y[cut:]
        r = stats.ttest_ind(a, b, equal_var=False)
        assert_same(stat_tests.ttest_welch(a, b), (r.statistic, r.pvalue))
        k = int(rng.integers(2, 6))
        groups = [x[j::k] for j in range(k)]
        r = stats.kruskal(*groups)
        assert_same(stat_tests.kruskal(*groups), (r.statistic, r.pvalue))


def test_contingency_tables_match_scipy() -> None:
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(CASES):
        shape = (int(rng.integers(2, 5)), int(rng.integers(2, 5)))
        table = rng.integers(0, 30, shape)
        if (expected_freq(table) == 0).any():
            continue
        assert expected_freq(table).tobytes() == stat_tests.expected_freq(table).tobytes()
        for correction in (False, True):
            r = stats.chi2_contingency(table, correction)
            assert_same(stat_tests.chi2_contingency(table, correction), (r.statistic, r.pvalue))
        checked += 1
    assert checked > CASES // 2


def test_yates_correction_only_with_one_degree_of_freedom() -> None:
    two_by_two = np.array([[12, 5], [7, 14]])
    assert stat_tests.chi2_contingency(two_by_two, True) != stat_tests.chi2_contingency(
        two_by_two, False
    )
    two_by_three = np.array([[12, 5, 9], [7, 14, 3]])
    assert stat_tests.chi2_contingency(two_by_three, True) == stat_tests.chi2_contingency(
        two_by_three, False
    )
    assert stat_tests.chi2_contingency(np.array([[3, 4]])) == (0.0, 1.0)  # no degree of freedom


def test_edge_cases_as_scipy() -> None:
    constant, ramp = np.ones(6), np.arange(6.0)
    assert all(np.isnan(v) for v in stat_tests.pearsonr(constant, ramp))
    assert all(np.isnan(v) for v in stat_tests.spearmanr(ramp, constant))
    assert all(np.isnan(v) for v in stat_tests.kruskal(np.ones(3), np.ones(4)))  # all tied
    assert stat_tests.pearsonr(np.array([1.0, 2.0]), np.array([5.0, 3.0])) == (-1.0, 1.0)
    assert list(stat_tests.rankdata(np.array([3.0, 1.0, 3.0, 2.0]))) == [3.5, 1.0, 3.5, 2.0]


def test_bad_input_raises_a_clear_error() -> None:
    with pytest.raises(ValueError, match="same length"):
        stat_tests.pearsonr(np.arange(3.0), np.arange(4.0))
    with pytest.raises(ValueError, match="not all equal"):
        stat_tests.linregress(np.ones(4), np.arange(4.0))
    with pytest.raises(ValueError, match="at least two groups"):
        stat_tests.kruskal(np.arange(3.0))
    with pytest.raises(ValueError, match="sums to zero"):
        stat_tests.chi2_contingency(np.array([[0, 0], [3, 4]]))
    with pytest.raises(ValueError, match="non-negative"):
        stat_tests.chi2_contingency(np.array([[-1, 2], [3, 4]]))


def test_env_runs_without_importing_scipy_stats() -> None:
    """The gold answers need scipy.special only: scipy.stats (about 50 MB) stays out of the env
    process (the sandbox preloads it for the agent)."""
    code = (
        "import sys, gymnasium as gym, isg_gym\n"
        "from isg_gym.qa.sampling import make_question\n"
        "from isg_gym.repository import Repository\n"
        "repo = Repository.from_seed(3)\n"
        "types = ('bivariate_statistic', 'hypothesis_test', 'effect_direction')\n"
        "made = [make_question(repo, t, i, a) for t in types for i in range(3) "
        "for a in (True, False)]\n"
        "assert sum(q is not None for q in made) >= 6\n"
        "env = gym.make('ISG-Discovery-v0'); env.reset(seed=5)\n"
        "print(sorted(m for m in sys.modules if m.startswith('scipy.stats')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout

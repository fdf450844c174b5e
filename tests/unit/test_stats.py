"""stats.py: the intervals, tests and adjustments every table shares are scipy's, seeded, and
behave at the edges (one value, identical values) the way the tables rely on."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from shotbench import stats


def test_median_interval_is_scipys_bca_and_repeats() -> None:
    x = np.random.default_rng(1).lognormal(0, 0.3, 40)
    ci = stats.median_interval(x, seed=7)
    ref = st.bootstrap((x,), np.median, method="BCa", n_resamples=stats.RESAMPLES, rng=np.random.default_rng(7))
    assert ci.estimate == np.median(x)
    assert (ci.low, ci.high) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high))
    assert stats.median_interval(x, seed=7) == ci  # the same table every time
    assert ci.low < ci.estimate < ci.high and ci.contains(ci.estimate)


def test_bca_covers_the_true_median_about_as_often_as_it_says() -> None:
    """Coverage on skewed data, as runtimes are: 200 samples of 30 from a lognormal."""
    rng = np.random.default_rng(2)
    hits = sum(
        stats.median_interval(rng.lognormal(0, 0.5, 30), n_resamples=1000, seed=i).contains(1.0) for i in range(200)
    )
    assert 0.88 <= hits / 200 <= 0.99


def test_ratio_interval_of_medians() -> None:
    rng = np.random.default_rng(3)
    slow, fast = rng.normal(1.2, 0.05, 30), rng.normal(1.0, 0.05, 30)
    ci = stats.ratio_interval(slow, fast)
    assert ci.estimate == pytest.approx(np.median(slow) / np.median(fast))
    assert 1.1 < ci.low < ci.estimate < ci.high < 1.3
    assert not ci.contains(1.0)
    assert stats.ratio_interval(fast, rng.normal(1.0, 0.05, 30)).contains(1.0)
    assert ci.half_width < 0.05


def _three_runs(rng: np.random.Generator, shift: float = 1.0, run_sd: float = 0.15) -> list[np.ndarray]:
    """Three runs of 12 task times: each run has its own level (its minute of the machine), then task noise."""
    return [shift * np.exp(rng.normal(0, run_sd) + rng.normal(0, 0.3, 12)) for _ in range(3)]


def test_runs_pooled_on_a_side_are_resampled_run_by_run() -> None:
    """Three runs a side whose levels differ by about 15 % from run to run: over 200 A/A pairs,
    the interval that resamples tasks as if independent lies above 1 with a ratio of at least 1.1
    (the gate's slower) in 11 % of them; the one that resamples runs, then tasks, in 4.5 %. A slowdown
    every run shows is still seen."""
    rng = np.random.default_rng(1)
    flat = runs = 0
    for i in range(200):
        a, b = _three_runs(rng), _three_runs(rng)
        pooled = stats.ratio_interval(np.concatenate(b), np.concatenate(a), n_resamples=1000, seed=i)
        clustered = stats.clustered_ratio_interval(b, a, n_resamples=1000, seed=i)
        assert clustered.estimate == pytest.approx(pooled.estimate)
        flat += pooled.low > 1 and pooled.estimate >= 1.1
        runs += clustered.low > 1 and clustered.estimate >= 1.1
    assert runs <= 10 and 2 * runs < flat, (runs, flat)
    slowed = stats.clustered_ratio_interval(_three_runs(rng, 2.0), _three_runs(rng), n_resamples=1000)
    assert slowed.low > 1.1 and slowed.contains(2.0)


def test_one_run_a_side_is_the_plain_ratio_interval() -> None:
    rng = np.random.default_rng(2)
    x, y = rng.normal(2, 0.2, 30), rng.normal(1, 0.1, 30)
    assert stats.clustered_ratio_interval([x], [y]) == stats.ratio_interval(x, y)
    assert not stats.clustered_ratio_interval([[]], [y]).known
    assert stats.clustered_ratio_interval([x, x], [y]).known  # runs on one side only: still resampled


def test_edges_one_value_identical_values_empty() -> None:
    one = stats.median_interval([2.0])
    assert one.estimate == 2.0 and not one.known and not one.contains(2.0) and not one.contains(1.0)
    same = stats.median_interval([3.0, 3.0, 3.0])
    assert (same.low, same.high) == (3.0, 3.0)
    assert math.isnan(stats.median_interval([]).estimate)
    assert not stats.ratio_interval([1.0, 2.0], [3.0]).known
    # BCa is undefined when every jackknife median is equal; the percentile interval stands in
    ci = stats.median_interval([1.0, 1.0, 1.0, 1.0, 5.0])
    assert ci.known and ci.low <= 1.0 <= ci.high


def test_mann_whitney_is_scipys() -> None:
    assert stats.mann_whitney([1, 2, 3], [4, 5, 6]) == stats.Test(0.0, pytest.approx(0.1))
    assert stats.mann_whitney([6, 7, 8, 9, 10], [1, 2, 3, 4, 5]).p == pytest.approx(2 / 252)  # exact
    x, y = [1, 1, 2, 2], [3, 3, 4, 4]  # ties: the corrected normal approximation
    assert stats.mann_whitney(x, y).p == pytest.approx(st.mannwhitneyu(x, y, method="asymptotic").pvalue)
    assert math.isnan(stats.mann_whitney([], [1.0]).p)


def test_holm_and_fdr_adjust_for_many_cases() -> None:
    p = [0.01, 0.04, 0.03, 0.005, float("nan")]
    # Holm: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 → monotone 0.06
    assert stats.holm(p)[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert math.isnan(stats.holm(p)[4])
    assert stats.fdr(p)[:4] == pytest.approx(st.false_discovery_control(p[:4]))
    assert stats.holm([0.5, 0.9]).max() <= 1.0


def _runs(rng: np.random.Generator, cases: int, trials: int, sigma: float) -> list[np.ndarray]:
    """Per-trial ratios of `cases` cases whose true ratios differ, each trial off by lognormal noise."""
    true = np.exp(np.linspace(-1, 1, cases))
    return [t * np.exp(rng.normal(0, sigma, trials)) for t in true]


def test_next_run_intervals_hold_the_next_runs_ratio_as_often_as_they_say() -> None:
    rng = np.random.default_rng(3)
    held, held_by_bootstrap = [], []
    for _ in range(40):  # 40 pairs of runs of 50 cases with 2 trials each, noise 15 % per trial
        this, nxt = _runs(rng, 50, 2, 0.15), _runs(rng, 50, 2, 0.15)
        nxt_ratios = [float(np.exp(np.log(n).mean())) for n in nxt]
        held += [ci.contains(r) for ci, r in zip(stats.next_run_intervals(this), nxt_ratios)]
        held_by_bootstrap += [stats.median_interval(t).contains(r) for t, r in zip(this[:10], nxt_ratios)]
    assert 0.93 <= np.mean(held) <= 0.97
    # a bootstrap over one run's own trials sees that run's noise only, and holds the next run far less often
    assert np.mean(held_by_bootstrap) < 0.8


def test_next_run_intervals_estimate_pools_and_edges() -> None:
    cis = stats.next_run_intervals([[2.0, 8.0], [1.0, 1.0], [3.0]], pools=["a", "a", "a"])
    assert cis[0].estimate == pytest.approx(4.0)  # the geometric mean of the trials
    assert cis[1].estimate == 1.0 and cis[1].low < 1.0 < cis[1].high  # a still case borrows the pool's spread
    assert cis[2].estimate == pytest.approx(3.0) and cis[2].known  # so does a case with one trial, wider
    assert cis[2].half_width > cis[1].half_width
    # pools keep their own spread: a quiet pool is not widened by a noisy one
    quiet, noisy = stats.next_run_intervals([[1.0, 1.01], [1.0, 3.0]], pools=["q", "n"])
    assert quiet.half_width < 0.2 < noisy.half_width
    lone = stats.next_run_intervals([[2.0], [0.0, -1.0, math.nan]])
    assert lone[0].estimate == pytest.approx(2.0) and not lone[0].known  # no pool has a second trial
    assert math.isnan(lone[1].estimate)
    with pytest.raises(ValueError):
        stats.next_run_intervals([[1.0]], pools=["a", "b"])


def test_paired_ratio_is_the_geometric_mean_with_t_intervals_on_log_ratios() -> None:
    """Worked by hand: ratios 1.1 and 1.2 over two rounds, one pool with one pair."""
    (pr,) = stats.paired_ratios([[1.1, 1.2]])
    logs = np.log([1.1, 1.2])
    s = float(np.std(logs, ddof=1))
    assert pr.estimate == pytest.approx(math.exp(logs.mean()))
    half = st.t.ppf(0.975, 1) * s / math.sqrt(2)
    assert (pr.confidence.low, pr.confidence.high) == pytest.approx(
        (pr.estimate * math.exp(-half), pr.estimate * math.exp(half))
    )
    assert pr.next_run.high == pytest.approx(pr.estimate * math.exp(st.t.ppf(0.975, 1) * s))  # √(2/n) = 1
    assert pr.confidence.high < pr.next_run.high
    assert pr.rounds == 2 and pr.pooled and pr.spread == pytest.approx(s)


def test_three_verdicts() -> None:
    """A pair 10 % slower in every round (±1 %) is slower, and its next run's interval says so too;
    one within ±1 % of 1 is equivalent (its confidence interval inside the margin); one that swings
    ±30 % is undecided; the mirror of slower is faster."""
    rng = np.random.default_rng(5)
    steady = [1.10 * math.exp(e) for e in rng.normal(0, 0.01, 4)]
    same = [math.exp(e) for e in rng.normal(0, 0.01, 4)]
    wild = [1.3, 0.75, 1.25, 0.8]
    slower, equal = stats.paired_ratios([steady, same])
    assert slower.verdict == stats.SLOWER and slower.next_run.low > 1
    assert equal.verdict == stats.EQUIVALENT
    lo, hi = stats.equivalence_bounds()
    assert lo <= equal.confidence.low and equal.confidence.high <= hi
    (undecided,) = stats.paired_ratios([wild])
    assert undecided.verdict == stats.UNDECIDED
    (faster,) = stats.paired_ratios([[1 / r for r in steady]])
    assert faster.verdict == stats.FASTER
    # the margin is a setting: the same 10 % pair is within a 20 % margin only if not shown slower
    (wide,) = stats.paired_ratios([same], margin=0.001)
    assert wide.verdict == stats.UNDECIDED
    with pytest.raises(ValueError):
        stats.equivalence_bounds(0.0)


def test_few_rounds_borrow_the_groups_spread_and_many_use_their_own() -> None:
    """Two rounds give one degree of freedom alone (t = 12.7); pooled over the group's pairs the
    same pair is decided. From OWN_SPREAD_ROUNDS rounds a pair's own spread is used, so one noisy
    pair is not made to look tight by quiet neighbours."""
    quiet = [[1.0, 1.01], [1.2, 1.21], [0.9, 0.905], [1.5, 1.49]]
    (alone,) = stats.paired_ratios([[1.12, 1.13]])
    pooled = stats.paired_ratios([[1.12, 1.13], *quiet], ["g"] * 5)[0]
    assert pooled.confidence.high - pooled.confidence.low < alone.confidence.high - alone.confidence.low
    n = stats.OWN_SPREAD_ROUNDS
    noisy = [1.0, 1.4] * (n // 2)
    own = stats.paired_ratios([noisy, *[[1.0] * n] * 4], ["g"] * 5)[0]
    (by_itself,) = stats.paired_ratios([noisy])
    assert not own.pooled and own.confidence == by_itself.confidence


def test_the_verdicts_are_right_as_often_as_they_say() -> None:
    """Simulated runs of 4 rounds, 8 pairs a group, a 5 % lognormal spread per round: a true 1.0 is
    called slower or faster in well under α of pairs (the next run's interval must agree) and
    equivalent in most; a true 1.10 is called slower in most (measured 78 %), and in nearly all with
    8 rounds (96 %).
    (With a 10 % spread 4 rounds call a true 1.0 equivalent in only a few pairs: the spread, not
    the rule, decides.)"""
    rng = np.random.default_rng(11)
    runs = 300
    for rounds, least_found in ((4, 0.7), (8, 0.9)):
        false_verdicts = equivalent = found = 0
        for _ in range(runs):
            ratios = [np.exp(rng.normal(0, 0.05, rounds)) for _ in range(7)]
            ratios.append(1.10 * np.exp(rng.normal(0, 0.05, rounds)))
            v = [p.verdict for p in stats.paired_ratios(ratios)]
            false_verdicts += sum(x in (stats.SLOWER, stats.FASTER) for x in v[:7])
            equivalent += sum(x == stats.EQUIVALENT for x in v[:7])
            found += v[7] == stats.SLOWER
        assert false_verdicts / (7 * runs) <= 0.01, rounds
        assert equivalent / (7 * runs) >= 0.85, rounds
        assert found / runs >= least_found, rounds


def _looked_at_after_every_round(
    true_ratio: float, rng: np.random.Generator, first: int = 8, cap: int = 40
) -> tuple[str, int]:
    """One pair as a run with a budget decides it: `first` rounds, then one more round at a time
    while undecided, up to `cap` (bench/rounds.py), with a 9 % spread per round (the A/A pair of
    tests/e2e/test_decide_runs.py measured 0.091 over 61 rounds)."""
    logs = list(rng.normal(math.log(true_ratio), 0.09, first))
    while True:
        (pr,) = stats.paired_ratios([np.exp(logs)])
        if pr.verdict != stats.UNDECIDED or len(logs) >= cap:
            return pr.verdict, len(logs)
        logs.append(rng.normal(math.log(true_ratio), 0.09))


def test_looking_again_after_every_round_keeps_the_verdicts_errors_near_alpha() -> None:
    """A run looks at an undecided pair after every extra round, and every look may err. Decided by
    the 95 % confidence interval (slower) and a 90 % one (equivalent), 7.6 % of A/A pairs ended
    slower or faster (4,000 runs); with slower waiting for the next run's interval, an A/A pair ends
    slower or faster in about 3 % of runs, a true 1.10 (on the margin) is called equivalent in about
    6 %, and a true 1.20 is always slower, nearly always at the first look."""
    rng = np.random.default_rng(3)
    aa = [_looked_at_after_every_round(1.0, rng) for _ in range(400)]
    assert sum(v in (stats.SLOWER, stats.FASTER) for v, _ in aa) / len(aa) <= 0.05
    assert sum(v == stats.EQUIVALENT for v, _ in aa) / len(aa) >= 0.93
    assert np.mean([n for _, n in aa]) <= 11  # a few rounds past the first look on average
    edge = [_looked_at_after_every_round(1.10, rng)[0] for _ in range(200)]
    assert sum(v == stats.EQUIVALENT for v in edge) / len(edge) <= 0.10
    slowed = [_looked_at_after_every_round(1.20, rng) for _ in range(100)]
    assert all(v == stats.SLOWER for v, _ in slowed) and np.mean([n for _, n in slowed]) <= 8.5


def test_a_pair_noisier_than_its_pool_keeps_its_own_spread() -> None:
    """A real A/A pair (the same reader twice, 8 rounds) pooled with a steady slowed pair: the pool's
    spread (0.096) is narrower than the A/A pair's own (0.127), and with it the pair came out slower
    at 1.09x [1.01, 1.17]. With its own spread it is undecided (more rounds decide it); the steady
    pair keeps the pooled spread and stays slower. Before OWN_SPREAD_FLOOR_ROUNDS nothing changes."""
    twin = [0.995, 1.036, 1.071, 1.234, 1.181, 0.862, 1.134, 1.269]
    slowed = [1.261, 1.427, 1.418, 1.436, 1.494, 1.379, 1.403, 1.419]
    aa, slow = stats.paired_ratios([twin, slowed])
    assert aa.verdict == stats.UNDECIDED and not aa.pooled and aa.confidence.low < 1 < aa.confidence.high
    assert aa.spread == pytest.approx(np.std(np.log(twin), ddof=1))
    assert slow.verdict == stats.SLOWER and slow.pooled and slow.spread > np.std(np.log(slowed), ddof=1)
    few, _ = stats.paired_ratios([twin[:4], slowed[:4]])
    assert few.pooled

"""The statistics every published number rests on, one function per statistic, from scipy.stats.

The decision table, the findings, `shotbench compare` and the stopping rule of a run all call
these, so a "95 % interval" or a "tie" means the same everywhere. Bootstrap intervals are BCa
(bias-corrected and accelerated: better coverage than the percentile interval on the skewed
runtimes benchmarks produce); each call seeds its own generator, so a table is the same every
time it is computed, whatever order its cells are computed in.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as st

LEVEL = 0.95
RESAMPLES = 2000
SEED = 0


@dataclass(frozen=True)
class Interval:
    """A point estimate and its confidence interval (NaN bounds: too few values for one)."""

    estimate: float
    low: float
    high: float
    level: float = LEVEL

    @property
    def known(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))

    def contains(self, value: float) -> bool:
        """True when `value` is inside; an unknown interval contains nothing."""
        return self.known and self.low <= value <= self.high

    def overlaps(self, other: Interval) -> bool:
        return self.known and other.known and self.low <= other.high and other.low <= self.high

    @property
    def half_width(self) -> float:
        """The interval's larger distance from the estimate, as a fraction of it (0.05: ±5 %)."""
        if not self.known or self.estimate == 0:
            return math.nan
        return max(self.high - self.estimate, self.estimate - self.low) / abs(self.estimate)


@dataclass(frozen=True)
class Test:
    """A two-sided Mann-Whitney U test of x against y."""

    u: float  # U of x
    p: float


def _values(x: Sequence[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a[~np.isnan(a)]


def _median(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(samples[0], axis=axis)


def _ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(x, axis=axis) / np.median(y, axis=axis)


def _bootstrap(
    samples: tuple[np.ndarray, ...], statistic, estimate: float, level: float, n_resamples: int, seed: int
) -> Interval:
    """BCa interval; the percentile interval where BCa is undefined (e.g. every jackknife median
    equal); a zero-width interval when every resample gives the same value."""
    if all(np.all(s == s[0]) for s in samples):
        return Interval(estimate, estimate, estimate, level)
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = st.bootstrap(
                samples,
                statistic,
                n_resamples=n_resamples,
                vectorized=True,
                confidence_level=level,
                method=method,
                rng=np.random.default_rng(seed),
            )
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if not (math.isnan(lo) or math.isnan(hi)):
            return Interval(estimate, lo, hi, level)
    return Interval(estimate, math.nan, math.nan, level)


def median_interval(
    values: Sequence[float] | np.ndarray, level: float = LEVEL, n_resamples: int = RESAMPLES, seed: int = SEED
) -> Interval:
    """The median with a BCa bootstrap interval; NaN bounds with fewer than two values."""
    x = _values(values)
    if len(x) == 0:
        return Interval(math.nan, math.nan, math.nan, level)
    est = float(np.median(x))
    if len(x) < 2:
        return Interval(est, math.nan, math.nan, level)
    return _bootstrap((x,), _median, est, level, n_resamples, seed)


def ratio_interval(
    num: Sequence[float] | np.ndarray,
    den: Sequence[float] | np.ndarray,
    level: float = LEVEL,
    n_resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval:
    """median(num) ÷ median(den) with a BCa bootstrap interval, resampling the two independent
    samples separately; NaN bounds unless each has two values."""
    x, y = _values(num), _values(den)
    if len(x) == 0 or len(y) == 0 or np.median(y) == 0:
        return Interval(math.nan, math.nan, math.nan, level)
    est = float(np.median(x) / np.median(y))
    if len(x) < 2 or len(y) < 2:
        return Interval(est, math.nan, math.nan, level)
    return _bootstrap((x, y), _ratio, est, level, n_resamples, seed)


def clustered_ratio_interval(
    num_runs: Sequence[Sequence[float] | np.ndarray],
    den_runs: Sequence[Sequence[float] | np.ndarray],
    level: float = LEVEL,
    n_resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval:
    """median(num) ÷ median(den) over the values of several runs a side, with a percentile interval
    that resamples each side's runs, then the values within each run drawn.

    The values of one run share its state (the machine's minute, the server, the connections), so
    resampling them as independent leaves the run-to-run spread out of the interval: an A/A pair of
    three runs a side, two of one side's made in a slow minute, was called 1.41x slower [1.02, 1.95]
    that way. Percentile, not BCa: BCa's jackknife has no two-stage form here. With one run a side
    this is `ratio_interval`."""
    xs = [v for v in (_values(r) for r in num_runs) if len(v)]
    ys = [v for v in (_values(r) for r in den_runs) if len(v)]
    if not xs or not ys:
        return Interval(math.nan, math.nan, math.nan, level)
    if len(xs) == 1 and len(ys) == 1:
        return ratio_interval(xs[0], ys[0], level, n_resamples, seed)
    x, y = np.concatenate(xs), np.concatenate(ys)
    if np.median(y) == 0:
        return Interval(math.nan, math.nan, math.nan, level)
    est = float(np.median(x) / np.median(y))
    rng = np.random.default_rng(seed)
    num, den = _two_stage_medians(xs, n_resamples, rng), _two_stage_medians(ys, n_resamples, rng)
    ratios = num[den > 0] / den[den > 0]
    if len(ratios) < 2:
        return Interval(est, math.nan, math.nan, level)
    lo, hi = np.quantile(ratios, [(1 - level) / 2, (1 + level) / 2])
    return Interval(est, float(lo), float(hi), level)


def _two_stage_medians(runs: list[np.ndarray], n: int, rng: np.random.Generator, block: int = 256) -> np.ndarray:
    """`n` bootstrap medians of the pooled runs: each resample draws as many runs as there are, with
    replacement, and from each drawn run as many values as it holds, with replacement."""
    sizes = np.array([len(r) for r in runs])
    table = np.full((len(runs), int(sizes.max())), np.nan)
    for i, r in enumerate(runs):
        table[i, : len(r)] = r
    slots = np.arange(table.shape[1])
    out = np.empty(n)
    for start in range(0, n, block):  # in blocks: a run of thousands of tasks stays within memory
        m = min(block, n - start)
        picked = rng.integers(0, len(runs), size=(m, len(runs)))
        size = sizes[picked][..., None]
        drawn = (rng.random((m, len(runs), table.shape[1])) * size).astype(int)
        values = table[picked[..., None], drawn]
        values[np.broadcast_to(slots >= size, values.shape)] = np.nan  # a run gives as many values as it has
        out[start : start + m] = np.nanmedian(values.reshape(m, -1), axis=1)
    return out


def paired_ratio_interval(
    num: Sequence[float] | np.ndarray,
    den: Sequence[float] | np.ndarray,
    level: float = LEVEL,
    n_resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval:
    """The median of num[i] ÷ den[i] with a BCa bootstrap interval over the pairs.

    For samples measured in blocks (trial i of both in the same interleaved round): a drift that
    moves a whole round (the first round slower, the machine busier) divides out of each pair."""
    x, y = _values(num), _values(den)
    if len(x) != len(y):
        raise ValueError(f"paired samples need equal lengths, not {len(x)} and {len(y)}")
    keep = y != 0
    return median_interval(x[keep] / y[keep], level, n_resamples, seed)


MARGIN = 0.10  # the equivalence margin: within ±10 % (ratio in [1/1.1, 1.1]) is "the same speed"
ALPHA = 0.05  # 95 % intervals: the next-run interval for slower or faster, the confidence interval for equivalent
# A run looks at each undecided pair again after every extra round (bench/rounds.py), and every look may
# call an A/A pair slower by chance: with 95 % confidence intervals deciding slower and 90 % ones deciding
# equivalent, 7.6 % of simulated A/A pairs ended slower or faster over a run's looks (5 % at one look), and
# a true 1.10x pair ended equivalent in 6.3 %. A verdict that the next run would reverse does not decide, so
# slower and faster wait until the next run's interval agrees; the looks' errors then fall to 2.6 % and 5.7 %
# (tests/unit/test_stats.py simulates the looks; docs/guides/decisions.md).
OWN_SPREAD_ROUNDS = 10  # from this many rounds a pair's own spread is used, below it the pool's (more power)
# From this many rounds a pair's own spread is informative enough to show that the pair is noisier than
# its pool; then the wider of the two is used. A pool that mixes a noisy pair with a steady one otherwise
# narrows the noisy pair's interval: an A/A pair with 8 rounds (own spread 0.127 beside a pool of 0.096)
# was called slower at 1.09x [1.01, 1.17] (tests/unit/test_stats.py holds that case).
OWN_SPREAD_FLOOR_ROUNDS = 5
FASTER, SLOWER, EQUIVALENT, UNDECIDED = "faster", "slower", "equivalent", "undecided"
VERDICTS = (FASTER, SLOWER, EQUIVALENT, UNDECIDED)


def equivalence_bounds(margin: float = MARGIN) -> tuple[float, float]:
    """The ratios a pair must stay within to be equivalent: [1/(1+m), 1+m], symmetric in log."""
    if not margin > 0:
        raise ValueError(f"the equivalence margin must be above 0, not {margin}")
    return 1 / (1 + margin), 1 + margin


def verdict_of(shown: Interval, within: Interval, margin: float = MARGIN) -> str:
    """The one rule for the three verdicts of a ratio x ÷ y (and its mirror, faster).

    slower: `shown` lies above 1; faster: below 1; equivalent: `within` lies inside the margin;
    undecided otherwise. A paired ratio passes its next-run interval as `shown` (the run shows the
    difference and another run of as many rounds would too) and its confidence interval as
    `within`; two sets of runs, which share no round and are looked at once, pass their 95 %
    bootstrap interval as both. A difference inside the margin that `shown` does show is still
    reported as slower or faster: the margin says what is too small to matter, not what to hide."""
    if shown.known and shown.low > 1:
        return SLOWER
    if shown.known and shown.high < 1:
        return FASTER
    lo, hi = equivalence_bounds(margin)
    if within.known and lo <= within.low and within.high <= hi:
        return EQUIVALENT
    return UNDECIDED


@dataclass(frozen=True)
class PairedRatio:
    """x ÷ y from rounds that measured both side by side: the answer to "is x slower than y".

    `confidence` is the (1−α) confidence interval for the true ratio (equivalent when it lies inside
    the margin), `next_run` the (1−α) prediction interval for the ratio another run with as many
    rounds will give (slower or faster when it lies beyond 1; what `shotbench repeat` scores)."""

    estimate: float  # geometric mean of the per-round ratios
    confidence: Interval
    next_run: Interval
    rounds: int
    margin: float = MARGIN
    pooled: bool = True  # the spread is the pool's (too few rounds of its own)
    spread: float = math.nan  # s: the standard deviation of one round's log ratio (0.05: about ±5 % a round)

    @property
    def verdict(self) -> str:
        return verdict_of(self.next_run, self.confidence, self.margin)


def _logs(values: Sequence[float] | np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    return np.log(v[np.isfinite(v) & (v > 0)])


def _log_interval(estimate: float, half: float, level: float) -> Interval:
    """estimate × e^(±half): an interval symmetric in log ratio."""
    return Interval(estimate, estimate * math.exp(-half), estimate * math.exp(half), level)


def paired_ratios(
    per_round: Sequence[Sequence[float] | np.ndarray],
    pools: Sequence[Hashable] | None = None,
    alpha: float = ALPHA,
    margin: float = MARGIN,
) -> list[PairedRatio]:
    """Each pair's ratio x_r ÷ y_r over the rounds r that measured both, with its three intervals.

    `per_round[i]` holds pair i's ratios, one per interleaved round: a round that ran slow for
    everyone (the first on a fresh server ran 20–45 % slower for every backend) divides out of
    each. The estimate is the geometric mean; the intervals are t intervals on the log ratios.
    A default run has few rounds (2–4): too few for a spread of its own (t with 1 degree of freedom
    is 12.7), so below OWN_SPREAD_ROUNDS the spread of log ratios about their pair's mean is pooled
    over the pairs of one pool (`pools[i]`, one (mode, workers) group; one pool when None), which
    ran in the same rounds. From OWN_SPREAD_FLOOR_ROUNDS a pair whose own spread is the wider one
    keeps its own: pooling buys power, never a narrower interval for a pair noisier than the rest.
    Confidence: log mean ± t(1−α/2, df)·s/√n; next run (another n rounds): ± t(1−α/2, df)·s·√(2/n).
    NaN bounds where there is no spread.
    """
    logs = [_logs(v) for v in per_round]
    labels = list(pools) if pools is not None else [0] * len(logs)
    if len(labels) != len(logs):
        raise ValueError(f"{len(logs)} pairs but {len(labels)} pool labels")
    owns = [(float(np.sum((x - x.mean()) ** 2)), len(x) - 1) if len(x) > 1 else (0.0, 0) for x in logs]
    spread: dict[Hashable, tuple[float, int]] = {}
    for key, (own_ss, own_df) in zip(labels, owns):
        ss, df = spread.get(key, (0.0, 0))
        spread[key] = (ss + own_ss, df + own_df)
    level = 1 - alpha
    out = []
    for key, x, (own_ss, own_df) in zip(labels, logs, owns):
        nan = Interval(math.nan, math.nan, math.nan, level)
        if len(x) == 0:
            out.append(PairedRatio(math.nan, nan, nan, 0, margin))
            continue
        est = float(np.exp(x.mean()))
        pool_ss, pool_df = spread[key]
        own = len(x) >= OWN_SPREAD_ROUNDS or (  # or noisier than its pool: the pool must not narrow its interval
            len(x) >= OWN_SPREAD_FLOOR_ROUNDS and pool_df > 0 and own_ss / own_df > pool_ss / pool_df
        )
        ss, df = (own_ss, own_df) if own else (pool_ss, pool_df)
        if df == 0:
            unknown = Interval(est, math.nan, math.nan, level)
            out.append(PairedRatio(est, unknown, unknown, len(x), margin, not own, math.nan))
            continue
        s, n = math.sqrt(ss / df), len(x)
        out.append(
            PairedRatio(
                est,
                _log_interval(est, float(st.t.ppf(1 - alpha / 2, df)) * s / math.sqrt(n), level),
                _log_interval(est, float(st.t.ppf(1 - alpha / 2, df)) * s * math.sqrt(2 / n), level),
                n,
                margin,
                not own,
                s,
            )
        )
    return out


def next_run_intervals(
    per_trial: Sequence[Sequence[float] | np.ndarray],
    pools: Sequence[Hashable] | None = None,
    level: float = LEVEL,
) -> list[Interval]:
    """Each case's ratio with an interval meant to hold the ratio the next run of it will give.

    `per_trial[i]` holds case i's ratios, one per trial, each taken against its baseline in the
    same interleaved round. The estimate is their geometric mean. A run has few trials of a case
    (2 by default): too few for a spread of its own, and a bootstrap over the tasks of those
    trials describes one run's tasks, not how far the next run lands (measured: such intervals
    held the other runs' ratios 57–61 % of the time). So the spread of log ratios between trials
    is pooled over the cases of one pool (`pools[i]`; one pool when None), whose trials ran in
    the same rounds, and the interval is a t prediction interval for another run with as many
    trials: log estimate ± t(df) · s · √(2/n). NaN bounds where a pool has no second trial.
    From OWN_SPREAD_ROUNDS trials a case's own spread is used (paired_ratios, whose `next_run` this is).
    """
    return [p.next_run for p in paired_ratios(per_trial, pools, alpha=1 - level)]


def mann_whitney(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> Test:
    """Two-sided Mann-Whitney U test (scipy's method="auto": exact for small samples without
    ties, else the normal approximation with tie and continuity corrections)."""
    a, b = _values(x), _values(y)
    if len(a) == 0 or len(b) == 0:
        return Test(math.nan, math.nan)
    res = st.mannwhitneyu(a, b, alternative="two-sided", method="auto")
    return Test(float(res.statistic), float(res.pvalue))


def fdr(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false discovery rate); NaN stays NaN."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        out[ok] = st.false_discovery_control(p[ok], method="bh")
    return out


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (family-wise error rate); NaN stays NaN.

    scipy.stats has no Holm; this is its textbook step-down form: the k-th smallest of m p-values
    times (m − k + 1), made monotone, capped at 1.
    """
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    if len(idx) == 0:
        return out
    order = idx[np.argsort(p[idx], kind="stable")]
    m = len(order)
    adjusted = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out[order] = np.minimum(adjusted, 1.0)
    return out


ADJUSTMENTS = {"holm": holm, "fdr": fdr}  # keys: gate.ADJUSTMENT_NAMES

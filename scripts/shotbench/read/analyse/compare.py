"""The statistics of `shotbench compare A B`: did B get slower than A, case by case (as `asv compare`).

A and B are two run folders (matching cases: backend, mode, workers, page buffer), or two backends
of one run (`--run DIR`; matching: mode, workers, page buffer). Per case: median runtime ratio
B ÷ A with a bootstrap 95 % CI and a two-sided Mann-Whitney p-value over trials. `--threshold`
fails cases significantly slower than that ratio; `--limit-ratio K` fails cases of B slower than
K × the raw-GET time of the same bytes (the copy baseline).
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from shotbench.errors import UserError
from shotbench.read.analyse import analysis, decision

ALPHA = 0.05
EXACT_MAX = 400  # n1 × n2 up to which the exact null distribution of U is counted
CASE_KEYS = ["backend", "obj-type", "num-workers", "pb-size"]
COLUMNS = ["case", "n-a", "n-b", "median-a", "median-b", "ratio", "ci-low", "ci-high", "p-value", "copy-baseline",
           "vs-copy", "slower", "over-limit"]


@cache
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """Number of rank arrangements giving each U = 0..n1*n2 (no ties): the exact null distribution."""
    if n1 == 0 or n2 == 0:
        return (1,)
    a, b = _u_counts(n1 - 1, n2), _u_counts(n1, n2 - 1)
    out = [0] * (n1 * n2 + 1)
    for u, c in enumerate(a):  # the largest value belongs to x: it beats all n2 ys
        out[u + n2] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


def mann_whitney(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test of x against y: (U of x, p-value).

    Exact for small samples without ties; otherwise the normal approximation with tie and
    continuity corrections (what scipy.stats.mannwhitneyu does with method="auto").
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        return float("nan"), float("nan")
    both = np.concatenate([x, y])
    ranks = pd.Series(both).rank(method="average").to_numpy()
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    ties = len(np.unique(both)) < len(both)
    if not ties and n1 * n2 <= EXACT_MAX:
        counts = np.array(_u_counts(n1, n2), float)
        total = counts.sum()
        k = int(round(u))
        p = 2 * min(counts[: k + 1].sum(), counts[k:].sum()) / total
        return u, float(min(1.0, p))
    n = n1 + n2
    _, t = np.unique(both, return_counts=True)
    var = n1 * n2 / 12 * ((n + 1) - (t**3 - t).sum() / (n * (n - 1)))
    if var <= 0:
        return u, 1.0
    z = (abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(var)
    return u, float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


def cases(path: Path) -> pd.DataFrame:
    ds = analysis.load([f"{path.name}={path}"])
    c = decision.usable_cases(ds.cases).copy()
    c["total-runtime"] = pd.to_numeric(c["total-runtime"], errors="coerce")
    raw = pd.to_numeric(c["raw-get-runtime"], errors="coerce") if "raw-get-runtime" in c else pd.Series(np.nan, index=c.index)
    by_backend = c[c["backend"] == analysis.RAW_GET].groupby(["obj-type", "num-workers"])["total-runtime"].median()
    fallback = pd.Series(by_backend.reindex(pd.MultiIndex.from_frame(c[["obj-type", "num-workers"]])).to_numpy(), index=c.index)
    c["copy"] = raw.fillna(fallback)
    return c


def _name(key: tuple, keys: list[str]) -> str:
    parts = dict(zip(keys, key))
    w = int(parts["num-workers"])
    head = f"{parts['backend']} " if "backend" in parts else ""
    return f"{head}{parts['obj-type']} w{w} pb {analysis.pb_label(parts['pb-size'])}"


def compare(a: pd.DataFrame, b: pd.DataFrame, keys: list[str], threshold: float | None, limit: float | None,
            n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One row per case both sides ran; `slower` and `over-limit` say which fail the gates."""
    rng = np.random.default_rng(seed)
    ga = {k: g for k, g in a.groupby(keys, sort=False)}
    rows = []
    for key, gb in b.groupby(keys, sort=False):
        if key not in ga:
            continue
        ta, tb = ga[key]["total-runtime"].to_numpy(float), gb["total-runtime"].to_numpy(float)
        ratio = float(np.median(tb) / np.median(ta))
        lo, hi = analysis.bootstrap_ratio(tb, ta, n_boot, 0.95, rng)
        _, p = mann_whitney(tb, ta)
        copy = float(gb["copy"].median()) if gb["copy"].notna().any() else float("nan")
        vs_copy = float(np.median(tb)) / copy if copy > 0 else float("nan")
        slower = bool(threshold is not None and ratio >= threshold and lo > 1 and p < ALPHA)
        rows.append({
            "case": _name(key, keys), "n-a": len(ta), "n-b": len(tb), "median-a": float(np.median(ta)),
            "median-b": float(np.median(tb)), "ratio": ratio, "ci-low": lo, "ci-high": hi, "p-value": p,
            "copy-baseline": copy, "vs-copy": vs_copy, "slower": slower,
            "over-limit": bool(limit is not None and vs_copy > limit),
        })
    if not rows:
        raise UserError("The two sides share no case (backend, mode, workers, page buffer); compare runs of the same matrix.")
    return pd.DataFrame(rows, columns=COLUMNS)

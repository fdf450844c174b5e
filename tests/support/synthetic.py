"""Upstream-schema worker rows made up at scale, for the tests that check summaries stay vectorised."""

from __future__ import annotations

import numpy as np
import pandas as pd


def synthetic_workers(rows: int, seed: int = 0) -> pd.DataFrame:
    """Upstream-schema rows at scale, for measuring that summaries stay vectorised."""
    rng = np.random.default_rng(seed)
    workers = rng.choice([1, 2, 4, 8, 16, 32, 64], rows)
    mode = rng.choice(np.array(["shots", "signals"]), rows)
    pb = rng.choice([0, 268435456], rows)
    t = rng.gamma(2.0, 0.1, rows)
    runtime = (100.0 / workers + pb / 2**30).round(6)
    return pd.DataFrame(
        {
            "worker#": rng.integers(1, 65, rows),
            "obj-id": rng.integers(1_160_000_000, 1_161_000_000, rows),
            "open+read-data-time": t * 60,
            "wrkr-num-objs": 60,
            "mean-obj-time": t,
            "num-dsets": 120,
            "mean-dset-time": t / 2,
            "pb-size": pb,
            "num-workers": workers,
            "obj-type": mode,
            "tot-num-obj": np.where(mode == "shots", 500, 61),
            "total-runtime": runtime,
        }
    )

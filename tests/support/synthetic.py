"""Made-up data: upstream-schema worker rows at scale (summaries stay vectorised), case datasets from given times."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from shotbench.analyse import analysis


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


def case_dataset(times: dict[tuple[str, int], list[float]]) -> analysis.Dataset:
    """A run's cases made up: per (backend, workers), one `shots` case runtime per trial (trial k+1
    is the k-th value), each case one upstream row; what the decision table and its verdicts read."""
    rows = [
        [1, "o", t, 1, t, 1, t, 0, w, "shots", 1, t, name, k + 1]
        for (name, w), ts in times.items()
        for k, t in enumerate(ts)
    ]
    df = pd.DataFrame(rows, columns=[*analysis.UPSTREAM_COLUMNS, "backend", "trial"])
    return analysis._assemble(
        [analysis.Input("x", Path("<x>"), "run")],
        [df],
        [df[["backend", "obj-type", "pb-size", "num-workers", "trial", "total-runtime"]].copy()],
        [],
        {},
    )

"""The direction ablation's reduction: ratios with intervals, one knob at a time, and the verdict."""

from __future__ import annotations

import numpy as np
import pandas as pd

from shotbench.read import direction as d


def test_interval_is_other_over_reference_with_bootstrap_bounds() -> None:
    ratio, lo, hi = d.interval(np.array([2.0, 2.1, 1.9]), np.array([1.0, 1.1, 0.9]))
    assert ratio == 0.5 and lo <= 0.5 <= hi and hi < 1
    assert np.isnan(d.interval(np.array([2.0]), np.array([1.0]))[1])  # one trial: no interval


def _cell(**kw: object) -> dict:
    base = {
        "group": "base",
        "tls": True,
        "latency-ms": 0,
        "backend": "ros3-2.0",
        "obj-type": "signals",
        "pb-size": d.BASE_PB,
        "num-workers": d.BASE_WORKERS,
        "trials": 3,
        "runtime-s": 1.0,
        "ratio-vs-1.14": 1.0,
        "ci-low": 0.9,
        "ci-high": 1.1,
        "hdf5": "2.0.0",
        "gets-per-open": 2.0,
        "heads-per-open": 1.0,
        "MB-per-open": 16.0,
        "open-ms": 50.0,
        "read-ms": 5.0,
    }
    return {**base, **kw}


def test_a_knob_that_puts_the_ratio_on_both_sides_of_one_is_named() -> None:
    cells = pd.DataFrame(
        [
            _cell(**{"ratio-vs-1.14": 0.8, "ci-low": 0.75, "ci-high": 0.85}),  # https: 2.x faster
            _cell(group="http", tls=False, **{"ratio-vs-1.14": 1.3, "ci-low": 1.2, "ci-high": 1.4}),
            _cell(group="base", **{"pb-size": 0, "ratio-vs-1.14": 0.9, "ci-low": 0.8, "ci-high": 0.95}),
            _cell(group="http", tls=False, **{"pb-size": 0, "ratio-vs-1.14": 0.95, "ci-low": 0.9, "ci-high": 1.0}),
            _cell(backend="ros3-1.14", **{"ratio-vs-1.14": float("nan")}),  # the reference is no knob value
        ]
    )
    k = d.knob_table(cells)
    tls = k[k["knob"] == "https vs http"]
    assert set(tls["value"]) == {"https", "http"} and set(tls["page buffer"]) == {"pb 0", "pb 256 MiB"}
    found = {(v.knob, v.page_buffer): v for v in d.verdicts(k)}
    moved = found[("https vs http", "pb 256 MiB")]
    assert moved.crosses and moved.clear and moved.low == ("https", 0.8) and moved.high == ("http", 1.3)
    assert not found[("https vs http", "pb 0")].crosses  # both below 1 at pb 0
    assert found[("page buffer", "")].low[0] == "pb 256 MiB"

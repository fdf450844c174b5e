"""`shotbench repeat` scores how far each backend ÷ baseline ratio moves between runs and how often
one run's interval covers another run's ratio."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from shotbench.analyse import repeat


def _table(rows: list[tuple[str, str, float, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "run": run,
                "obj-type": "shots",
                "num-workers": 1,
                "pb-size": 0,
                "backend": b,
                "ratio": r,
                "ci-low": lo,
                "ci-high": hi,
                "half-width": max(hi - r, r - lo) / r,
                "samples": 10,
            }
            for run, b, r, lo, hi in rows
        ]
    )


def test_moves_and_coverage_are_counted_per_pair_of_runs() -> None:
    t = _table(
        [
            ("A", "x", 2.0, 1.85, 2.15),
            ("B", "x", 2.2, 2.1, 2.3),
            ("C", "x", 2.05, 1.95, 2.15),
            ("A", "y", 1.0, 0.99, 1.01),
            ("B", "y", 1.0, 0.99, 1.01),
            ("C", "y", 1.0, 0.98, 1.02),
        ]
    )
    cases, s = repeat.score(t)
    x = cases.set_index("backend").loc["x"]
    assert x["move"] == pytest.approx(0.1)  # 2.2 ÷ 2.0 − 1
    # A's [1.85, 2.15] holds C's 2.05, not B's 2.2; B's [2.1, 2.3] holds neither; C's [1.95, 2.15] holds A's 2.0
    assert (x["covered"], x["pairs"]) == (2, 6)
    assert (s.runs, s.cases) == (3, 2)
    assert s.move_median == pytest.approx(0.05)  # median of 10 % and 0 %
    assert s.coverage == pytest.approx((2 + 6) / 12)
    assert s.tight_share == pytest.approx(5 / 6)  # A's x interval is ±7.5 %; the others within ±5 %
    assert s.fastest_agree == 1.0  # y is the fastest in every run


def test_bad_input_is_one_sentence(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "shotbench.cli", "repeat", "--runs", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "is not a run folder" in done.stderr and "Traceback" not in done.stderr

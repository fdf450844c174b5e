"""`shotbench compare`: the statistics are right, and a slowed run fails the gate by name."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shotbench.read.analyse.compare import compare, mann_whitney
from shotbench.store.s3 import without_s3_settings


def test_mann_whitney_exact_matches_known_values() -> None:
    # fully separated samples: p = 2 / C(n1 + n2, n1)
    assert mann_whitney([1, 2, 3], [4, 5, 6]) == (0.0, pytest.approx(0.1))
    assert mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])[1] == pytest.approx(2 / 252)
    assert mann_whitney([6, 7, 8, 9, 10], [1, 2, 3, 4, 5]) == (25.0, pytest.approx(2 / 252))
    # U = 1 of 3 vs 3: P(U <= 1) = 2/20, two-sided 0.2
    assert mann_whitney([1, 2, 4], [3, 5, 6])[1] == pytest.approx(0.2)
    assert mann_whitney([1, 3, 5], [2, 4, 6])[1] == pytest.approx(0.7)


def test_mann_whitney_with_ties_uses_the_corrected_normal_approximation() -> None:
    u, p = mann_whitney([1, 1, 2, 2], [3, 3, 4, 4])
    var = 16 / 12 * (9 - 4 * (2**3 - 2) / (8 * 7))
    assert u == 0 and p == pytest.approx(math.erfc((8 - 0.5) / math.sqrt(var) / math.sqrt(2)))


def test_exact_and_approximate_p_agree_on_larger_samples() -> None:
    rng = np.random.default_rng(3)
    x, y = rng.normal(0, 1, 15), rng.normal(0.8, 1, 15)
    exact = mann_whitney(x, y)[1]
    n = 30
    u = mann_whitney(x, y)[0]
    approx = math.erfc((abs(u - 112.5) - 0.5) / math.sqrt(225 * (n + 1) / 12) / math.sqrt(2))
    assert abs(exact - approx) < 0.01


def _side(times: dict[str, list[float]], copy: float = 0.1) -> pd.DataFrame:
    return pd.DataFrame([{"backend": b, "obj-type": "shots", "num-workers": 1, "pb-size": 0, "total-runtime": t, "copy": copy}
                         for b, ts in times.items() for t in ts])


def test_only_significant_slowdowns_fail() -> None:
    a = _side({"x": [1.0, 1.1, 0.9, 1.05, 0.95, 1.02], "y": [1.0, 1.2, 0.8, 1.1, 0.9, 1.0]})
    b = _side({"x": [1.5, 1.6, 1.4, 1.55, 1.45, 1.52], "y": [1.3, 0.8, 1.0, 1.25, 0.9, 1.1]})
    t = compare(a, b, ["backend", "obj-type", "num-workers", "pb-size"], threshold=1.10, limit=12.0).set_index("case")
    assert t.loc["x shots w1 pb off", "slower"] and not t.loc["y shots w1 pb off", "slower"]
    assert t.loc["x shots w1 pb off", "p-value"] == pytest.approx(2 / 924)
    assert t.loc["x shots w1 pb off", "over-limit"]  # 1.5 s against a 0.1 s copy: 15× > 12×
    assert not t.loc["y shots w1 pb off", "over-limit"]


# --- real runs: the embedded S3 server, Dask workers, toxiproxy for the slowed one ------------

TINY = "file_size = 2000000\npage_size = 1000000\nsignals = 12\n"


def _bench(tmp: Path, *extra: str) -> Path:
    env = without_s3_settings()
    env["SHOTBENCH_STATE"] = str(tmp / "state")
    (tmp / "tiny.toml").write_text(TINY)
    before = set((tmp / "runs").glob("*")) if (tmp / "runs").exists() else set()
    done = subprocess.run(
        [sys.executable, "-m", "shotbench.cli", "bench", "--runs-dir", str(tmp / "runs"), "--config", str(tmp / "tiny.toml"),
         "--shots-dir", str(tmp / "shots"), "--backends", "fsspec", "raw-get", "--modes", "shots", "--workers", "1",
         "--page-buffers", "0", "--trials", "6", "--shots", "2", *extra],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (new,) = set((tmp / "runs").glob("*")) - before
    return new


def _compare(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shotbench.cli", "compare", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_compare_two_runs_passes_and_a_slowed_run_fails_by_name(tmp_path: Path) -> None:
    a, again = _bench(tmp_path), _bench(tmp_path)
    slowed = _bench(tmp_path, "--network", "s3-same-region")  # ~20 ms more per request
    same = _compare(str(a), str(again), "--threshold", "1.5", "--output", str(tmp_path / "same"))
    assert same.returncode == 0, same.stdout + same.stderr
    table = pd.read_csv(tmp_path / "same" / "compare.csv")
    assert set(table["case"]) == {"fsspec shots w1 pb off", "raw-get shots w1 pb off"}
    assert (tmp_path / "same" / "compare.html").stat().st_size > 10_000
    slow = _compare(str(a), str(slowed), "--threshold", "1.5", "--output", str(tmp_path / "slow"))
    assert slow.returncode == 1, slow.stdout + slow.stderr
    assert "FAIL raw-get shots w1 pb off" in slow.stdout

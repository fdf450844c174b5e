"""`shotbench compare` on two real runs: it passes, and a run slowed by toxiproxy fails by name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shotbench.bench import pools
from shotbench.store.s3 import without_s3_settings
from support.clusterhosts import local_scheduler, wait_for_pools

# What is compared is the gate, not what every run does first: the byte check is off and the nine
# runs share one Dask worker (`--scheduler`, as a user's runs share their cluster). A run then took
# 3.6-4.4 s, where one with its own cluster and the byte check took 6.3-7.9 s, and the test 50-51 s
# against 65-73 s (2026-12-04, alternating).
TINY = "file_size = 2000000\npage_size = 1000000\nsignals = 12\nreadcheck = false\n"


def _bench(tmp: Path, scheduler: str, *extra: str) -> Path:
    """A run of seconds: fsspec (through the server) and local (from disk), signals mode, one
    worker, one trial: 12 task samples a case."""
    env = without_s3_settings()
    env["SHOTBENCH_STATE"] = str(tmp / "state")
    (tmp / "tiny.toml").write_text(TINY)
    before = set((tmp / "runs").glob("*")) if (tmp / "runs").exists() else set()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "shotbench.cli",
            "bench",
            "--runs-dir",
            str(tmp / "runs"),
            "--config",
            str(tmp / "tiny.toml"),
            "--shots-dir",
            str(tmp / "shots"),
            "--backends",
            "fsspec",
            "local",
            "--modes",
            "signals",
            "--workers",
            "1",
            "--page-buffers",
            "0",
            "--trials",
            "1",
            "--shots",
            "2",
            "--no-tls",  # what is compared is the gate, not TLS: plain http is cheaper and steadier
            "--scheduler",
            scheduler,
            *extra,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (new,) = set((tmp / "runs").glob("*")) - before
    return new


def _compare(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "shotbench.cli", "compare", *args], capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
@pytest.mark.alone
def test_compare_two_runs_passes_and_a_slowed_run_fails_by_name(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """At the default gate (10 %, Holm): A against A' flags nothing; a run whose S3 path has the
    same-region latency profile (fsspec slowed, local untouched) fails and names fsspec alone.

    Each side is three one-trial runs made in turn (the three in a seeded order each round): on a busy
    2-core machine two runs made a minute apart differed by 1.4× for local and 2–3× for fsspec,
    which no statistic over one run's tasks can tell from a regression; made in turn, that drift
    falls on every side alike."""
    procs, scheduler = local_scheduler(request, tmp_path / "cluster")
    procs.start(pools.worker_command(sys.executable, scheduler, "main"), "worker")  # fsspec's and local's pool
    wait_for_pools(scheduler, {"main": 1})
    sides: dict[str, list[Path]] = {"a": [], "again": [], "slowed": []}
    extra = {"a": (), "again": (), "slowed": ("--network", "s3-same-region")}  # ~20 ms more per request
    rng = np.random.default_rng(25)
    for _ in range(3):  # each round in its own order, so no side is always first after a pause
        for name in rng.permutation(list(sides)):
            sides[name].append(_bench(tmp_path, scheduler, *extra[name]))
    a, again, slowed = sides["a"], sides["again"], sides["slowed"]
    side = lambda runs: ",".join(str(r) for r in runs)  # noqa: E731
    same = _compare(side(a), side(again), "--output", str(tmp_path / "same"))
    assert same.returncode == 0, same.stdout + same.stderr
    table = pd.read_csv(tmp_path / "same" / "compare.csv")
    assert set(table["case"]) == {"fsspec signals w1 pb off", "local signals w1 pb off"}
    assert (table["unit"] == "task").all() and (table["n-a"] == 36).all()
    assert (tmp_path / "same" / "compare.html").stat().st_size > 10_000
    slow = _compare(side(a), side(slowed), "--output", str(tmp_path / "slow"))
    assert slow.returncode == 1, slow.stdout + slow.stderr
    assert "FAIL fsspec signals w1 pb off" in slow.stdout
    flagged = pd.read_csv(tmp_path / "slow" / "compare.csv").set_index("case")
    assert flagged.loc["fsspec signals w1 pb off", "ratio"] >= 1.15
    # local does not go through the proxy, but it shares the one Dask worker with fsspec: in one
    # clean-clone CI run its tasks were 1.35× slower in the slowed runs (interval 1.02–1.79) and the
    # gate rightly flagged that too. What must hold is that the slowed path stands out.
    local = flagged.loc["local signals w1 pb off", "ratio"]
    assert flagged.loc["fsspec signals w1 pb off", "ratio"] > 1.5 * local, slow.stdout

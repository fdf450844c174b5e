"""Launching `shotbench bench` as a user does, and the one-sentence refusal it must give."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from shotbench.backends import registry
from shotbench.store.s3 import without_s3_settings

# A run small enough for a test: four 2 MB shot files, one and two workers, one trial.

TINY = """
shots = 4
signals = 12
file_size = 2000000
page_size = 1000000
signals_files = 3
page_buffers = [0]
workers = [1, 2]
trials = 1
shots_files = 1
budget_minutes = 0
backends = {backends}
"""


def state_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a bench run whose state lives under `tmp_path`, with no S3 settings of the caller."""
    env = without_s3_settings()
    env["SHOTBENCH_STATE"] = str(tmp_path / "state")
    return env


def bench_env(state: Path) -> dict[str, str]:
    env = without_s3_settings()
    env["SHOTBENCH_STATE"] = str(state)
    return env


def bench_cmd(config: Path, shots: Path, runs: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "shotbench.cli",
        "bench",
        "--config",
        str(config),
        "--shots-dir",
        str(shots),
        "--runs-dir",
        str(runs),
        *extra,
    ]


def run_bench(
    args: list[str], tmp_path: Path, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = without_s3_settings()
    env["SHOTBENCH_STATE"] = str(tmp_path / "state")
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "shotbench.cli", "bench", "--runs-dir", str(tmp_path / "runs"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def refuse(
    args: list[str], tmp_path: Path, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`shotbench bench --runs-dir tmp_path/runs ARGS` called in this process, as `run_bench` runs
    it in another: the same environment (no S3 settings of the caller, state under tmp_path), exit
    code and stderr. For refusals, which are decided before any process or server starts, so the
    process boundary is not what such a test tests; a traceback fails the test as an exception."""
    import contextlib
    import io
    import os
    import signal

    from shotbench import cli

    env = without_s3_settings()
    env["SHOTBENCH_STATE"] = str(tmp_path / "state")
    env.update(env_extra or {})
    argv = ["bench", "--runs-dir", str(tmp_path / "runs"), *args]
    saved_env, saved_term = dict(os.environ), signal.getsignal(signal.SIGTERM)
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.clear()
        os.environ.update(env)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as exc:  # argparse's own refusals
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        signal.signal(signal.SIGTERM, saved_term)
    return subprocess.CompletedProcess(
        [sys.executable, "-m", "shotbench.cli", *argv], code, out.getvalue(), err.getvalue()
    )


def assert_one_sentence(proc: subprocess.CompletedProcess[str], tmp_path: Path, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("shotbench: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for w in words:
        assert w in lines[0], lines[0]
    runs = tmp_path / "runs"
    assert not runs.exists() or not any(runs.iterdir()), "a failed start left a run folder"


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def secret_of(state: Path) -> str:
    """The embedded server's secret: https by default (bench-server-tls), http with --no-tls."""
    folder = state / "bench-server-tls"
    if not (folder / "credentials.json").exists():
        folder = state / "bench-server"
    return json.loads((folder / "credentials.json").read_text())["secret_key"]


def available(names: list[str]) -> list[str]:
    """`names`, failing the test when an environment one of them needs was never built."""
    missing = [n for n in names if not Path(registry.get(n).python()).exists()]
    if missing:
        pytest.fail(f"environments missing for {missing}: run `make envs` before the slow tests")
    return names

"""Helpers for tests that run `shotbench bench` as a user does and read the run folder it leaves."""

from __future__ import annotations

import csv
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path


def case_rows(run: Path) -> list[dict[str, str]]:
    """cases.csv of one run folder, as the strings on disk."""
    with open(run / "cases.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def copy_run(run: Path, to: Path, **meta: object) -> Path:
    """A copy of the run folder `run` at `to`, its run.json updated with `meta` (a copy keeps its
    run id unless `meta` gives another)."""
    shutil.copytree(run, to)
    old = json.loads((to / "run.json").read_text())
    (to / "run.json").write_text(json.dumps({**old, **meta}))
    return to


def only_run(runs_dir: Path) -> Path:
    """The one run folder under `runs_dir` (a test that made two is wrong)."""
    runs = sorted(runs_dir.iterdir())
    assert len(runs) == 1, runs
    return runs[0]


def wait_for_cases(runs_dir: Path, n: int, timeout: float = 120) -> Path | None:
    """The run folder once it holds `n` case rows (None if that did not happen in time)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        runs = list(runs_dir.glob("*/cases.csv"))
        if runs and len(case_rows(runs[0].parent)) >= n:
            return runs[0].parent
        time.sleep(0.2)
    return None


def as_in_a_terminal() -> None:
    """SIGINT as a foreground command has it. A suite started in the background by a shell without
    job control (`nohup make test &`) inherits SIGINT ignored, and so would every run it starts:
    then the Ctrl-C these tests send would never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def bench_proc(runs_dir: Path, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """`shotbench bench --runs-dir runs_dir ARGS` started in the background, its output piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "shotbench.cli", "bench", "--runs-dir", str(runs_dir), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_in_a_terminal,
    )


def interrupted_copy(fixture: Path, tmp_path: Path, keep: int) -> Path:
    """A copy of a finished run as if Ctrl-C had stopped it after its first `keep` case rows, with the
    plan `bench` records before its first case: another run of the same plan, so its own run id."""
    run = tmp_path / fixture.name
    shutil.copytree(fixture, run)
    lines = (run / "cases.csv").read_text().splitlines(keepends=True)
    rows = list(csv.DictReader(lines))
    meta = json.loads((run / "run.json").read_text())
    meta["status"] = "interrupted"
    meta["run_id"] = f"{meta['run_id']}-stopped"
    meta["plan"] = [  # what `bench` records before the first case: every case it will measure
        {"case_id": r["case-id"], "trial": int(r["trial"]), "backend": r["backend"], "mode": r["obj-type"],
         "workers": int(r["num-workers"]), "pb_size": int(r["pb-size"])}
        for r in rows
    ]  # fmt: skip
    (run / "cases.csv").write_text("".join(lines[: 1 + keep]))
    (run / "run.json").write_text(json.dumps(meta))
    return run

"""Making and scoring the runs of the repeatability study: the bench matrix N times back to back.

The statistics are `repeatability.py`; `shotbench repeat` (commands/repeat.py) turns its
arguments into the calls here. Each round is a whole `shotbench bench` process, as a user runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from shotbench.diskspace import atomic_write, writable
from shotbench.errors import UserError, refuse_repeats
from shotbench.paths import runs_dir
from shotbench.runs import refuse_copies, require_cases, require_read_run
from shotbench.studies.repeat import repeatability as repeat


@dataclass(frozen=True)
class Scored:
    """What one scoring wrote and the text it prints."""

    text: str
    out: Path


def checked_runs(paths: list[str]) -> list[Path]:
    """Existing read runs to score, at least two of them."""
    refuse_repeats(paths, "--runs", lambda p: Path(p).resolve())  # a run compared with itself says nothing
    folders = [Path(p) for p in paths]
    for folder in folders:
        require_read_run(folder, "pass read runs such as data/runs/<run-id>")
        require_cases(folder)
    refuse_copies(folders, "--runs")  # a copy keeps its run id: it would repeat perfectly
    if len(folders) < 2:
        raise UserError("repeatability needs at least two runs; pass two or more with --runs.")
    return folders


def _new_run(where: Path, before: set[Path]) -> Path:
    made = sorted({p for p in where.iterdir() if p.is_dir()} - before)
    if not made:
        raise UserError(f"a bench run made no run folder in {where}; see its output above.")
    return made[-1]


def bench_runs_dir(bench_args: list[str]) -> Path:
    """Where each bench run makes its folder: the last --runs-dir among its arguments, spelled
    `--runs-dir X` or `--runs-dir=X` as bench reads it, else data/runs."""
    where = runs_dir()
    for i, arg in enumerate(bench_args):
        flag, eq, value = arg.partition("=")
        if flag != "--runs-dir":
            continue
        if not eq:
            value = bench_args[i + 1] if i + 1 < len(bench_args) else ""
        if not value or (not eq and value.startswith("-")):
            raise UserError(
                "--runs-dir after -- needs a folder, e.g. `shotbench repeat -- --runs-dir /tmp/runs`; give it one."
            )
        where = Path(value)
    return where


def make_runs(times: int, bench_args: list[str]) -> list[Path]:
    """Run `shotbench bench bench_args` `times` times back to back; the run folders, in order."""
    if times < 2:
        raise UserError("--times must be at least 2: repeatability compares runs with each other.")
    rest = [a for a in bench_args if a != "--"]
    where = bench_runs_dir(rest)
    writable(where, "runs folder")
    folders = []
    for i in range(times):
        print(f"repeat: run {i + 1} of {times}: shotbench bench {' '.join(rest)}", flush=True)
        before = set(p for p in where.iterdir() if p.is_dir())
        done = subprocess.run([sys.executable, "-m", "shotbench.cli", "bench", *rest])
        if done.returncode != 0:
            raise UserError(
                f"run {i + 1} of {times} failed (exit {done.returncode}); the runs so far are in {where}.",
                exit_code=done.returncode,
            )
        folders.append(_new_run(where, before))
    return folders


def score_runs(folders: list[Path], baseline: str, unit: str, first_trials: int | None, out: Path) -> Scored:
    """Score the runs against each other; write ratios.csv, repeat.csv and repeat.json into `out`."""
    times = [repeat.case_times(f, unit, first_trials) for f in folders]  # each run read once
    table = pd.concat([repeat.versus(t, baseline) for t in times], ignore_index=True)
    cases, summary = repeat.score(table, [a for f in folders for a in repeat.run_answers(f)])
    text = repeat.report(cases, summary, baseline, unit)
    meta: dict[str, Any] = {
        **asdict(summary),
        "runs": [str(f) for f in folders],
        "run_seconds": [repeat.run_seconds(f) for f in folders],
        "baseline": baseline,
        "first_trials": first_trials,
    }
    if baseline != repeat.OTHERS:  # the same runs against the rest of each round: less of one baseline's noise
        _, others = repeat.score(pd.concat([repeat.versus(t, repeat.OTHERS) for t in times], ignore_index=True))
        text += "\n" + repeat.summary_line(others, "the rest of each round (--baseline others)")
        meta[repeat.OTHERS] = asdict(others)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "ratios.csv", table.to_csv(index=False))
    atomic_write(out / "repeat.csv", cases.to_csv(index=False))
    atomic_write(out / "repeat.json", json.dumps(meta, indent=2) + "\n")
    return Scored(text, out)

"""`shotbench repeat`: the bench matrix N times back to back, and how far its ratios move between runs.

The statistics are `studies/repeat/repeatability.py`; this module makes the runs and writes the tables.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from shotbench.errors import UserError
from shotbench.paths import runs_dir
from shotbench.runs import kind_of


def _new_run(where: Path, before: set[Path]) -> Path:
    made = sorted({p for p in where.iterdir() if p.is_dir()} - before)
    if not made:
        raise UserError(f"a bench run made no run folder in {where}; see its output above.")
    return made[-1]


def cmd_repeat(args: argparse.Namespace) -> int:
    import json
    import subprocess
    import sys
    from dataclasses import asdict

    import pandas as pd

    from shotbench.paths import reports_dir
    from shotbench.studies.repeat import repeatability as repeat

    repeat.check_first_trials(args.first_trials)  # before any run is made
    if args.runs:
        folders = [Path(p) for p in args.runs]
        bad = [p for p in folders if kind_of(p) != "read"]
        if bad:
            raise UserError(f"{bad[0]} is not a run folder; pass read runs such as data/runs/<run-id>.")
        if len(folders) < 2:
            raise UserError("repeatability needs at least two runs; pass two or more with --runs.")
    else:
        if args.times < 2:
            raise UserError("--times must be at least 2: repeatability compares runs with each other.")
        rest = [a for a in args.bench_args if a != "--"]
        where = Path(rest[rest.index("--runs-dir") + 1]) if "--runs-dir" in rest else runs_dir()
        where.mkdir(parents=True, exist_ok=True)
        folders = []
        for i in range(args.times):
            print(f"repeat: run {i + 1} of {args.times}: shotbench bench {' '.join(rest)}", flush=True)
            before = set(p for p in where.iterdir() if p.is_dir())
            done = subprocess.run([sys.executable, "-m", "shotbench.cli", "bench", *rest])
            if done.returncode != 0:
                raise UserError(
                    f"run {i + 1} of {args.times} failed (exit {done.returncode}); the runs so far are in {where}.",
                    exit_code=done.returncode,
                )
            folders.append(_new_run(where, before))
    times = [repeat.case_times(f, args.unit, args.first_trials) for f in folders]  # each run read once
    table = pd.concat([repeat.versus(t, args.baseline) for t in times], ignore_index=True)
    cases, summary = repeat.score(table)
    text = repeat.report(cases, summary, args.baseline, args.unit)
    meta: dict[str, Any] = {
        **asdict(summary),
        "runs": [str(f) for f in folders],
        "baseline": args.baseline,
        "first_trials": args.first_trials,
    }
    if args.baseline != repeat.OTHERS:  # the same runs against the rest of each round: less of one baseline's noise
        _, others = repeat.score(pd.concat([repeat.versus(t, repeat.OTHERS) for t in times], ignore_index=True))
        text += "\n" + repeat.summary_line(others, "the rest of each round (--baseline others)")
        meta[repeat.OTHERS] = asdict(others)
    out = Path(args.output) if args.output else reports_dir() / "repeat" / folders[-1].name
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "ratios.csv", index=False)
    cases.to_csv(out / "repeat.csv", index=False)
    (out / "repeat.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(text)
    print(f"Wrote {out / 'repeat.csv'}, {out / 'ratios.csv'} and {out / 'repeat.json'}.")
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "repeat",
        help="run the bench matrix N times back to back and say how far its ratios move",
        description="Runs `shotbench bench` with the given arguments N times (or scores --runs), then per case: each "
        "backend ÷ baseline ratio per run, how far it moves between runs, and how often one run's "
        "95 %% interval covers the other runs' ratios.",
    )
    p.add_argument("--times", type=int, default=3, metavar="N", help="runs to make (default 3)")
    p.add_argument(
        "--baseline",
        default="local",
        help="the backend every ratio divides by (default local), or `others`: the geometric mean of every other "
        "configuration of the same mode, workers and trial",
    )
    p.add_argument(
        "--unit",
        choices=["task", "case"],
        default="case",
        help="per trial, a ratio of case runtimes, the number the report ranks on (default), or of median task read times",
    )
    p.add_argument("--runs", nargs="+", metavar="RUN_DIR", help="score these runs instead of making new ones")
    p.add_argument(
        "--first-trials",
        type=int,
        metavar="N",
        help="score each run's first N trials only: what N trials a case would have said, from longer runs",
    )
    p.add_argument(
        "--output",
        metavar="DIR",
        help="where repeat.csv, ratios.csv and repeat.json go (default reports/repeat/<last run>/)",
    )
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="after --: arguments for each `shotbench bench`")
    p.set_defaults(func=cmd_repeat)

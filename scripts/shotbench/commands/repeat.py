"""`shotbench repeat`: the bench matrix N times back to back, and how far its ratios move between runs.

The runs and the scoring are `studies/repeat/repeat_run.py`, the statistics `repeatability.py`.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Any

from shotbench.diskspace import output_folder


def cmd_repeat(args: argparse.Namespace) -> int:
    from shotbench.paths import reports_dir
    from shotbench.studies.repeat import repeat_run
    from shotbench.studies.repeat import repeatability as repeat

    repeat.check_first_trials(args.first_trials)  # before any run is made
    with contextlib.ExitStack() as taken_back:  # a refusal leaves no output folder behind
        if args.output:  # checked before any run is made
            taken_back.enter_context(output_folder(Path(args.output), "output folder"))
        if args.runs:
            folders = repeat_run.checked_runs(args.runs)
        else:
            folders = repeat_run.make_runs(args.times, args.bench_args)
        out = Path(args.output) if args.output else reports_dir() / "repeat" / folders[-1].name
        scored = repeat_run.score_runs(folders, args.baseline, args.unit, args.first_trials, out)
    print(scored.text)
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

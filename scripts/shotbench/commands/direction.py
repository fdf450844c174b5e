"""`shotbench direction`: the one-knob-at-a-time ablation and the open-cost reproducer, in one run folder.

The run itself is `studies/direction/ablation_run.py`; this module turns the arguments into its settings.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from shotbench.paths import runs_dir
from shotbench.studies.direction.ablation_run import (
    GROUPS,
    AblationSettings,
    run_ablation,
)


def cmd_direction(args: argparse.Namespace) -> int:
    run_ablation(
        AblationSettings(
            parent=Path(args.runs_dir) if args.runs_dir else runs_dir(),
            trials=args.trials,
            signals_files=args.signals_files,
            signals_names=args.signals_names,
            groups=tuple(args.groups or ()),
            group_timeout=args.group_timeout,
            resume=Path(args.resume) if args.resume else None,
        )
    )
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "direction",
        help="ablation: which condition makes ROS3 2.x faster or slower than 1.14",
        description="Runs small bench runs that move one knob at a time from the default conditions "
        "(page buffer, workers, https vs http, latency, bandwidth, credentials, 2.2 block size, "
        "2.0 build vs 2.1.1 wheel) and writes "
        "data/runs/<id>/{direction.md,knobs.csv,cells.csv}.",
    )
    p.add_argument("--trials", type=int, default=3, help="trials per setting (at least 3)")
    p.add_argument("--signals-files", type=int, default=4, metavar="N", help="files read in signals mode")
    p.add_argument("--signals-names", type=int, default=8, metavar="N", help="signals read per file in signals mode")
    p.add_argument("--group-timeout", type=float, default=1800.0, help=argparse.SUPPRESS)
    p.add_argument("--resume", metavar="RUN_DIR", help="finish an interrupted ablation run")
    p.add_argument(
        "--groups",
        nargs="+",
        metavar="NAME",
        help=f"run only these settings groups (default: all of {' '.join(g.name for g in GROUPS)})",
    )
    p.add_argument("--runs-dir", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_direction)

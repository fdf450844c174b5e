"""`shotbench direction`: the one-knob-at-a-time ablation and the open-cost reproducer, in one run folder."""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from shotbench.errors import UserError
from shotbench.paths import runs_dir
from shotbench.provenance import git_commit, machine_info, new_run_id, utc_iso
from shotbench.studies.direction.ablation import (
    knob_table,
)
from shotbench.studies.direction.ablation_run import (
    GROUPS,
    DirectionRun,
    cells,
    load_average,
    markdown,
    run_group,
    write_meta,
)
from shotbench.studies.opencost import opencost_run as opencost


def cmd_direction(args: argparse.Namespace) -> int:
    parent = Path(args.runs_dir) if args.runs_dir else runs_dir()
    if args.resume:
        folder = Path(args.resume)
        if not (folder / "run.json").is_file():
            raise UserError(f"{folder} is not an ablation run folder (no run.json); pass data/runs/<id>.")
        meta = DirectionRun(
            **{
                k: v
                for k, v in json.loads((folder / "run.json").read_text()).items()
                if k in DirectionRun.__dataclass_fields__
            }
        )
        meta.groups = [asdict(g) for g in GROUPS]  # a resumed run measures this version's groups
    else:
        if args.trials < 3:
            raise UserError("the ablation needs at least 3 trials per setting for an interval; use --trials 3 or more.")
        folder = parent / new_run_id()
        folder.mkdir(parents=True)
        meta = DirectionRun(
            run_id=folder.name,
            started=utc_iso(),
            trials=args.trials,
            signals_files=args.signals_files,
            signals_names=args.signals_names,
            groups=[asdict(g) for g in GROUPS],
            load_start=load_average(),
            machine=machine_info(),
            git_commit=git_commit(),
        )
    write_meta(folder, meta)
    started = time.monotonic()
    chosen = [g for g in GROUPS if not args.groups or g.name in args.groups]
    unknown = sorted(set(args.groups or ()) - {g.name for g in GROUPS})
    if unknown:
        raise UserError(f"unknown settings group {unknown[0]!r}; choose from {', '.join(g.name for g in GROUPS)}.")
    for group in chosen:
        run_group(folder, group, meta, timeout=args.group_timeout)
    if not args.groups:  # what one open sends, by the minimal reproducer (open-cost.csv)
        opencost.measure(folder)
    c = cells(folder)
    c.to_csv(folder / "cells.csv", index=False)
    knob_table(c).to_csv(folder / "knobs.csv", index=False)
    meta.status, meta.finished, meta.load_end = "complete", utc_iso(), load_average()
    write_meta(folder, meta)
    text = markdown(folder, c)
    (folder / "direction.md").write_text(text)
    print(text)
    print(f"[direction] {folder} in {time.monotonic() - started:.0f} s", flush=True)
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

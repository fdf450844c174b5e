"""`shotbench chaos` (`make bench-chaos`): the quick matrix under mixed faults, killed and resumed.

The steps and the tally are `studies/chaos/chaos_run.py`; this module parses the arguments.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from shotbench.errors import UserError
from shotbench.paths import runs_dir
from shotbench.studies.chaos.chaos_run import chaos


def cmd_chaos(args: argparse.Namespace) -> int:
    runs = Path(args.runs_dir) if args.runs_dir else runs_dir() / "chaos"
    runs.mkdir(parents=True, exist_ok=True)
    extra = ["--profile", args.profile] + (["--config", args.config] if args.config else [])
    result = chaos(runs, extra, args.kill_after, args.server_after)
    for line in result.lines():
        print(f"chaos: {line}")
    if not result.good:
        raise UserError("cases were lost, duplicated or left without a reason; see the counts above.", exit_code=1)
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "chaos",
        help="quick matrix under mixed faults with a SIGKILL, a server kill and resumes",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    p.add_argument("--profile", default="quick")
    p.add_argument("--config", metavar="FILE.toml")
    p.add_argument("--kill-after", type=int, default=4, metavar="N", help="SIGKILL the run after N cases")
    p.add_argument(
        "--server-after", type=int, default=4, metavar="N", help="kill -9 the server N cases into the resume"
    )
    p.add_argument("--runs-dir", help="where the chaos run folder goes (default data/runs/chaos)")
    p.set_defaults(func=cmd_chaos)

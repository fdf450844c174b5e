"""`shotbench imds`: an instance role on this machine, for rehearsing the EC2 path.

An IMDSv2 emulator hands out role credentials that rotate, and a gate in front of the embedded
server accepts only the sets in force (`shotbench.store.imds`).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path


def cmd_imds(args: argparse.Namespace) -> int:
    from shotbench.errors import UserError
    from shotbench.store import imds

    if not (0 < args.period < math.inf and 0 <= args.grace < math.inf):  # NaN passes neither
        raise UserError("--period is seconds above 0 and --grace seconds from 0, e.g. --period 60 --grace 120.")
    return imds.emulate(args.state, args.period, args.grace)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "imds",
        help="emulate an EC2 instance role in front of the embedded server (credentials that rotate)",
        description="Serve an IMDSv2 emulator whose role credentials rotate every --period seconds, and a gate "
        "in front of the running embedded server that refuses each replaced set --grace seconds later. Prints "
        "the `export` lines that point the AWS SDKs at both; runs until interrupted.",
    )
    p.add_argument("--period", type=float, default=60.0, help="seconds between new sets (default 60)")
    p.add_argument("--grace", type=float, default=120.0, help="seconds a replaced set still works (default 120)")
    p.add_argument("--state", type=Path, default=None, help="the embedded server's state directory")
    p.set_defaults(func=cmd_imds)

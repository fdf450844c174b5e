"""`shotbench doctor`: the command line of `shotbench.bench.diagnosis` (argparse only, so it can move
to the commands package as it is)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from shotbench.plan import profiles


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "doctor",
        help="one screen before any run: endpoint, region, credentials, instance, builds, plan and its length",
    )
    p.add_argument("--data", default=None, help="s3://bucket/prefix the run would read (default: the embedded server)")
    p.add_argument("--profile", default="quick", choices=list(profiles.BENCH_PROFILES))
    p.add_argument("--network", default=None, help="the network profile the run would use")
    p.add_argument("--anonymous", action="store_true", help="the run would read unsigned")
    p.add_argument("--json", action="store_true", help="the facts as JSON (what run.json keeps under 'doctor')")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Prints the screen; exit 1 when a problem was found, so a script can stop before the run."""
    from shotbench.bench import diagnosis as doctor

    facts = doctor.facts(args.data, args.profile, args.network, args.anonymous)
    found = doctor.problems(facts)
    if args.json:
        print(json.dumps({**facts, "problems": found}, indent=2))
    else:
        print(doctor.render(facts, found))
    return 1 if found else 0

"""`shotbench doctor`: the command line of `shotbench.bench.diagnosis` (argparse only, so it can move
to the commands package as it is)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from shotbench.commands.server import WHICH_S3_DATA
from shotbench.plan import profiles


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "doctor",
        help="one screen before any run: endpoint, region, credentials, instance, builds, plan and its length",
        description="What `shotbench bench` would use, on one screen, before anything starts. " + WHICH_S3_DATA,
    )
    p.add_argument("--data", default=None, help="s3://bucket/prefix the run would read (default: the embedded server)")
    p.add_argument("--profile", default="quick", choices=list(profiles.BENCH_PROFILES))
    p.add_argument("--network", default=None, help="the network profile the run would use")
    p.add_argument("--anonymous", action="store_true", help="the run would read unsigned")
    p.add_argument("--config", metavar="FILE.toml", help="the TOML file the run would use (as `bench --config`)")
    p.add_argument("--trials", type=int, help="the trials the run would use (as `bench --trials`)")
    p.add_argument("--faults", metavar="PROFILE", help="the fault profile the run would use (as `bench --faults`)")
    p.add_argument("--tls", action=argparse.BooleanOptionalAction, default=None, help="as `bench --tls` / `--no-tls`")
    p.add_argument("--json", action="store_true", help="the facts as JSON (what run.json keeps under 'doctor')")
    p.set_defaults(func=main)


def _settings(args: argparse.Namespace) -> tuple[profiles.BenchConfig, str]:
    """The plan and network the run would have, refused in one sentence where `bench` refuses them
    (a missing --config, bad --trials, --faults), by bench's own checks."""
    from shotbench.commands.bench import new_run_settings

    config = Path(args.config) if args.config else None
    cfg = profiles.load(args.profile, config, {"trials": args.trials})
    network, _ = new_run_settings(cfg, args.data, args.network, args.faults, args.tls, args.anonymous)
    return cfg, network


def main(args: argparse.Namespace) -> int:
    """Prints the screen; exit 1 when a problem was found, so a script can stop before the run."""
    from shotbench.bench import diagnosis as doctor

    cfg, network = _settings(args)
    facts = doctor.facts(args.data, cfg.profile, network, args.anonymous, cfg=cfg)
    access = doctor.access_problems(facts)  # once: it connects to the endpoint
    found = doctor.folder_problems() + doctor.problems(facts, access)
    if listing := doctor.listing_problem(facts, access):  # asked of the endpoint: the run's own first step, bounded
        found.append(listing)
    if args.json:
        print(json.dumps({**facts, "problems": found}, indent=2))
    else:
        print(doctor.render(facts, found))
    return 1 if found else 0

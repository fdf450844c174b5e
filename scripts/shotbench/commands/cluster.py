"""`shotbench cluster workers --scheduler ADDR`: the commands that start, on this host, a Dask worker
pool for each backend environment (`bench/pools.py`), printed, or run with `--run`.

Each host of a cluster runs this once, from a checkout whose environments are built (`make envs`):
the command names each environment's own Python, so a pool's workers are that build. Several hosts
are started by an existing launcher (Dask's SSHCluster, dask-cloudprovider), not by this
command: see docs/guides/cluster.md.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from shotbench.bench.poolstart import (
    check_scheduler,
    commands,
    env_keys,
    mark,
    python_of,
    reach_scheduler,
    run_pools,
)
from shotbench.commands.argtypes import whole_number

MAX_WORKERS = 1024  # worker processes per environment on one host: far beyond any host's cores


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "cluster",
        help="start Dask worker pools, one per backend environment, for `bench --scheduler`",
        description="Worker pools for a Dask cluster that `bench --scheduler` runs on: each backend's tasks go "
        "only to workers started from its environment, marked with the resource shotbench-env-<env>.",
    )
    sub = p.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)
    w = sub.add_parser(
        "workers",
        help="print (or --run) the commands that start a worker pool per environment on this host",
    )
    w.add_argument("--scheduler", required=True, metavar="ADDR", help="the scheduler, e.g. tcp://10.0.0.5:8786")
    w.add_argument(
        "--env",
        nargs="+",
        metavar="ENV",
        help="environments to start pools for (main, hdf5-1.14, hdf5-2.0, ...; default: those of --backends)",
    )
    w.add_argument(
        "--backends",
        nargs="+",
        metavar="NAME",
        help="the backends the pools are for (default: the default matrix's)",
    )
    w.add_argument(
        "--nworkers",
        type=whole_number("workers per environment", 1, MAX_WORKERS),
        default=2,
        metavar="N",
        help=f"workers per environment (1-{MAX_WORKERS}; default 2)",
    )
    w.add_argument(
        "--run", action="store_true", help="start them here and keep them until Ctrl-C (or SIGTERM), then stop them"
    )
    w.set_defaults(func=_workers)
    m = sub.add_parser(
        "mark",
        help="mark each environment so any worker started from its Python joins its pool (for SSHCluster, "
        "dask-cloudprovider, plain `dask worker`)",
        description="Write <env>/etc/dask/shotbench-pool.yaml, which Dask reads at start-up from the Python that "
        "runs it: a worker started from that environment by any launcher carries its pool's resource.",
    )
    m.add_argument("--env", nargs="+", metavar="ENV", help="environments to mark (default: those of --backends)")
    m.add_argument("--backends", nargs="+", metavar="NAME", help="the backends (default: the default matrix's)")
    m.set_defaults(func=_mark)


def _mark(args: argparse.Namespace) -> int:
    for env_key in env_keys(args.env, args.backends):
        prefix = Path(sys.prefix) if env_key == "main" else Path(python_of(env_key)).parent.parent
        print(f"{env_key}: {mark(prefix, env_key)}")
    return 0


def _workers(args: argparse.Namespace) -> int:
    scheduler = check_scheduler(args.scheduler)
    cmds = commands(scheduler, env_keys(args.env, args.backends), args.nworkers)
    if not args.run:
        for env_key, cmd in cmds.items():
            print(f"# the {env_key} pool")
            print(shlex.join(cmd))
        return 0
    reach_scheduler(scheduler, "check --scheduler")  # before any worker starts and retries it for minutes
    return run_pools(cmds)

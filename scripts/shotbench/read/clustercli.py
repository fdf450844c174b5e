"""`shotbench cluster workers --scheduler ADDR`: the commands that start, on this host, a Dask worker
pool for each backend environment (`read/pools.py`), printed, or run with `--run`.

Each host of a cluster runs this once, from a checkout whose environments are built (`make envs`):
the command names each environment's own Python, so a pool's workers are that build. Several hosts
are started by an existing launcher (Dask's SSHCluster, dask-cloudprovider), not by this
command: see docs/guides/cluster.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from shotbench.errors import UserError
from shotbench.read import pools

RUN_POLL_S = 1.0


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
    w.add_argument("--nworkers", type=int, default=2, metavar="N", help="workers per environment (default 2)")
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


def check_scheduler(addr: str) -> str:
    """`tcp://host:port` (a bare host:port gets tcp://), or one sentence naming the form."""
    full = addr if "://" in addr else f"tcp://{addr}"
    parts = urlsplit(full)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in ("tcp", "tls") or not parts.hostname or not port:
        raise UserError(f"--scheduler {addr!r} is not a scheduler address; give it as tcp://HOST:PORT.")
    return full


def env_keys(envs: list[str] | None, backends: list[str] | None) -> list[str]:
    """The environments asked for, or those of the backends (the default matrix's when none)."""
    if envs:
        return list(dict.fromkeys(envs))
    from shotbench.backends import registry

    names = backends or registry.default_names()
    return list(dict.fromkeys(registry.get(n).env_key() for n in names))


def python_of(env_key: str) -> str:
    """The interpreter of an environment on this host (one sentence when it is not built)."""
    if env_key == "main":
        return sys.executable
    from shotbench.builds.envs import env_python

    return str(env_python(env_key))


def commands(scheduler: str, envs: list[str], nworkers: int) -> dict[str, list[str]]:
    """Per environment, the command that starts its pool on this host."""
    return {e: pools.worker_command(python_of(e), scheduler, e, nworkers) for e in envs}


MARK_FILE = "shotbench-pool.yaml"


def mark(prefix: Path, env_key: str) -> Path:
    """Write the Dask config file that gives every worker started from the Python at `prefix`
    its pool's resource (Dask reads `<sys.prefix>/etc/dask/*.yaml` at import)."""
    path = prefix / "etc" / "dask" / MARK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "# written by `shotbench cluster mark`: workers started from this environment join its pool\n"
        f"distributed:\n  worker:\n    resources:\n      {pools.resource(env_key)}: 1\n"
    )
    return path


def _mark(args: argparse.Namespace) -> int:
    for env_key in env_keys(args.env, args.backends):
        prefix = Path(sys.prefix) if env_key == "main" else Path(python_of(env_key)).parent.parent
        print(f"{env_key}: {mark(prefix, env_key)}")
    return 0


def _workers(args: argparse.Namespace) -> int:
    if args.nworkers < 1:
        raise UserError(f"--nworkers {args.nworkers} starts no worker; give 1 or more.")
    scheduler = check_scheduler(args.scheduler)
    cmds = commands(scheduler, env_keys(args.env, args.backends), args.nworkers)
    if not args.run:
        for env_key, cmd in cmds.items():
            print(f"# the {env_key} pool")
            print(shlex.join(cmd))
        return 0
    return _run(cmds)


def _run(cmds: dict[str, list[str]]) -> int:
    """Start every pool, each in a process group of its own; end them all when interrupted or when
    one of them exits (a pool that cannot reach its scheduler ends, and so does this command)."""
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for env_key, cmd in cmds.items():
            procs[env_key] = subprocess.Popen(cmd, start_new_session=True, stdin=subprocess.DEVNULL)
            print(f"started the {env_key} pool (pid {procs[env_key].pid})", file=sys.stderr, flush=True)
        while True:
            for env_key, p in procs.items():
                if p.poll() is not None:
                    raise UserError(
                        f"the {env_key} pool exited with status {p.returncode}; its output above says why "
                        "(is the scheduler reachable from this host?)."
                    )
            time.sleep(RUN_POLL_S)
    finally:
        for p in procs.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)

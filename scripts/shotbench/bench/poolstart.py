"""Starting worker pools on a host: the `dask worker` command of each backend environment, run
or printed, and the mark that tags a worker started by any launcher with its environment's pool.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from shotbench.bench import pools
from shotbench.errors import UserError

RUN_POLL_S = 1.0


SCHEDULER_ANSWER_TIMEOUT = 20.0  # a scheduler's first bytes (its handshake); refused after this


def check_scheduler(addr: str) -> str:
    """`tcp://host:port` (a bare host:port gets tcp://), or one sentence naming the form."""
    scheduler_address(addr)
    return addr if "://" in addr else f"tcp://{addr}"


def scheduler_address(addr: str) -> tuple[str, int, str]:
    """Host, port and scheme of --scheduler, or one sentence when it is no scheduler address."""
    parts = urlsplit(addr if "://" in addr else f"tcp://{addr}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in ("tcp", "tls") or not parts.hostname or not port:
        raise UserError(f"--scheduler {addr!r} is not a scheduler address; give it as tcp://HOST:PORT.")
    return parts.hostname, port, parts.scheme


def reach_scheduler(addr: str, fix: str) -> None:
    """A Dask scheduler that does not take a connection within seconds, or takes it and says nothing
    (a Dask server sends its handshake at once), is one sentence ending in `fix`, before any case
    runs or worker starts."""
    import socket

    host, port, scheme = scheduler_address(addr)
    try:
        with socket.create_connection((host, port), timeout=5) as sock:
            if scheme == "tcp":
                sock.settimeout(SCHEDULER_ANSWER_TIMEOUT)
                if not sock.recv(1):
                    raise ConnectionResetError("it closed the connection without a word")
    except TimeoutError:
        raise UserError(
            f"{addr} accepts connections but sent nothing within {SCHEDULER_ANSWER_TIMEOUT:.0f} s, "
            f"so it is not a working Dask scheduler; start the scheduler or {fix}."
        ) from None
    except OSError as exc:
        raise UserError(f"no Dask scheduler answers at {addr} ({exc.strerror or exc}); start it or {fix}.") from None


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
    from shotbench.builds.environments import env_python

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


def run_pools(cmds: dict[str, list[str]]) -> int:
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

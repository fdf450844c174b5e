"""Test support: a real Dask scheduler and worker pools started as a user would start them
(`shotbench cluster workers`' commands), optionally inside network namespaces standing in for hosts.
Every process is started in a group of its own and ended by the caller's finalizer.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from shotbench.bench import pools


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class Procs:
    """Processes a test started; `end()` stops each one's group (always called by a finalizer)."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(
        self, cmd: list[str], name: str, prefix: list[str] | None = None, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = open(self.logs / f"{name}.log", "ab")
        p = subprocess.Popen(
            [*(prefix or []), *cmd], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env=env,
        )  # fmt: skip
        log.close()
        self.procs.append(p)
        return p

    def end(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)


def scheduler_cmd(host: str, port: int) -> list[str]:
    return [
        sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", host, "--port", str(port),
        "--dashboard-address", ":0",
    ]  # fmt: skip


def local_scheduler(request: pytest.FixtureRequest, logs: Path) -> tuple[Procs, str]:
    """A scheduler on 127.0.0.1 at a free port, its address, and the `Procs` that started it, which
    the test's finalizer ends: the test starts the workers of the pools it needs with the same `Procs`."""
    procs = Procs(logs)
    request.addfinalizer(procs.end)
    port = free_port()
    procs.start(scheduler_cmd("127.0.0.1", port), "scheduler")
    return procs, f"tcp://127.0.0.1:{port}"


def wait_for_pools(address: str, wanted: dict[str, int], timeout: float = 180.0) -> dict[str, Any]:
    """Block until the scheduler has `wanted[env]` workers in each pool (bounded); their info."""
    from distributed import Client

    deadline = time.monotonic() + timeout
    with Client(address, timeout=60, set_as_default=False) as client:
        while True:
            info = client.scheduler_info()["workers"]
            have: dict[str, int] = {}
            for w in info.values():
                env = pools.env_of(w.get("resources"))
                if env:
                    have[env] = have.get(env, 0) + 1
            if all(have.get(e, 0) >= n for e, n in wanted.items()):
                return dict(info)
            if time.monotonic() > deadline:
                raise AssertionError(f"pools {wanted} not registered within {timeout:.0f} s (have {have})")
            time.sleep(0.5)

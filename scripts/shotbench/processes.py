"""Processes shotbench starts: free ports, stopping them, and children that cannot outlive
the run that started them, even after SIGKILL.

The orchestrator starts each environment's driver in its own process group (so a Ctrl-C in
the terminal reaches only the orchestrator, which then stops the drivers in order). If the
orchestrator is killed outright, nothing stops them: the kernel's parent-death signal does.
The driver turns that signal into the end of its whole group, which holds its Dask scheduler,
nannies, workers and resource tracker.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

PR_SET_PDEATHSIG = 1
STOP_TIMEOUT = 5.0  # seconds a stopped server gets to finish in-flight requests before SIGKILL


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A `preexec_fn` for Popen: the child gets `sig` when the process that started it dies."""
    parent = os.getpid()

    def arm() -> None:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig))
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), sig)

    return arm


def daemon(
    cmd: list[str], log: Path | None, private: bool, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """A server shotbench starts in a session of its own (a Ctrl-C in the terminal is not its
    concern), its output appended to `log` (or dropped); `private` ties it to this process's life."""
    out = open(log, "ab") if log else subprocess.DEVNULL
    try:
        return subprocess.Popen(
            cmd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent() if private else None,
        )
    finally:
        if not isinstance(out, int):
            out.close()


def end_group_on(signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGHUP)) -> None:
    """In a process-group leader: on any of `signals`, kill the whole group at once (itself
    and every process it started), so no Dask process is left behind."""

    def handler(signum: int, _frame: object) -> None:
        os.killpg(os.getpgrp(), signal.SIGKILL)

    for sig in signals:
        signal.signal(sig, handler)


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port on 127.0.0.1 that is free now (TCP, or UDP with `socket.SOCK_DGRAM`)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pid_alive(pid: int, name: str) -> bool:
    """Alive and still the program we started (pids get reused)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":
        return False
    return name.encode() in cmdline


def terminate(pid: int, name: str) -> None:
    """SIGTERM, wait, then SIGKILL: versitygw finishes in-flight requests on SIGTERM."""
    if not pid_alive(pid, name):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline:
        reap(pid)
        if not pid_alive(pid, name):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    reap(pid)


def kill_tree(pid: int) -> None:
    """SIGKILL `pid` and every process below it (found in /proc before any is killed): a child
    that started its own children leaves none holding its pipes open. The caller reaps `pid`."""
    found, todo = [], [pid]
    while todo:
        here = todo.pop()
        found.append(here)
        for task in Path(f"/proc/{here}/task").glob("*/children"):
            with contextlib.suppress(OSError, ValueError):
                todo.extend(int(child) for child in task.read_text().split())
    for each in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(each, signal.SIGKILL)


def reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def reap_group(pgid: int) -> None:
    """Reap every ended child of ours in process group `pgid`: an unreaped one still counts as a
    member, so `killpg(pgid, 0)` finds the group alive after all of it has ended."""
    with contextlib.suppress(ChildProcessError, OSError):
        while os.waitpid(-pgid, os.WNOHANG)[0]:
            pass

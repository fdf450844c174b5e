"""One process at a time: advisory locks (flock) that name their holder.

A run folder and the embedded server of `bench` each belong to one process while it runs;
a second process is refused with the holder's pid instead of silently sharing (which
duplicated cases and mixed two runs' request counts). Short critical sections (a build into
the cache, starting or stopping a server) wait for the holder instead. The kernel releases a
flock when its holder dies, even by SIGKILL, so a stale lock never blocks a later `--resume`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from shotbench.errors import UserError


class Busy(Exception):
    """The lock is held by another live process (pid, or 0 when it cannot be read)."""

    def __init__(self, pid: int) -> None:
        super().__init__(f"held by pid {pid}")
        self.pid = pid


def acquire(path: Path, wait: bool = False) -> int:
    """An open descriptor holding an exclusive lock on `path` (created if missing): waits for
    the holder with `wait`, else raises Busy if taken."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        pid = 0
        deadline = time.monotonic() + 2.0  # the holder writes its pid just after taking the lock
        while not pid and time.monotonic() < deadline:
            try:
                pid = int(os.pread(fd, 32, 0).decode().strip() or 0)
            except ValueError:
                pid = 0
            if not pid:
                time.sleep(0.02)
        os.close(fd)
        raise Busy(pid) from None
    except BaseException:  # Ctrl-C while waiting: no descriptor left open
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def release(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


@contextlib.contextmanager
def exclusive(path: Path, wait: bool = True) -> Iterator[None]:
    """Hold the lock on `path` (created with its folder) for the block: after the holder
    releases it, or, with `wait=False`, at once or not at all (Busy)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = acquire(path, wait)
    try:
        yield
    finally:
        release(fd)


@contextlib.contextmanager
def held(path: Path, busy: str, unwritable: str) -> Iterator[None]:
    """Hold the lock for the block, or refuse in one sentence: `busy` may name `{pid}`."""
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(exclusive(path, wait=False))
    except Busy as exc:
        raise UserError(busy.format(pid=exc.pid)) from None
    except PermissionError:
        raise UserError(unwritable) from None
    with stack:
        yield

"""Which CPUs a transfer run's embedded server gets, and which the tools it times.

The embedded server stands for S3, whose CPU is never the client's. On one machine it is,
unless the run keeps them apart: sharing every core, the server spent about three quarters of a
1 MiB upload row's CPU, the cores were 90 % busy, and each CPU-second a tool spent on its own
checks was a second the server waited for. Measured on 2026-12-03 on this 2-core machine
(docs/results/2026-12-03-upload-server-cpu.md), 20 rounds of 128 x 1 MiB uploads: stage took
1.03-1.16x awscrt's time with the cores shared, and 1.00-1.08x with the server on one core and
the tools on the other, where obstore's SHA-256 signing still cost it 1.17-1.26x. So a run gives
the server half the CPUs by default (`--server-cpus split`), the tools the other half, and
run.json says which it did. `shared` is the old layout; a run against a user's S3 has no server
here to place.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from shotbench.errors import UserError

AUTO, SPLIT, SHARED = "auto", "split", "shared"
CHOICES = (AUTO, SPLIT, SHARED)


@dataclass(frozen=True)
class CpuLayout:
    """The CPUs of the tools and of the server (empty: the server shares the tools'), and why."""

    client: tuple[int, ...]
    server: tuple[int, ...]
    why: str

    @property
    def split(self) -> bool:
        return bool(self.server)

    def public(self) -> dict[str, object]:
        return {"client_cpus": list(self.client), "server_cpus": list(self.server), "cpus_why": self.why}


def layout(asked: str, cpus: Iterable[int]) -> CpuLayout:
    """`asked` is one of CHOICES (the command line checks it); `cpus` are the ones this process
    may run on. auto and split give the server the upper half (at least one) and the tools the
    rest; with one CPU auto shares it and split is refused in one sentence."""
    mine = tuple(sorted(cpus))
    if asked == SHARED:
        return CpuLayout(mine, (), "asked for (--server-cpus shared): the server and the tools share every CPU")
    if len(mine) < 2:
        if asked == SPLIT:
            raise UserError(
                f"--server-cpus split needs at least 2 CPUs and this run may use {len(mine)}; "
                "give --server-cpus shared."
            )
        return CpuLayout(mine, (), "one CPU: nothing to give the server apart from the tools")
    half = len(mine) // 2
    client, server = mine[: len(mine) - half], mine[len(mine) - half :]
    return CpuLayout(
        client,
        server,
        f"the server stands for S3, whose CPU is not the client's: {len(server)} of {len(mine)} CPUs for it, "
        f"the other {len(client)} for the tools",
    )


def pin(pid: int, cpus: Iterable[int]) -> None:
    """Every thread of `pid` onto `cpus` (threads it starts later inherit it); a thread or
    process that has ended meanwhile is skipped."""
    wanted = set(cpus)
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return
    for tid in tids:
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(tid), wanted)


@contextlib.contextmanager
def apart(placed: CpuLayout | None, server_pids: Iterable[int]) -> Iterator[None]:
    """The server's processes on its CPUs and this process (every thread, and so every tool and
    subprocess it starts) on the tools', for the block; this process's own CPUs back after.
    Nothing moves without a split layout."""
    if placed is None or not placed.split:
        yield
        return
    before = os.sched_getaffinity(0)
    for pid in server_pids:
        pin(pid, placed.server)
    pin(os.getpid(), placed.client)
    try:
        yield
    finally:
        pin(os.getpid(), before)

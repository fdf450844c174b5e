"""CPU time spent during a timed step, on this side and on the server's, read from the kernel.

On one machine the embedded server shares the cores with the client, so work a tool makes the
server do (verifying a checksum, answering a HEAD) lands on that tool's clock; against S3 it runs
on S3's machines. Counting both sides per case is what lets a report say which side a difference
in time comes from.

The CPU time the hypervisor gave to other machines (`steal`, counted by the kernel of a virtual
machine) is read too: a case timed while it was high ran on less machine than its neighbours,
whatever the tool did.
"""

from __future__ import annotations

import ctypes
import functools
import os
import resource
import time
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class CpuSample:
    """Cumulative CPU seconds (user + system) at one moment."""

    client: float  # this process, every thread, plus its children that have been waited for
    server: float | None  # the server's processes; None when there are none to read
    stolen: float | None = None  # every CPU's steal time: taken by the hypervisor; None where unknown


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _process_clock(pid: int) -> float:
    """CPU seconds of every thread of `pid`, to the nanosecond (the kernel's per-process CPU clock;
    /proc's ticks are 10 ms, as long as a small case). OSError when the process is gone."""
    clock = ctypes.c_int()
    if _libc().clock_getcpuclockid(pid, ctypes.byref(clock)) != 0:
        raise OSError(f"no CPU clock for process {pid}")
    return time.clock_gettime(clock.value)


STAT = "/proc/stat"


def parse_steal(stat: str) -> float | None:
    """The `steal` field of /proc/stat's first line (all CPUs) in seconds; None where the kernel
    does not count it (a kernel older than 2.6.11, or text that is not /proc/stat)."""
    first = stat.partition("\n")[0].split()
    if len(first) < 9 or first[0] != "cpu" or not first[8].isdigit():
        return None
    return int(first[8]) / os.sysconf("SC_CLK_TCK")


def _steal() -> float | None:
    try:
        with open(STAT, encoding="ascii") as f:
            return parse_steal(f.readline())
    except OSError:  # no /proc (not Linux)
        return None


def sample(server_pids: Iterable[int] = ()) -> CpuSample:
    """Read both clocks now. A server process that has gone makes the server side unknown."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    client = time.process_time() + children.ru_utime + children.ru_stime
    pids = tuple(server_pids)
    server: float | None = None
    if pids:
        try:
            server = sum(_process_clock(pid) for pid in pids)
        except OSError:
            server = None
    return CpuSample(client, server, _steal())


def _less(after: float | None, before: float | None) -> float | None:
    return after - before if after is not None and before is not None else None


def spent(before: CpuSample, after: CpuSample) -> CpuSample:
    """CPU seconds used between two samples, on each side, and stolen from the machine."""
    return CpuSample(
        after.client - before.client, _less(after.server, before.server), _less(after.stolen, before.stolen)
    )

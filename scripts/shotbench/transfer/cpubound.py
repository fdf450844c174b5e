"""What the machine's CPU says of a ratio between two tools on one row.

On loopback the embedded server runs on this machine, on the tools' cores unless the run gave it
its own (shotbench.transfer.cores). Sharing, when those cores are nearly full during a row's
cases, a tool's time follows the CPU that it and the server spend, whatever its design: every
CPU-second one side adds is one the other side waits for. So a ratio of times on such a row is,
first of all, a ratio of CPU. Apart, each side is bound by its own cores only: the busier side's
CPU is the one a ratio can follow. Against S3 the server's CPU is on S3's machines, so no bound
of the server's holds there.

This module turns medians already measured (seconds, client and server CPU-seconds) into that
reading: how busy the cores were, and the ratio the CPU alone would give. It measures nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FULL = 0.80
"""Cores at least this busy (CPU-seconds spent ÷ (seconds × CPUs)) bound a row: measured on this
2-core machine, the 1 MiB upload rows ran at 0.82-0.93, and their time ratios followed their CPU
ratios (docs/results/2026-12-03-upload-server-cpu.md)."""


@dataclass(frozen=True)
class Cores:
    """The CPUs a run's tools had, and the server's own (0: it shared the tools')."""

    client: int
    server: int = 0


@dataclass(frozen=True)
class Spent:
    """One tool's medians on one row: wall seconds and CPU-seconds on each side while timed."""

    seconds: float
    client: float
    server: float

    @property
    def cpu(self) -> float:
        return self.client + self.server


@dataclass(frozen=True)
class CpuReading:
    """Two tools on one row, read through the CPU they made the machine spend."""

    busy: float  # the rival's cases: CPU-seconds spent ÷ (seconds × CPUs), on `side`
    cpu_ratio: float  # stage's CPU ÷ the rival's on `side`: the ratio if time followed CPU
    time_ratio: float  # stage's seconds ÷ the rival's, as measured
    client_extra: float  # stage's client CPU-seconds minus the rival's
    side: str = "both"  # "both" (shared cores), or the busier of "tools" and "server" (apart)

    @property
    def bound(self) -> bool:
        """Were the cores full enough for time to follow CPU?"""
        return self.busy >= FULL

    @property
    def share(self) -> float | None:
        """How much of stage's excess time its excess CPU accounts for (None without an excess)."""
        if self.time_ratio <= 1.0:
            return None
        return max(0.0, self.cpu_ratio - 1.0) / (self.time_ratio - 1.0)

    def phrase(self) -> str:
        """One clause for a report: how busy the cores were, and what that makes of the ratio."""
        where = {"both": "the cores", "tools": "the tools' cores", "server": "the server's cores"}[self.side]
        busy = f"{where} were {self.busy * 100:.0f} % busy"
        if not self.bound:
            return f"{busy}, too few for time to follow CPU"
        cpu = "stage's CPU (both sides)" if self.side == "both" else "stage's CPU there"
        said = f"{busy}, and {cpu} was {self.cpu_ratio:.2f}× the other's"
        share = self.share
        if share is not None:
            said += f": on full cores that alone accounts for {min(share, 1.0) * 100:.0f} % of the {(self.time_ratio - 1) * 100:+.0f} % it took"
        return said


def reading(stage: Spent, rival: Spent, cores: Cores) -> CpuReading | None:
    """The CPU reading of a pair, or None when a figure is missing (runs from before CPU was
    counted, a server whose CPU could not be read) or the machine's CPUs are unknown. With the
    server on cores of its own, the reading is of the busier side."""
    figures = (stage.seconds, stage.client, stage.server, rival.seconds, rival.client, rival.server)
    if cores.client < 1 or any(not math.isfinite(x) for x in figures) or min(stage.seconds, rival.seconds) <= 0:
        return None
    time_ratio, extra = stage.seconds / rival.seconds, stage.client - rival.client
    if not cores.server:
        if rival.cpu <= 0:
            return None
        return CpuReading(rival.cpu / (rival.seconds * cores.client), stage.cpu / rival.cpu, time_ratio, extra)
    tools, server = rival.client / (rival.seconds * cores.client), rival.server / (rival.seconds * cores.server)
    side, busy, mine, theirs = (
        ("server", server, stage.server, rival.server)
        if server >= tools
        else ("tools", tools, stage.client, rival.client)
    )
    if theirs <= 0:
        return None
    return CpuReading(busy, mine / theirs, time_ratio, extra, side)

"""Where a transfer run's embedded server keeps its objects: in memory when they fit.

Every run stores its rows' own files on the server as download sources, and its upload rows then
send those same bytes again. Measured on 2026-12-03 (docs/results/2026-12-03-upload-server-cpu.md),
with the server's folder on the ext4 disk that holds the client's files and those bytes already
stored there, uploads with a CRC64NVME trailer took 1.08-1.13x awscrt's time without one. With the
folder in /dev/shm (tmpfs) they took 0.99x, as they do with nothing stored. Against S3 the server's
storage is never the client's disk. So a run keeps the server's folder in memory when the plan's
objects fit there with room to spare, on the disk otherwise, and run.json says which and why.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from shotbench.diskspace import free_bytes
from shotbench.errors import UserError
from shotbench.transfer.cases import Row

AUTO, MEMORY, DISK = "auto", "memory", "disk"
CHOICES = (AUTO, MEMORY, DISK)
SHM = Path("/dev/shm")
SPARE = 1 << 30  # tmpfs room left over once the run's objects are in
MEMORY_SHARE = 4  # the objects may take at most this fraction (1/N) of the memory available
STALE_SECONDS = 600  # a server folder this old whose server is not running was left by a killed run


@dataclass(frozen=True)
class Placement:
    """The server's folder: in memory (tmpfs) or on the disk, and why."""

    kind: str
    parent: Path
    why: str

    def public(self) -> dict[str, str]:
        return {"storage": self.kind, "storage_why": self.why}


def server_bytes(rows: Iterable[Row]) -> int:
    """What the server holds at most: every row's download sources, plus the largest upload in flight."""
    rows = list(rows)
    return sum(r.total for r in rows) + max((r.total for r in rows), default=0)


def _tmpfs(path: Path, mounts: str) -> bool:
    return any(
        len(f) > 2 and f[1] == str(path) and f[2] == "tmpfs" for f in (line.split() for line in mounts.splitlines())
    )


def _mem_available(meminfo: str) -> int:
    for line in meminfo.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def place(
    asked: str,
    need: int,
    disk: Path,
    shm: Path = SHM,
    mounts: str | None = None,
    meminfo: str | None = None,
) -> Placement:
    """`asked` is one of CHOICES (the command line checks it). Memory when asked or when `need`
    bytes fit in `shm` (a tmpfs) with SPARE left and within 1/MEMORY_SHARE of the memory
    available; else `disk`. Asked for memory that is not there: one sentence naming the fix."""
    if asked == DISK:
        return Placement(DISK, disk, "asked for (--server-storage disk)")
    mounts = _read("/proc/self/mounts") if mounts is None else mounts
    meminfo = _read("/proc/meminfo") if meminfo is None else meminfo
    gib = need / 2**30
    refusal = None
    if not _tmpfs(shm, mounts):
        refusal = f"{shm} is not a tmpfs here"
    else:
        free = free_bytes(shm)
        available = _mem_available(meminfo)
        if free < need + SPARE:
            refusal = f"{shm} has {free / 2**30:.1f} GiB free, and the run's objects need {gib:.1f} GiB + 1 GiB spare"
        elif need * MEMORY_SHARE > available:
            refusal = (
                f"the run's objects ({gib:.1f} GiB) would take more than 1/{MEMORY_SHARE} of the "
                f"{available / 2**30:.1f} GiB of memory available"
            )
    if refusal is None:
        why = f"the run's objects ({gib:.1f} GiB) fit in {shm}, away from the disk that holds the files it sends"
        return Placement(MEMORY, shm / "shotbench-transfer", why)
    if asked == MEMORY:
        raise UserError(
            f"--server-storage memory cannot be met: {refusal}; pass --server-storage disk or choose smaller rows."
        )
    return Placement(DISK, disk, f"{refusal}, so the server keeps them on the disk")


def sweep_stale(parent: Path, running: Callable[[Path], bool], now: float | None = None) -> list[Path]:
    """Remove the server folders under `parent` that a killed run left (older than STALE_SECONDS and
    `running` says their server is not up): in memory they would hold the machine's RAM until reboot."""
    now = time.time() if now is None else now
    removed = []
    for d in sorted(parent.glob("state-*")) if parent.is_dir() else []:
        try:
            old = now - d.stat().st_mtime > STALE_SECONDS
        except OSError:
            continue
        if old and not running(d):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed

"""Where a transfer run's embedded server keeps its objects: memory when they fit, else the disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shotbench.errors import UserError
from shotbench.transfer.cases import Row
from shotbench.transfer.serverstore import DISK, MEMORY, STALE_SECONDS, place, server_bytes, sweep_stale
from shotbench.units import MiB

GIB = 1 << 30


def _mounts(path: Path, fstype: str = "tmpfs") -> str:
    return f"proc /proc proc rw 0 0\n{fstype} {path} {fstype} rw,nosuid,nodev 0 0\n"


def _meminfo(available: int) -> str:
    return f"MemTotal:       24000000 kB\nMemAvailable:   {available // 1024} kB\n"


def test_the_server_holds_every_rows_sources_and_one_upload_in_flight() -> None:
    rows = [Row(128, MiB), Row(16, 16 * MiB), Row(1, 256 * MiB)]
    assert server_bytes(rows) == (128 + 256 + 256) * MiB + 256 * MiB


def test_objects_that_fit_go_to_memory_and_run_json_says_why(tmp_path: Path) -> None:
    if os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize < 2 * GIB:
        pytest.skip("the test folder has less than 2 GiB free")
    p = place("auto", 1 * GIB, tmp_path / "disk", shm=tmp_path, mounts=_mounts(tmp_path), meminfo=_meminfo(20 * GIB))
    assert p.kind == MEMORY and p.parent == tmp_path / "shotbench-transfer"
    assert p.public() == {"storage": MEMORY, "storage_why": p.why} and "1.0 GiB" in p.why


def test_objects_that_do_not_fit_go_to_the_disk_with_the_reason(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    not_tmpfs = place("auto", GIB, disk, shm=tmp_path, mounts=_mounts(tmp_path, "ext4"), meminfo=_meminfo(20 * GIB))
    assert (not_tmpfs.kind, not_tmpfs.parent) == (DISK, disk) and "is not a tmpfs here" in not_tmpfs.why
    too_big = place("auto", 100 * 2**40, disk, shm=tmp_path, mounts=_mounts(tmp_path), meminfo=_meminfo(20 * GIB))
    assert too_big.kind == DISK and "GiB free, and the run's objects need" in too_big.why
    little_memory = place("auto", GIB, disk, shm=tmp_path, mounts=_mounts(tmp_path), meminfo=_meminfo(3 * GIB))
    assert little_memory.kind == DISK and "more than 1/4 of the 3.0 GiB of memory available" in little_memory.why
    assert place("disk", GIB, disk, shm=tmp_path, mounts=_mounts(tmp_path), meminfo=_meminfo(20 * GIB)).kind == DISK


def test_memory_asked_for_but_missing_is_one_sentence_naming_the_fix(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"cannot be met: .* is not a tmpfs here; pass --server-storage disk"):
        place("memory", GIB, tmp_path, shm=tmp_path, mounts=_mounts(tmp_path, "ext4"), meminfo=_meminfo(20 * GIB))


def test_folders_a_killed_run_left_are_removed_and_live_or_young_ones_kept(tmp_path: Path) -> None:
    left, live, young = (tmp_path / f"state-{n}" for n in ("left", "live", "young"))
    for d in (left, live, young):
        (d / "data").mkdir(parents=True)
    old = 1_000_000.0
    for d in (left, live):
        os.utime(d, (old, old))
    os.utime(young, (old + STALE_SECONDS, old + STALE_SECONDS))
    removed = sweep_stale(tmp_path, lambda d: d == live, now=old + STALE_SECONDS + 1)
    assert removed == [left] and not left.exists() and live.exists() and young.exists()

"""`shotbench transfer` with its own embedded server: where the server kept the run's objects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shotbench.store.s3 import without_s3_settings
from shotbench.transfer.serverstore import SHM, _read, _tmpfs
from support.incli import completed


def _run(tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "runs"
    argv = ["transfer", "--rows", "2x64KiB", "--tools", "awscrt", "--trials", "1", "--networks", "none"]
    done = completed([*argv, "--out", str(out), *extra], without_s3_settings())
    assert done.returncode == 0, done.stderr
    (run,) = out.iterdir()
    return json.loads((run / "run.json").read_text())["data"]["server"]


@pytest.mark.skipif(not _tmpfs(SHM, _read("/proc/self/mounts")), reason="/dev/shm is not a tmpfs on this machine")
def test_a_run_keeps_its_servers_objects_in_memory_and_leaves_none_there(tmp_path: Path) -> None:
    before = set((SHM / "shotbench-transfer").glob("state-*"))
    server = _run(tmp_path)
    assert server["storage"] == "memory" and "fit in /dev/shm" in server["storage_why"]
    assert set((SHM / "shotbench-transfer").glob("state-*")) <= before  # its folder went with the server


def test_a_run_asked_to_keep_them_on_the_disk_says_so(tmp_path: Path) -> None:
    server = _run(tmp_path, "--server-storage", "disk")
    assert (server["storage"], server["storage_why"]) == ("disk", "asked for (--server-storage disk)")

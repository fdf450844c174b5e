"""`shotbench transfer` with its own embedded server: where the server kept the run's objects, and
which CPUs it ran on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shotbench.store.s3 import without_s3_settings
from shotbench.transfer.cores import pin
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


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="this process may run on one CPU only")
def test_a_run_gives_its_server_cpus_of_its_own_and_gives_this_process_its_cpus_back(tmp_path: Path) -> None:
    before = os.sched_getaffinity(0)
    server = _run(tmp_path)  # in this process: the run pins it to the tools' CPUs while it lasts
    assert os.sched_getaffinity(0) == before
    mine = sorted(before)
    half = len(mine) // 2
    assert (server["client_cpus"], server["server_cpus"]) == (mine[: len(mine) - half], mine[len(mine) - half :])
    assert "stands for S3, whose CPU is not the client's" in server["cpus_why"]
    shared = _run(tmp_path / "shared", "--server-cpus", "shared")
    assert (shared["client_cpus"], shared["server_cpus"]) == (mine, [])


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="this process may run on one CPU only")
def test_pinning_moves_every_thread_of_a_running_process() -> None:
    code = "import threading, time; [threading.Thread(target=time.sleep, args=(30,), daemon=True).start() for _ in range(3)]; print(1, flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "1"
        last = max(os.sched_getaffinity(0))
        pin(child.pid, {last})
        tids = os.listdir(f"/proc/{child.pid}/task")
        assert len(tids) == 4 and all(os.sched_getaffinity(int(t)) == {last} for t in tids)
    finally:
        child.kill()
        child.wait(10)

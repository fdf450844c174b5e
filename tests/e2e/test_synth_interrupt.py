"""Stopping `shotbench synth` mid-write: one Ctrl-C (or SIGTERM) ends it at once, its pool with it.

The files are written by a process pool; a plain `with ProcessPoolExecutor` waited for every
running file and then hung in multiprocessing's exit hook, and a second Ctrl-C orphaned the
workers and left hidden `.NNN.h5.partial` files behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from support.runfolder import as_in_a_terminal


def _alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: synth writes in-process, without a pool")
@pytest.mark.parametrize(
    ("sig", "group", "code"),
    [
        pytest.param(signal.SIGINT, True, 130, id="ctrl-c"),  # a terminal signals the whole process group
        pytest.param(signal.SIGINT, False, 130, id="sigint"),  # `kill -INT`, `timeout -s INT`: the main process
        pytest.param(signal.SIGTERM, False, 143, id="sigterm"),  # `timeout`, CI cancellation
    ],
)
def test_one_signal_ends_synth_with_its_workers_and_no_partial_files(
    sig: int, group: bool, code: int, tmp_path: Path
) -> None:
    out = tmp_path / "shots"
    proc = subprocess.Popen(
        [sys.executable, "-m", "shotbench.cli", "synth", "--out", str(out), "--shots", "40"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a foreground command has
        preexec_fn=as_in_a_terminal,
    )
    try:
        deadline = time.time() + 60
        while not list(out.glob("*.h5")) and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None and list(out.glob("*.h5")), "synth did not start writing files"
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children  # the pool's workers (and multiprocessing's helpers) are up
        started = time.time()
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=10)
        assert time.time() - started < 10
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == code
    assert err.startswith("shotbench: interrupted") and err.count("\n") == 1, err  # one line, no traceback
    deadline = time.time() + 5
    while _alive(children) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(children), [p.cmdline() for p in _alive(children)]
    assert not list(out.glob(".*.partial"))

"""The shared process helpers: one lock for every "one process at a time" in the package (a
second holder is refused naming the first, or waits for it, and the lock is gone when its
holder is), and one free-port finder for TCP and UDP."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from shotbench.errors import UserError
from shotbench.locks import Busy, exclusive, held


def _holder(path: Path) -> subprocess.Popen[str]:
    """Another process holding the lock until its stdin closes; returns once it holds it."""
    code = (
        "import sys; from pathlib import Path; from shotbench.locks import exclusive\n"
        "with exclusive(Path(sys.argv[1])):\n    print('held', flush=True); sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_a_second_holder_is_refused_with_the_first_ones_pid(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "run.lock"
    proc = _holder(path)
    try:
        with pytest.raises(Busy) as busy, exclusive(path, wait=False):
            pass
        assert busy.value.pid == proc.pid
        with (
            pytest.raises(UserError, match=f"in use by pid {proc.pid}; wait"),
            held(path, "in use by pid {pid}; wait", "unwritable"),
        ):
            pass
    finally:
        proc.communicate("")
    with held(path, "in use by pid {pid}; wait", "unwritable"):  # released with its holder
        assert path.read_text() == f"{os.getpid()}\n"


def test_a_waiting_holder_gets_the_lock_when_the_first_lets_go(tmp_path: Path) -> None:
    path = tmp_path / "build.lock"
    got = threading.Event()

    def second() -> None:
        with exclusive(path):
            got.set()

    proc = _holder(path)
    waiter = threading.Thread(target=second, daemon=True)
    try:
        waiter.start()
        assert not got.wait(0.5)  # still held by the other process: the second one waits
    finally:
        proc.communicate("")
    assert got.wait(10)  # and has it as soon as the holder is gone
    waiter.join(10)


def test_a_free_port_can_be_bound_for_tcp_and_for_udp() -> None:
    import socket

    from shotbench.processes import free_port

    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        with socket.socket(socket.AF_INET, kind) as s:
            s.bind(("127.0.0.1", free_port(kind)))

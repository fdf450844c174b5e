"""`shotbench cluster workers --run` (`commands/cluster.py`) asks the scheduler before it starts a
worker: a bad address was 30-60 s of Dask's retries and tracebacks, with no sentence of its own."""

from __future__ import annotations

import socket

import pytest

from support.incli import one_line


def test_run_against_a_closed_port_is_one_sentence_before_any_worker() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    code, line = one_line(
        ["cluster", "workers", "--env", "main", "--nworkers", "1", "--scheduler", f"tcp://127.0.0.1:{port}", "--run"]
    )
    assert code == 2 and f"no Dask scheduler answers at tcp://127.0.0.1:{port}" in line and "check --scheduler" in line


@pytest.mark.parametrize("nworkers", ["0", "-1", "1025", "100000", "many"])
def test_nworkers_is_checked_when_the_arguments_are_read(nworkers: str) -> None:
    """`--nworkers 100000` printed, and with --run started, a hundred thousand workers a pool."""
    code, line = one_line(["cluster", "workers", "--env", "main", "--scheduler", "nonsense", "--nworkers", nworkers])
    assert code == 2 and "--nworkers" in line and "from 1 to 1024" in line
    assert "tcp://HOST:PORT" not in line  # refused before the scheduler's address is looked at

"""The flags shotbench passes to its own child processes: typed, and a wrong one stops the child."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shotbench.builds.verify import VerifyArgs
from shotbench.childargs import ChildArgsError, parse
from shotbench.store.faultproxy import ProxyArgs


def test_values_take_their_field_types() -> None:
    args = parse(VerifyArgs, ["--bucket", "b", "--key", "k.h5", "--local", "/x.h5", "--page-buf", "4096", "--precheck"])
    assert args == VerifyArgs(bucket="b", key="k.h5", local=Path("/x.h5"), page_buf=4096, precheck=True)
    assert parse(VerifyArgs, ["--bucket", "b", "--key", "k"]).page_buf == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["--port", "1"],  # required flags missing
        ["--port", "one", "--upstream-port", "2", "--stats", "s", "--faults", "{}"],  # not an int
        ["--port", "1", "--upstream-port", "2", "--stats", "s", "--faults"],  # no value
        ["--port", "1", "--upstream-port", "2", "--stats", "s", "--faults", "{}", "--extra", "x"],
        ["1"],
    ],
)
def test_a_wrong_flag_is_refused(argv: list[str]) -> None:
    with pytest.raises(ChildArgsError):
        parse(ProxyArgs, argv)


def test_a_child_started_wrongly_says_so_in_one_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "shotbench.bench.driver", "--bogus"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "python -m shotbench.bench.driver: unexpected argument '--bogus'"

"""CPU-seconds of each test, its own and its children's: `SHOTBENCH_TEST_CPU=FILE pytest ...`.

With that variable set, tests/conftest.py registers this plugin, and each test appends one JSON
line to FILE: its node id, the CPU time of the test process (`self`) and of the processes it
started and waited for (`children`, from `getrusage`), and its wall time, all taken around the
whole test (setup, call, teardown). A module or session fixture is charged to the first test that
needs it. Works under xdist: each worker runs one test at a time, so a test's deltas are its own.
Processes nobody waited for (a daemonised server) are not counted; `scripts/suite-cpu.py` counts
those, for a whole command.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator

import pytest


def _cpu() -> tuple[float, float]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    before, started = _cpu(), time.monotonic()
    yield
    after = _cpu()
    line = {
        "id": item.nodeid,
        "self": round(after[0] - before[0], 3),
        "children": round(after[1] - before[1], 3),
        "wall": round(time.monotonic() - started, 3),
    }
    with open(os.environ["SHOTBENCH_TEST_CPU"], "a") as fh:
        fh.write(json.dumps(line) + "\n")

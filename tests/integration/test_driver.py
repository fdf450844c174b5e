"""The driver a run talks to, as a real process: version checks both ways, a killed worker replaced and named, quiet warm workers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shotbench.backends.base import Source
from shotbench.bench import protocol
from shotbench.bench.protocol import (
    PROTOCOL_VERSION,
    Close,
    Done,
    Prepare,
    ProtocolMismatch,
    Spec,
)


@pytest.fixture
def main_driver(tmp_path: Path) -> Iterator[Any]:
    """The real driver of the main environment (this interpreter), stopped after the test."""
    import sys

    from shotbench.backends.base import child_env
    from shotbench.bench.driverpool import DriverProc

    drv = DriverProc("main", Path(sys.executable), child_env({}), tmp_path / "driver.log", None)
    yield drv
    drv.stop(timeout=5)


def test_the_orchestrator_refuses_a_driver_of_another_version(
    main_driver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real driver answers the hello; an orchestrator one protocol version ahead ends it and
    says what to do."""
    monkeypatch.setattr(protocol, "PROTOCOL_VERSION", PROTOCOL_VERSION + 1)
    words = f"protocol {PROTOCOL_VERSION} where this checkout speaks {PROTOCOL_VERSION + 1}"
    with pytest.raises(ProtocolMismatch, match=rf"^the main environment: .*{words}.*`make envs`\.$"):
        main_driver.start()
    assert not main_driver.alive()


def test_the_driver_refuses_a_request_from_another_version_and_goes_on(main_driver: Any) -> None:
    main_driver.start()
    assert main_driver.versions["python"] and main_driver.versions["h5py"]
    proc = main_driver.proc
    line = {**Prepare(1, Spec("local", Source("local"), 0, 1 << 20)).to_json(), "clock": "submit"}
    proc.stdin.write(json.dumps(line) + "\n")
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    assert reply["ok"] is False and "unknown field clock" in reply["error"] and "`make envs`" in reply["error"]
    assert main_driver.request(Close(3)) == Done()  # still answering
    main_driver.stop(timeout=10)
    assert proc.wait(timeout=1) == 0


@pytest.mark.slow  # real Dask processes, and a wait that is the point of the test
def test_a_worker_that_died_between_cases_is_waited_for_and_named(main_driver: Any, tmp_path: Path) -> None:
    """A reader that kills its worker process (a crash in a C library) left the next case of that
    worker count without a worker: it failed as "integer modulo by zero". The driver now waits for
    the nanny's replacement and its log says how the process ended."""
    import os
    import signal
    import time

    main_driver.start()
    spec = Spec("local", Source("local"), 0, 1 << 20)
    first = main_driver.request(Prepare(1, spec))
    (pid,) = [w.pid for w in first.warm]
    os.kill(pid, signal.SIGKILL)
    log = tmp_path / "driver.log"
    deadline = time.monotonic() + 20
    while f"Worker process {pid} was killed by signal 9" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert f"dask: Worker process {pid} was killed by signal 9" in log.read_text()
    again = main_driver.request(Prepare(1, spec))
    assert len(again.workers) == 1 and again.workers != first.workers and again.warm[0].pid != pid


def test_warm_workers_keep_quiet_housekeeping() -> None:
    """The workers a case runs on (and the idle ones beside them, and those a grown cluster adds)
    check their event loop once a second, not every 20 ms, and run no GIL monitor: Dask's defaults
    cost the idle warm clusters of a default run 41-44 % of one core, shared with the case measured."""
    import dask

    from shotbench.bench.driver import QUIET_DASK_CONFIG, Driver

    drv = Driver(None)
    try:
        drv._client(1)
        client, names = drv._client(2)  # the worker the grown cluster adds is made under them too
        got = client.run(lambda: {k: dask.config.get(k) for k in QUIET_DASK_CONFIG}, workers=names)
    finally:
        drv.shutdown()
    assert list(got.values()) == [QUIET_DASK_CONFIG] * 2
    assert QUIET_DASK_CONFIG["distributed.admin.tick.interval"] == "1s"


def test_one_warm_cluster_grows_to_the_largest_case_and_serves_the_smaller_ones() -> None:
    """A case of 2 workers after one of 1 adds a worker to the environment's cluster instead of
    starting a second cluster; a later case of 1 runs on one of those two. A cluster per worker
    count started three worker processes where two serve."""
    import psutil

    from shotbench.bench.driver import Driver

    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    drv = Driver(None)
    try:
        client, one = drv._client(1)
        client_two, two = drv._client(2)
        client_again, again = drv._client(1)
        workers = client.run(lambda: __import__("os").getpid())
        spawned = {p.pid for p in me.children(recursive=True)} - before
        size = drv.size
    finally:
        drv.shutdown()
    assert client_two is client and client_again is client and size == 2
    assert len(two) == 2 and set(one) < set(two) and again == two[:1]
    assert set(workers.values()) <= spawned and len(workers) == 2

"""The driver of one backend environment: requests on stdin, replies on stdout, one JSON line each.

The orchestrator (main environment) starts `<env python> -m shotbench.bench.driver --serve` once
per environment; the messages are `bench/protocol.py`'s. The driver keeps a warm LocalCluster per
worker count, so process start-up, imports and client creation all happen before the clock; the
clock covers release-to-last-rows only. What the Dask workers run is `bench/worker.py`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, cast

from shotbench.bench import pools
from shotbench.bench.casesettings import case_settings, submit
from shotbench.bench.protocol import (
    PROTOCOL_VERSION,
    Close,
    Done,
    Failed,
    Gather,
    GatherReply,
    Hello,
    HelloReply,
    Pool,
    PoolReply,
    Prepare,
    PrepareReply,
    Quit,
    Reply,
    Request,
    Row,
    Run,
    RunReply,
    Spec,
    Upstream,
    UpstreamReply,
    read_request,
)
from shotbench.bench.worker import (
    gather_time,
    index_files,
    list_file,
    run_task,
    run_task_released,
    versions,
    warm,
)
from shotbench.plan.matrix import Task
from shotbench.redact import hide, scrub
from shotbench.units import MiB

SCHEDULER_TIMEOUT_S = 10  # connecting to a user's scheduler
WORKERS_TIMEOUT_S = SCHEDULER_TIMEOUT_S * 6  # waiting for workers: a user's, a grown cluster's, a restarted one
TASKS_TIMEOUT_S = 60  # after the rows (or a lost worker): the tasks' own ends, which only surface errors

# Scheduler/worker settings for our measured clusters: no work stealing (tasks are pinned),
# no statistical profiler thread, no memory monitor, and quiet housekeeping. A default run kept
# 8 warm clusters (4 environments x 1 and 2 workers; one per environment now) while one case runs;
# idle, with Dask's defaults, they took 41-44 % of one core (event-loop health checks every 20 ms,
# a system monitor every 500 ms), and 10 % with the settings below: CPU that the measured case shared.
# Side by side (3 default runs each, alternating), the HDF5 backends' cases took 12-32 % less
# time with them; download and raw-get, which wait outside Python, did not change.
QUIET_DASK_CONFIG = {
    "distributed.admin.tick.interval": "1s",  # only feeds "event loop unresponsive" warnings
    "distributed.admin.system-monitor.interval": "5s",  # only feeds the dashboard's plots
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.worker.memory.monitor-interval": "1s",  # its thresholds are all off (above)
}
OUR_DASK_CONFIG = {
    "distributed.scheduler.work-stealing": False,
    "distributed.worker.profile.enabled": False,
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
    "distributed.scheduler.worker-saturation": "inf",
    **QUIET_DASK_CONFIG,
}


class _WorkerDeaths(logging.Handler):
    """Passes on the nanny's word of why a worker process ended ("… was killed by signal 11"): it
    logs that at INFO, which `silence_logs` hides, and a reader crashing a worker would otherwise
    show only as a later case that found too few workers."""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.levelno >= logging.ERROR or message.startswith("Worker process"):
            print(f"dask: {message}", file=sys.stderr, flush=True)


def _report_worker_deaths() -> None:
    log = logging.getLogger("distributed.nanny")
    if not any(isinstance(h, _WorkerDeaths) for h in log.handlers):
        log.addHandler(_WorkerDeaths())
    log.setLevel(logging.INFO)
    log.propagate = False


def _local_ip_towards(address: str) -> str:
    """This host's IP on the route to the scheduler, so remote workers can reach the driver."""
    import socket
    from urllib.parse import urlsplit

    host = urlsplit(address if "://" in address else f"tcp://{address}").hostname or "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((host, 9))
        return s.getsockname()[0]


class Driver:
    """The warm cluster of one environment and the case prepared on it (`current`).

    One LocalCluster, grown to the largest case so far; a smaller case runs on the first of its
    workers, as on a user's cluster (`--scheduler`). A cluster per worker count started 1 + 2
    workers per environment for a default run where 2 serve, and its idle processes shared the
    cores with the measured case (1.5-1.7 % of a core against 0.9 % per environment, idle)."""

    def __init__(self, scheduler: str | None, pool: str | None = None) -> None:
        self.scheduler = scheduler
        self.pool_env = pool  # on a user's cluster: the environment whose workers this driver uses
        self.settings = case_settings()  # what every task carries (read/casesettings.py)
        self.local: tuple[Any, Any] | None = None  # the warm LocalCluster and its client
        self.size = 0  # its workers
        self.external: Any = None
        self.current: tuple[Any, list[str], Spec] | None = None

    def _client(self, workers: int) -> tuple[Any, list[str]]:
        import dask
        from distributed import Client, LocalCluster

        if self.scheduler:
            client = self._external()
            names = self._pool_names()
            deadline = time.monotonic() + WORKERS_TIMEOUT_S
            while len(names) < workers and time.monotonic() < deadline:  # still registering: wait, boundedly
                time.sleep(0.5)
                names = self._pool_names()
            if len(names) < workers:
                raise RuntimeError(
                    f"the {self.pool_env} pool of the cluster at {self.scheduler} has {len(names)} workers, the case "
                    f"needs {workers}; add some with `{pools.start_hint(self.scheduler, self.pool_env or 'main')}`"
                )
            return client, names[:workers]
        if self.local is None:
            with dask.config.set(OUR_DASK_CONFIG):
                cluster = LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",
                    silence_logs=logging.ERROR,
                    memory_limit=0,
                )
                client = Client(cluster, set_as_default=False)
            _report_worker_deaths()  # once distributed is imported: its import configures its loggers
            client.wait_for_workers(workers)
            self.local, self.size = (cluster, client), workers
            print(f"dask dashboard: {client.dashboard_link}", file=sys.stderr, flush=True)
        elif self.size < workers:  # grown, not started anew: a smaller case later runs on part of it
            cluster, client = self.local
            with dask.config.set(OUR_DASK_CONFIG):  # held until they exist: a nanny takes the config it is made under
                cluster.scale(workers)
                try:
                    client.wait_for_workers(workers, timeout=WORKERS_TIMEOUT_S)
                except TimeoutError:
                    raise RuntimeError(
                        f"the local Dask cluster did not grow from {self.size} to {workers} workers within a minute "
                        "(the cause is in the driver log)"
                    ) from None
            self.size = workers
        client = self.local[1]
        names = sorted(client.scheduler_info()["workers"])
        if len(names) < self.size:  # a worker process died since the last case; its nanny starts another
            print(
                f"dask: {len(names)} of {self.size} workers registered; waiting for the restarted ones",
                file=sys.stderr,
                flush=True,
            )
            with contextlib.suppress(Exception):
                client.wait_for_workers(self.size, timeout=WORKERS_TIMEOUT_S)
            names = sorted(client.scheduler_info()["workers"])
            if len(names) < workers:
                raise RuntimeError(
                    f"the local Dask cluster has {len(names)} of its {workers} workers: a worker process "
                    "died and did not come back within a minute (its cause is in the driver log)"
                )
        return client, names[:workers]

    def _external(self) -> Any:
        from distributed import Client

        if self.external is None:
            self.external = Client(self.scheduler, set_as_default=False, timeout=SCHEDULER_TIMEOUT_S)
        return self.external

    def _pool_names(self) -> list[str]:
        """The addresses of this environment's workers (`read/pools.py`: by their resource)."""
        info = self._external().scheduler_info()["workers"]
        return sorted(a for a, w in info.items() if pools.env_of(w.get("resources")) == self.pool_env)

    def pool(self) -> PoolReply:
        """This environment's pool on the user's cluster, each worker as it reports itself."""
        client = self._external()
        names = self._pool_names()
        info = client.scheduler_info()["workers"]
        # a worker of a Python without this shotbench cannot answer: it is named as running no h5py
        found = client.run(versions, workers=names, on_error="return") if names else {}
        workers = [
            {
                **(
                    {k: str(v) for k, v in found[a].items()}
                    if isinstance(found.get(a), dict)
                    else {"h5py_error": scrub(str(found.get(a)))[:200]}
                ),
                "address": a,
                "host": str(info[a].get("host", "")),
            }
            for a in names
        ]
        try:
            sched = client.get_versions()["scheduler"]["packages"].get("distributed", "")
        except Exception:  # noqa: BLE001 - the version is recorded when the scheduler tells it
            sched = ""
        return PoolReply(str(sched or ""), workers)

    def _gather(self, client: Any, futs: list[Any], names: list[str], what: str) -> list[Any]:
        """The results of `futs`, within a bound: a task pinned to a worker that has left would
        otherwise wait for it forever (a lost worker is named)."""
        if self.scheduler:  # polled: `distributed.wait` needs a default client, which ours is not
            deadline = time.monotonic() + TASKS_TIMEOUT_S
            while not all(f.done() for f in futs):
                if time.monotonic() > deadline:
                    self._check_alive(client, names)
                    client.cancel(futs)
                    raise RuntimeError(f"{what} did not finish within {TASKS_TIMEOUT_S} s")
                time.sleep(0.02)
        return cast(list[Any], client.gather(futs))

    def _check_alive(self, client: Any, names: list[str]) -> None:
        """Raise, naming it, if a worker this case was pinned to has left the cluster."""
        alive = set(client.scheduler_info()["workers"])
        gone = [w for w in names if w not in alive]
        if gone:
            raise RuntimeError(
                f"the Dask worker {gone[0]} left the cluster during the case (killed, or its host went away)"
            )

    def _check_builds(self, names: list[str], info: list[Any]) -> None:
        """Each warmed worker's libhdf5 is this environment's, or the case fails naming the worker."""
        mine = versions().get("hdf5", "")
        for w, got in zip(names, info):
            if got.hdf5 != mine:
                raise RuntimeError(
                    f"the Dask worker {w} in the {self.pool_env} pool runs libhdf5 {got.hdf5 or '(none)'}, where this "
                    f"environment's build is {mine}; start the right one with "
                    f"`{pools.start_hint(self.scheduler or '', self.pool_env or 'main')}`"
                )

    def prepare(self, req: Prepare) -> PrepareReply:
        from shotbench.store.credentials import spec_credentials

        client, names = self._client(int(req.workers))
        spec = req.spec
        creds = spec_credentials(spec.credentials)
        if creds is not None:  # so that this process's error replies hide them too
            hide(creds.secrets())
        futs = [submit(client, self.settings, warm, spec, worker=w) for w in names]
        info = self._gather(client, futs, names, "warming the workers")
        if self.scheduler:  # checked at the start of the run too; a worker may have been replaced since
            self._check_builds(names, info)
        self.current = (client, names, spec)
        return PrepareReply(client.dashboard_link or "", names, info)

    def run(self, req: Run) -> RunReply:
        assert self.current is not None, "prepare before run"
        self._build_indexes(req.tasks)
        return self._run_released(req)

    def _build_indexes(self, tasks: list[Task]) -> None:
        """For readers with a per-file index: build the missing ones on the workers, untimed."""
        from shotbench.backends import registry

        assert self.current is not None
        client, names, spec = self.current
        if not getattr(registry.get(spec.backend), "builds_index", False):
            return
        files = sorted({(it.key, it.size) for t in tasks for part in t.parts for it in part.items})
        batches = [files[i :: len(names)] for i in range(len(names))]
        futs = [submit(client, self.settings, index_files, spec, b, worker=w) for w, b in zip(names, batches) if b]
        self._gather(client, futs, names, "building the indexes")

    def _listener(self) -> Any:
        import socket

        if getattr(self, "_sock", None) is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("0.0.0.0" if self.scheduler else "127.0.0.1", 0))
            sock.listen(256)
            self._sock = sock
            self._host = "127.0.0.1" if not self.scheduler else _local_ip_towards(self.scheduler)
        return self._sock

    def _run_released(self, req: Run) -> RunReply:
        """Park one task per worker, release them together, stop when the last rows arrive."""
        import secrets
        import selectors
        import socket

        assert self.current is not None
        client, names, spec = self.current
        tasks = req.tasks
        lsock = self._listener()
        token = secrets.token_hex(8)
        addr = [self._host, lsock.getsockname()[1]]
        pinned = [names[i % len(names)] for i in range(len(tasks))]
        futs = [submit(client, self.settings, run_task_released, spec, t, addr, token, worker=w)
                for w, t in zip(pinned, tasks)]  # fmt: skip
        conns: list[socket.socket] = []
        lsock.settimeout(0.2)
        deadline = time.monotonic() + float(req.park_timeout)
        try:
            while len(conns) < len(tasks):
                try:
                    conn, _ = lsock.accept()
                except TimeoutError:
                    bad = [f for f in futs if f.status == "error"]
                    if bad:
                        bad[0].result()
                    if self.scheduler:  # a user's cluster: a pinned worker may have gone
                        self._check_alive(client, pinned)
                    if time.monotonic() > deadline:
                        raise RuntimeError("tasks did not start within the park timeout") from None
                    continue
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conn.settimeout(30)
                hello = b""
                while not hello.endswith(b"\n"):
                    chunk = conn.recv(64)
                    if not chunk:
                        break
                    hello += chunk
                if hello.strip().decode(errors="replace") != token:
                    conn.close()
                    continue
                conn.setblocking(False)
                conns.append(conn)
            sel = selectors.DefaultSelector()
            buffers: dict[int, bytearray] = {}
            started = time.time()
            t0 = time.perf_counter()
            for c in conns:
                c.setblocking(True)
                c.sendall(b"g")
                c.setblocking(False)
                sel.register(c, selectors.EVENT_READ)
                buffers[c.fileno()] = bytearray()
            rows: list[Row] = []
            pending = len(conns)
            silent = 0  # connections that closed without a row: their worker died mid-task
            while pending:
                for key, _ in sel.select(timeout=1.0):
                    c = cast(socket.socket, key.fileobj)
                    try:
                        data = c.recv(MiB)
                    except ConnectionResetError:  # its worker died mid-task: no rows (named below)
                        data = b""
                    buf = buffers[c.fileno()]
                    buf += data
                    if buf.endswith(b"\n") or not data:
                        total = time.perf_counter() - t0
                        sel.unregister(c)
                        pending -= 1
                        if buf.strip():
                            rows.extend(json.loads(bytes(buf)))
                        else:
                            silent += 1
                if pending and any(f.status == "error" for f in futs):
                    [f for f in futs if f.status == "error"][0].result()
                if pending and self.scheduler:
                    self._check_alive(client, pinned)
            finished = time.time()
            sel.close()
        except BaseException:
            if self.scheduler:  # on a user's cluster, tasks left behind would hold their workers
                client.cancel(futs)
            raise
        finally:
            for c in conns:
                c.close()
        if silent and self.scheduler:  # the scheduler hears of a dead worker within seconds
            until = time.monotonic() + SCHEDULER_TIMEOUT_S
            while time.monotonic() < until:
                self._check_alive(client, pinned)
                time.sleep(0.5)
            client.cancel(futs)
            raise RuntimeError(f"{silent} task(s) closed their connection without rows (their worker died?)")
        self._gather(client, futs, pinned, "the case's tasks")  # surfaces task exceptions; after the clock
        return RunReply(rows, total, started, finished)

    def upstream(self, req: Upstream) -> UpstreamReply:
        """The upstream pattern: a fresh Client per case (created before the clock), default
        Dask settings, `len//W+1` batches, one submit/gather round per signal, plus the
        separately timed gather-info pass."""
        from distributed import Client

        w = int(req.workers)
        spec = req.spec
        e0 = time.perf_counter()
        client = Client(
            processes=True, n_workers=w, threads_per_worker=1, dashboard_address=":0", silence_logs=logging.ERROR
        )
        try:
            from shotbench.plan.matrix import split_upstream

            i0 = time.perf_counter()
            batches = split_upstream(req.info_files, w)
            client.gather([client.submit(list_file, spec, b, pure=False) for b in batches])
            info_time = time.perf_counter() - i0
            t0 = time.perf_counter()
            rows = []
            for rnd in req.rounds:
                futs = [client.submit(run_task, spec, t, pure=False) for t in rnd]
                for rs in client.gather(futs):
                    rows.extend(rs)
            total = time.perf_counter() - t0
        finally:
            client.close()
            if client.cluster is not None:
                client.cluster.close()
        return UpstreamReply(rows, total, info_time, time.perf_counter() - e0)

    def gather(self, req: Gather) -> GatherReply:
        """Time the listing of one file's signal datasets on a warm worker (before the clock)."""
        assert self.current is not None, "prepare before gather"
        client, names, spec = self.current
        seconds = self._gather(client, [submit(client, self.settings, gather_time, spec, req.key, int(req.size),
                                               worker=names[0])], names[:1], "the gather-time listing")[0]  # fmt: skip
        return GatherReply(None if seconds is None else float(seconds))

    def close(self, workers: int) -> None:
        """Close the warm cluster if it has `workers` workers (the size the orchestrator knows it by)."""
        if self.size == workers:
            self._close_local()

    def _close_local(self) -> None:
        if self.local is None:
            return
        (cluster, client), self.local, self.size = self.local, None, 0
        client.close()
        cluster.close()

    def shutdown(self) -> None:
        try:
            self._close_local()
        except Exception:  # noqa: BLE001 - shutting down anyway
            pass
        if self.external is not None:
            self.external.close()

    def answer(self, req: Request[Any]) -> Reply:
        """Carry out one request."""
        if isinstance(req, Hello):  # the orchestrator compares the versions and refuses a mismatch
            return HelloReply(PROTOCOL_VERSION, versions(), os.getpid())
        if isinstance(req, Prepare):
            return self.prepare(req)
        if isinstance(req, Run):
            return self.run(req)
        if isinstance(req, Gather):
            return self.gather(req)
        if isinstance(req, Upstream):
            return self.upstream(req)
        if isinstance(req, Pool):
            return self.pool()
        if isinstance(req, Close):
            self.close(int(req.workers))
        return Done()


def serve(scheduler: str | None, pool: str | None = None) -> int:
    """Answer one JSON request per stdin line until `quit` or end of input."""
    if os.getpgrp() == os.getpid():  # started by the orchestrator in a group of its own
        from shotbench.processes import end_group_on

        end_group_on()
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to stderr, not into the protocol
    driver = Driver(scheduler, pool)
    try:
        for line in iter(sys.stdin.readline, ""):
            if not line.strip():
                continue
            req: Request[Any] | None = None
            try:
                req = read_request(json.loads(line))
                reply: Reply | Failed = driver.answer(req)
            except Exception as exc:  # noqa: BLE001 - the orchestrator records it with the case
                reply = Failed(scrub(f"{type(exc).__name__}: {exc}")[:500])
            proto.write(json.dumps(reply.to_json()) + "\n")
            proto.flush()
            if isinstance(req, Quit):
                break
    finally:
        driver.shutdown()
    return 0


@dataclass(frozen=True)
class DriverArgs:
    """How the orchestrator starts this driver: `--serve` answers JSON requests on stdin."""

    serve: bool = False
    scheduler: str | None = None
    pool: str | None = None  # on --scheduler: the environment whose workers to use


def main(argv: list[str] | None = None) -> int:
    from shotbench.childargs import parse_or_exit

    args = parse_or_exit(DriverArgs, argv, "python -m shotbench.bench.driver")
    if args.serve:
        return serve(args.scheduler, args.pool)
    print(json.dumps(versions()))
    return 0


if __name__ == "__main__":  # how the orchestrator starts an environment's driver (bench/driverpool.py)
    sys.exit(main())

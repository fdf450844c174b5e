"""What runs inside a backend's Python environment: the Dask task functions and a driver.

The orchestrator (main environment) starts `<env python> -m shotbench.read.worker` once per
environment and talks to it with one JSON object per line. The driver keeps a warm
LocalCluster per worker count, so process start-up, imports and client creation all happen
before the clock; the clock covers submit-to-gather only. Credentials arrive as AWS_*
environment variables, never on the command line.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from itertools import groupby
from typing import Any

from shotbench.read.plan import task_from_json
from shotbench.redact import scrub

_BACKENDS: dict[str, Any] = {}
SCHEDULER_TIMEOUT_S = 10  # connecting to a user's scheduler; waiting for its workers: six times this

# Scheduler/worker settings for our measured clusters: no work stealing (tasks are pinned),
# no statistical profiler thread, no memory monitor.
OUR_DASK_CONFIG = {
    "distributed.scheduler.work-stealing": False,
    "distributed.worker.profile.enabled": False,
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
    "distributed.scheduler.worker-saturation": "inf",
}


def versions() -> dict[str, str]:
    """Library versions as this interpreter actually has them."""
    import importlib.metadata as md
    import platform

    out = {"python": platform.python_version()}
    for pkg in ("h5py", "numpy", "dask", "distributed", "s3fs", "fsspec", "obstore", "boto3", "botocore", "aiobotocore"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    try:
        import h5py

        out["hdf5"] = h5py.version.hdf5_version
        out["ros3"] = str("ros3" in h5py.registered_drivers())
    except Exception as exc:  # noqa: BLE001 - a broken h5py is reported, not fatal here
        out["h5py_error"] = scrub(str(exc))
    return out


def backend_for(spec: dict[str, Any]) -> Any:
    """This worker process's instance of the backend described by `spec` (created once)."""
    key = json.dumps(spec, sort_keys=True)
    inst = _BACKENDS.get(key)
    if inst is None:
        from shotbench.backends import registry
        from shotbench.backends.base import ReadSettings, Source, s3_from_environ

        cls = registry.get(spec["backend"])
        bc = spec.get("bc")
        settings = ReadSettings(int(spec["pb"]), int(spec["cc"]), dict(spec.get("options") or {}),
                                None if bc is None else int(bc))
        inst = cls(Source(**spec["source"]), settings)
        inst.setup(s3_from_environ())
        _BACKENDS.clear()  # one live backend per process: cases never overlap on a worker
        _BACKENDS[key] = inst
    return inst


def warm(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs once per worker before the clock: imports, h5py, backend clients."""
    import shotbench.read.shotfile  # noqa: F401

    backend_for(spec)
    return {"pid": os.getpid(), "hdf5": versions().get("hdf5", "")}


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except Exception:  # noqa: BLE001 - outside a Dask worker (tests, --scheduler quirks)
        return ""


def execute(backend: Any, task_json: dict[str, Any], verify: bool = False) -> list[dict[str, Any]]:
    """Read every part of one task, timing each; one small dict per CSV row. With `verify`,
    each row also carries a CRC-32 of every signal it read, for the orchestrator to check."""
    task = task_from_json(task_json)
    address = _worker_address()
    meter = getattr(backend, "meter", None)
    if meter is not None:
        meter.drain()  # requests made before this task (warm-up, listing) are not its own
    try:
        if task.whole and backend.reads_hdf5:
            return [dict(read_whole(backend, task, verify), **{"dask-worker": address})]
        rows: list[dict[str, Any]] = []
        for part in task.parts:
            t0 = time.perf_counter()
            reads = Reads(backend, verify)
            if backend.reads_hdf5:
                for key, group in groupby(part.items, key=lambda it: it.key):
                    reads.read(key, list(group))
                nobjs = reads.opens
            else:
                for it in part.items:
                    reads.fetch(it)
                nobjs = len(part.items)
            elapsed = time.perf_counter() - t0
            rows.append({
                "worker#": task.index, "obj-id": part.obj_id, "time": elapsed, "objs": nobjs,
                "dsets": reads.dsets, "bytes": reads.bytes, "open": reads.open_time, "error": reads.error,
                "dask-worker": address, **reads.columns(),
            })
        return rows
    finally:
        backend.end_task()


class Reads:
    """What one CSV row read, and what it cost besides the clock: counters, what libhdf5 did,
    index stats, checksums, retries and the client's requests (taken after the clock stops)."""

    def __init__(self, backend: Any, verify: bool) -> None:
        from shotbench.read.effective import PartReadback

        self.backend = backend
        self.readback = PartReadback()
        self.crcs: list[list[Any]] | None = [] if verify else None
        self.keys: list[str] = []
        self.sent_again = backend.retries()
        self.dsets = self.bytes = self.opens = 0
        self.open_time = 0.0
        self.error = ""

    def read(self, key: str, items: list[Any]) -> None:
        """Open `key` once and read `items` from it."""
        d, n, o, err = read_open(self.backend, key, items, self.readback, self.crcs)
        self.dsets, self.bytes, self.open_time = self.dsets + d, self.bytes + n, self.open_time + o
        self.error = self.error or err
        self.opens += 1
        self.keys.append(key)

    def fetch(self, it: Any) -> None:
        """A raw GET of one item's bytes (no HDF5)."""
        try:
            self.bytes += self.backend.fetch(it.key, it.start, it.length)
        except Exception as exc:  # noqa: BLE001 - recorded in the row, the case goes on
            self.error = self.error or scrub(f"{it.key}: {type(exc).__name__}: {exc}")[:300]

    def columns(self) -> dict[str, Any]:
        backend = self.backend
        cols = {
            **(self.readback.columns() if backend.reads_hdf5 else {}),
            **index_columns(backend, sorted(set(self.keys))),
            **({"crcs": self.crcs} if self.crcs is not None else {}),
            "retries": "" if self.sent_again is None else backend.retries() - self.sent_again,
        }
        meter = getattr(backend, "meter", None)
        if meter is not None:
            cols.update(meter.drain().row())
        return cols


def index_columns(backend: Any, keys: list[str]) -> dict[str, Any]:
    """index-time/index-bytes of the files a row read (after its clock; empty without an index)."""
    stats = [s for s in (backend.index_stats(k) for k in keys) if s is not None]
    if not stats:
        return {}
    return {"index-time": sum(s[0] for s in stats), "index-bytes": sum(s[1] for s in stats)}


def index_files(spec: dict[str, Any], files: list[list[Any]]) -> int:
    """Build the per-file indexes a case will read through (before its clock starts).

    A file that cannot be indexed is left alone: the timed read tries again and records
    the reason in that row's error cell."""
    backend = backend_for(spec)
    built = 0
    for key, size in files:
        try:
            backend.build_index(key, int(size))
            built += 1
        except Exception:  # noqa: BLE001 - reported by the read, see above
            pass
    return built


def read_open(backend: Any, key: str, items: list[Any], readback: Any = None,
              crcs: list[list[Any]] | None = None) -> tuple[int, int, float, str]:
    """Open one file, read `items` from it: (datasets, bytes, open seconds, error or "").

    After the reads, what libhdf5 did goes into `readback` (effective settings, page-buffer
    counters), and the client meter samples its connections before the file closes. With
    `crcs`, each signal read through h5py is read with its CRC-32, appended there."""
    from shotbench.backends.unsupported import error_cell
    from shotbench.read.shotfile import read_signal_crc

    meter = getattr(backend, "meter", None)
    ndsets = nbytes = 0
    open_time = 0.0
    try:
        o0 = time.perf_counter()
        fh = backend.open(key, items[0].size)
        open_time = time.perf_counter() - o0
        with fh:
            try:
                for it in items:
                    if crcs is not None and hasattr(fh, "id"):
                        d, n, crc = read_signal_crc(fh, it.shot, it.signal)
                        crcs.append([key, it.shot, it.signal, crc])
                    else:
                        d, n = backend.read_signal(fh, it.shot, it.signal)
                    ndsets += d
                    nbytes += n
                if readback is not None:
                    readback.add(*backend.read_back(fh))
            finally:
                if meter is not None:
                    meter.before_close()
    except Exception as exc:  # noqa: BLE001 - recorded in the row, the case goes on
        return ndsets, nbytes, open_time, scrub(error_cell(key, exc))[:300]
    return ndsets, nbytes, open_time, ""


def read_whole(backend: Any, task: Any, verify: bool = False) -> dict[str, Any]:
    """One row for a task that reads several objects: upstream's many-shot reader.

    The task's items are read from one open file per run of the same key, so a many-shot task
    (and `partial-once`) opens its file once; with `reopen` (`partial-each`, one part per
    signal) the file is opened for every part. `open` is the summed open time, `read` the
    rest; `objs` counts objects (shots, signals), not files.
    """
    reads = Reads(backend, verify)
    t0 = time.perf_counter()
    runs = [p.items for p in task.parts] if task.reopen else [[it for p in task.parts for it in p.items]]
    for run in runs:
        for key, group in groupby(run, key=lambda it: it.key):
            reads.read(key, list(group))
    total = time.perf_counter() - t0
    return {
        "worker#": task.index, "obj-id": "*", "time": total, "objs": len(task.parts), "dsets": reads.dsets,
        "bytes": reads.bytes, "open": reads.open_time, "read": total - reads.open_time, "opens": reads.opens,
        "error": reads.error, **reads.columns(),
    }


def gather_time(spec: dict[str, Any], key: str, size: int) -> float | None:
    """Upstream's `gather-time`: open the file and list every signal dataset (`visititems`).

    None for readers whose files are not h5py objects (kerchunk, pyfive, h5coro): upstream's
    listing is an h5py call, and another library's walk would be another measurement."""
    import h5py

    backend = backend_for(spec)
    if not backend.reads_hdf5:
        return None
    t0 = time.perf_counter()
    found: list[str] = []
    try:
        fh = backend.open(key, size)
    except Exception:  # noqa: BLE001 - the timed read meets the same error and records it in its row
        backend.end_task()
        return None
    with fh:
        if not isinstance(fh, h5py.File):
            backend.end_task()
            return None
        fh.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) and "shot" in obj.attrs else None)
    seconds = time.perf_counter() - t0
    backend.end_task()
    if not found:
        raise RuntimeError(f"{key} holds no signal datasets")
    return seconds


def run_task(spec: dict[str, Any], task_json: dict[str, Any]) -> list[dict[str, Any]]:
    """A plain Dask task: read and return the rows (the upstream pattern uses this)."""
    return execute(backend_for(spec), task_json, bool(spec.get("verify")))


def run_task_released(spec: dict[str, Any], task_json: dict[str, Any], addr: list[Any], token: str) -> int:
    """A parked Dask task: connect to the driver, wait for the release byte, read, send the
    rows back on the same socket. Dispatch happens before the clock; the clock runs from
    release to the last rows received."""
    import socket

    backend = backend_for(spec)
    with socket.create_connection((addr[0], int(addr[1])), timeout=600) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(token.encode() + b"\n")
        if sock.recv(1) != b"g":
            return 0
        rows = execute(backend, task_json, bool(spec.get("verify")))
        sock.sendall(json.dumps(rows).encode() + b"\n")
    return len(rows)


def list_file(spec: dict[str, Any], keys: list[list[Any]]) -> list[dict[str, Any]]:
    """The upstream `gather-info` pass: open each file and list its shot and signals."""
    from shotbench.read.shotfile import shot_ids, signal_names

    backend = backend_for(spec)
    out = []
    for key, size in keys:
        with backend.open(key, size) as fh:
            for shot in shot_ids(fh):
                out.append({"key": key, "shot": shot, "signals": list(signal_names(fh, shot))})
    return out


def _local_ip_towards(address: str) -> str:
    """This host's IP on the route to the scheduler, so remote workers can reach the driver."""
    import socket
    from urllib.parse import urlsplit

    host = urlsplit(address if "://" in address else f"tcp://{address}").hostname or "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((host, 9))
        return s.getsockname()[0]


# --------------------------------------------------------------------------------------
# The driver: one per environment, JSON lines on stdin/stdout.


class Driver:
    def __init__(self, scheduler: str | None) -> None:
        self.scheduler = scheduler
        self.clusters: dict[int, tuple[Any, Any]] = {}
        self.external: Any = None
        self.current: tuple[Any, list[str], dict[str, Any]] | None = None

    def _client(self, workers: int) -> tuple[Any, list[str]]:
        import dask
        from distributed import Client, LocalCluster

        if self.scheduler:
            if self.external is None:
                self.external = Client(self.scheduler, set_as_default=False, timeout=SCHEDULER_TIMEOUT_S)
            names = sorted(self.external.scheduler_info()["workers"])
            if len(names) < workers:  # workers may still be registering: wait, boundedly
                with contextlib.suppress(Exception):
                    self.external.wait_for_workers(workers, timeout=SCHEDULER_TIMEOUT_S * 6)
                names = sorted(self.external.scheduler_info()["workers"])
            if len(names) < workers:
                raise RuntimeError(
                    f"the cluster at {self.scheduler} has {len(names)} workers, the case needs {workers}"
                )
            return self.external, names[:workers]
        if workers not in self.clusters:
            with dask.config.set(OUR_DASK_CONFIG):
                cluster = LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True,
                    dashboard_address=":0", silence_logs=logging.ERROR, memory_limit=0,
                )
                client = Client(cluster, set_as_default=False)
            client.wait_for_workers(workers)
            self.clusters[workers] = (cluster, client)
            print(f"dask dashboard ({workers} workers): {client.dashboard_link}", file=sys.stderr, flush=True)
        client = self.clusters[workers][1]
        return client, sorted(client.scheduler_info()["workers"])[:workers]

    def prepare(self, msg: dict[str, Any]) -> dict[str, Any]:
        client, names = self._client(int(msg["workers"]))
        spec = msg["spec"]
        futs = [
            client.submit(warm, spec, workers=[w], allow_other_workers=False, pure=False)
            for w in names
        ]
        info = client.gather(futs)
        self.current = (client, names, spec)
        return {"dashboard": client.dashboard_link or "", "workers": names, "warm": info}

    def run(self, msg: dict[str, Any]) -> dict[str, Any]:
        assert self.current is not None, "prepare before run"
        self._build_indexes(msg["tasks"])
        if msg.get("clock", "release") == "submit":
            return self._run_submit(msg)
        return self._run_released(msg)

    def _build_indexes(self, tasks: list[dict[str, Any]]) -> None:
        """For readers with a per-file index: build the missing ones on the workers, untimed."""
        from shotbench.backends import registry

        assert self.current is not None
        client, names, spec = self.current
        if not getattr(registry.get(spec["backend"]), "builds_index", False):
            return
        files = sorted({(it.key, it.size) for t in tasks for part in task_from_json(t).parts for it in part.items})
        batches = [[list(f) for f in files[i::len(names)]] for i in range(len(names))]
        client.gather([
            client.submit(index_files, spec, b, workers=[w], allow_other_workers=False, pure=False)
            for w, b in zip(names, batches) if b
        ])

    def _run_submit(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Clock from the first submit to the gather of the last result."""
        assert self.current is not None
        client, names, spec = self.current
        started = time.time()
        t0 = time.perf_counter()
        futs = [
            client.submit(run_task, spec, t, workers=[names[i % len(names)]],
                          allow_other_workers=False, pure=False)
            for i, t in enumerate(msg["tasks"])
        ]
        results = client.gather(futs)
        total = time.perf_counter() - t0
        return {"rows": [r for rs in results for r in rs], "total": total,
                "started": started, "finished": time.time()}

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

    def _run_released(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Park one task per worker, release them together, stop when the last rows arrive."""
        import secrets
        import selectors
        import socket

        assert self.current is not None
        client, names, spec = self.current
        tasks = msg["tasks"]
        lsock = self._listener()
        token = secrets.token_hex(8)
        addr = [self._host, lsock.getsockname()[1]]
        futs = [
            client.submit(run_task_released, spec, t, addr, token, workers=[names[i % len(names)]],
                          allow_other_workers=False, pure=False)
            for i, t in enumerate(tasks)
        ]
        conns: list[socket.socket] = []
        lsock.settimeout(0.2)
        deadline = time.monotonic() + float(msg.get("park_timeout", 600))
        try:
            while len(conns) < len(tasks):
                try:
                    conn, _ = lsock.accept()
                except socket.timeout:
                    bad = [f for f in futs if f.status == "error"]
                    if bad:
                        bad[0].result()
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
            rows: list[dict[str, Any]] = []
            pending = len(conns)
            while pending:
                for key, _ in sel.select(timeout=1.0):
                    c = key.fileobj
                    data = c.recv(1 << 20)
                    buf = buffers[c.fileno()]
                    buf += data
                    if buf.endswith(b"\n") or not data:
                        total = time.perf_counter() - t0
                        sel.unregister(c)
                        pending -= 1
                        if buf.strip():
                            rows.extend(json.loads(bytes(buf)))
                if pending and any(f.status == "error" for f in futs):
                    [f for f in futs if f.status == "error"][0].result()
            finished = time.time()
            sel.close()
        finally:
            for c in conns:
                c.close()
        client.gather(futs)  # surfaces task exceptions; after the clock
        return {"rows": rows, "total": total, "started": started, "finished": finished}

    def upstream(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The upstream pattern: a fresh Client per case (created before the clock), default
        Dask settings, `len//W+1` batches, one submit/gather round per signal, plus the
        separately timed gather-info pass."""
        from distributed import Client

        w = int(msg["workers"])
        spec = msg["spec"]
        e0 = time.perf_counter()
        client = Client(processes=True, n_workers=w, threads_per_worker=1,
                        dashboard_address=":0", silence_logs=logging.ERROR)
        try:
            from shotbench.read.plan import split_upstream

            i0 = time.perf_counter()
            batches = split_upstream(msg["info_files"], w)
            client.gather([client.submit(list_file, spec, b, pure=False) for b in batches])
            info_time = time.perf_counter() - i0
            t0 = time.perf_counter()
            rows = []
            for rnd in msg["rounds"]:
                futs = [client.submit(run_task, spec, t, pure=False) for t in rnd]
                for rs in client.gather(futs):
                    rows.extend(rs)
            total = time.perf_counter() - t0
        finally:
            client.close()
            if client.cluster is not None:
                client.cluster.close()
        return {"rows": rows, "total": total, "info_time": info_time,
                "wall": time.perf_counter() - e0}

    def gather(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Time the listing of one file's signal datasets on a warm worker (before the clock)."""
        assert self.current is not None, "prepare before gather"
        client, names, spec = self.current
        fut = client.submit(gather_time, spec, msg["key"], int(msg["size"]), workers=[names[0]],
                            allow_other_workers=False, pure=False)  # fmt: skip
        seconds = fut.result()
        return {"seconds": None if seconds is None else float(seconds)}

    def close(self, workers: int) -> None:
        pair = self.clusters.pop(workers, None)
        if pair:
            pair[1].close()
            pair[0].close()

    def shutdown(self) -> None:
        for w in list(self.clusters):
            try:
                self.close(w)
            except Exception:  # noqa: BLE001 - shutting down anyway
                pass
        if self.external is not None:
            self.external.close()


def serve(scheduler: str | None) -> int:
    """Answer one JSON request per stdin line until `quit` or end of input."""
    if os.getpgrp() == os.getpid():  # started by the orchestrator in a group of its own
        from shotbench.processes import end_group_on

        end_group_on()
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to stderr, not into the protocol
    driver = Driver(scheduler)

    def reply(obj: dict[str, Any]) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    try:
        for line in iter(sys.stdin.readline, ""):
            if not line.strip():
                continue
            msg = json.loads(line)
            op = msg.get("op")
            try:
                if op == "hello":
                    reply({"ok": True, "versions": versions(), "pid": os.getpid()})
                elif op == "prepare":
                    reply({"ok": True, **driver.prepare(msg)})
                elif op == "run":
                    reply({"ok": True, **driver.run(msg)})
                elif op == "gather":
                    reply({"ok": True, **driver.gather(msg)})
                elif op == "upstream":
                    reply({"ok": True, **driver.upstream(msg)})
                elif op == "close":
                    driver.close(int(msg["workers"]))
                    reply({"ok": True})
                elif op == "quit":
                    reply({"ok": True})
                    break
                else:
                    reply({"ok": False, "error": f"unknown op {op!r}"})
            except Exception as exc:  # noqa: BLE001 - the orchestrator records it with the case
                reply({"ok": False, "error": scrub(f"{type(exc).__name__}: {exc}")[:500]})
    finally:
        driver.shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m shotbench.read.worker")
    parser.add_argument("--serve", action="store_true", help="answer JSON requests on stdin")
    parser.add_argument("--scheduler", default=None)
    args = parser.parse_args(argv)
    if args.serve:
        return serve(args.scheduler)
    print(json.dumps(versions()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What runs inside a Dask worker of a backend's environment: the task functions.

The environment's driver (`bench/driver.py`, started as `<env python> -m shotbench.bench.driver
--serve`) submits these to its warm cluster. Dask pickles them by module path, so this module is
imported in every worker process; it holds the reading (`execute`, `Reads`, `read_open`,
`read_whole`, `gather_time`) and nothing of the driver loop. Credentials arrive with each task
(`read/casesettings.py`), set as AWS_* variables in the worker process, never on the command line.
"""

from __future__ import annotations

import json
import os
import time
from itertools import groupby
from typing import Any

from shotbench.bench.protocol import Row, Spec, Warm
from shotbench.plan.matrix import Task
from shotbench.redact import scrub


def versions() -> dict[str, str]:
    """Library versions as this interpreter actually has them."""
    import importlib.metadata as md
    import platform

    out = {"python": platform.python_version()}
    for pkg in (
        "h5py",
        "numpy",
        "dask",
        "distributed",
        "s3fs",
        "fsspec",
        "obstore",
        "boto3",
        "botocore",
        "aiobotocore",
    ):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    try:
        import h5py

        out["hdf5"] = h5py.version.hdf5_version
        out.setdefault("h5py", h5py.version.version)  # the h5py-s3 wheel installs `h5py` under another name
        out["ros3"] = str("ros3" in h5py.registered_drivers())
    except Exception as exc:  # noqa: BLE001 - a broken h5py is reported, not fatal here
        out["h5py_error"] = scrub(str(exc))
    return out


def backend_for(spec: Spec) -> Any:
    """A new instance of the backend described by `spec`, set up, for one Dask task.

    Every task builds its own (before its clock, in a parked task): a case's clients and
    connections are its own, never carried over from an earlier case on the same worker."""
    from shotbench.backends import registry
    from shotbench.backends.base import ReadSettings, s3_from_environ
    from shotbench.store import credentials

    credentials.apply(credentials.spec_credentials(spec.credentials))  # before anything reads AWS_*
    if spec.endpoint:  # the backend's own network path; the next task's case settings put the run's back
        os.environ["AWS_ENDPOINT_URL_S3"] = os.environ["AWS_ENDPOINT_URL"] = spec.endpoint
    cls = registry.get(spec.backend)
    settings = ReadSettings(
        int(spec.pb_size),
        int(spec.chunk_cache),
        dict(spec.options),
        None if spec.block_cache is None else int(spec.block_cache),
    )
    inst = cls(spec.source, settings)
    inst.setup(s3_from_environ())
    return inst


def warm(spec: Spec) -> Warm:
    """Runs once per worker before the clock: imports (h5py, the backend's libraries) and one
    backend set up, so what a process loads once is loaded before any case."""
    import shotbench.hdf5.shotfile  # noqa: F401 - loads h5py before any case's clock starts

    backend_for(spec)
    return Warm(os.getpid(), versions().get("hdf5", ""))


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except Exception:  # noqa: BLE001 - outside a Dask worker (tests, --scheduler quirks)
        return ""


def _hdf5_here() -> str:
    """The libhdf5 version of this worker process (h5py is loaded by then: `warm`)."""
    try:
        import h5py

        return str(h5py.version.hdf5_version)
    except Exception:  # noqa: BLE001 - readers without h5py: the column stays the environment's
        return ""


def execute(backend: Any, task: Task, verify: bool = False) -> list[Row]:
    """Read every part of one task, timing each; one small dict per CSV row. With `verify`,
    each row also carries a CRC-32 of every signal it read, for the orchestrator to check."""
    address = _worker_address()
    if backend.reads_hdf5:  # the row names the libhdf5 that read it: this worker's, not the driver's
        row_cols = {"dask-worker": address, "hdf5": _hdf5_here()}
    else:
        row_cols = {"dask-worker": address}
    meter = getattr(backend, "meter", None)
    if meter is not None:
        meter.drain()  # requests made before this task (warm-up, listing) are not its own
    try:
        if task.whole and backend.reads_hdf5:
            return [dict(read_whole(backend, task, verify), **row_cols)]
        rows: list[Row] = []
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
            rows.append(
                {
                    "worker#": task.index,
                    "obj-id": part.obj_id,
                    "time": elapsed,
                    "objs": nobjs,
                    "dsets": reads.dsets,
                    "bytes": reads.bytes,
                    "open": reads.open_time,
                    "error": reads.error,
                    **row_cols,
                    **reads.columns(),
                }
            )
        return rows
    finally:
        backend.end_task()


class Reads:
    """What one CSV row read, and what it cost besides the clock: counters, what libhdf5 did,
    index stats, checksums, retries and the client's requests (taken after the clock stops)."""

    def __init__(self, backend: Any, verify: bool) -> None:
        from shotbench.hdf5.effective import PartReadback

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
        """A raw GET of one item's bytes (no HDF5); when verifying, their CRC-32 goes with the row
        (`checksums.BYTES` in place of a shot, the range in place of a signal)."""
        from shotbench.bench.checksums import BYTES, byte_range

        try:
            data = memoryview(self.backend.fetch(it.key, it.start, it.length))
            self.bytes += data.nbytes
            if self.crcs is not None:
                import zlib

                self.crcs.append([it.key, BYTES, byte_range(it.start, it.length), zlib.crc32(data)])
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


def index_files(spec: Spec, files: list[tuple[str, int]]) -> int:
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


def read_open(
    backend: Any, key: str, items: list[Any], readback: Any = None, crcs: list[list[Any]] | None = None
) -> tuple[int, int, float, str]:
    """Open one file, read `items` from it: (datasets, bytes, open seconds, error or "").

    After the reads, what libhdf5 did goes into `readback` (effective settings, page-buffer
    counters), and the client meter samples its connections before the file closes. With
    `crcs`, each signal is read with its CRC-32 (by whichever library reads it), appended there."""
    from shotbench.backends.unsupported import error_cell

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
                    if crcs is not None:
                        d, n, crc = backend.read_signal_crc(fh, it.shot, it.signal)
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


def read_whole(backend: Any, task: Task, verify: bool = False) -> Row:
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
        "worker#": task.index,
        "obj-id": "*",
        "time": total,
        "objs": len(task.parts),
        "dsets": reads.dsets,
        "bytes": reads.bytes,
        "open": reads.open_time,
        "read": total - reads.open_time,
        "opens": reads.opens,
        "error": reads.error,
        **reads.columns(),
    }


def gather_time(spec: Spec, key: str, size: int) -> float | None:
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
        fh.visititems(
            lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) and "shot" in obj.attrs else None
        )
    seconds = time.perf_counter() - t0
    backend.end_task()
    if not found:
        raise RuntimeError(f"{key} holds no signal datasets")
    return seconds


def run_task(spec: Spec, task: Task) -> list[Row]:
    """A plain Dask task: read and return the rows (the upstream pattern uses this)."""
    return execute(backend_for(spec), task, spec.verify)


def run_task_released(spec: Spec, task: Task, addr: list[Any], token: str) -> int:
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
        rows = execute(backend, task, spec.verify)
        sock.sendall(json.dumps(rows).encode() + b"\n")
    return len(rows)


def list_file(spec: Spec, keys: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """The upstream `gather-info` pass: open each file and list its shot and signals."""
    from shotbench.hdf5.shotfile import shot_ids, signal_names

    backend = backend_for(spec)
    out = []
    for key, size in keys:
        with backend.open(key, size) as fh:
            for shot in shot_ids(fh):
                out.append({"key": key, "shot": shot, "signals": list(signal_names(fh, shot))})
    return out

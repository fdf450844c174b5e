"""The read benchmark's tables: typed rows of workers.csv and cases.csv, their columns (order and
units in one place, the CSV headers derived from them) and the rows a case writes.

The run folder itself (appending, resuming, run.json) is shotbench.runs, shared with the
transfer benchmark; on resume a case row is the commit mark, so every case appears exactly once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from shotbench.hdf5.effective import COLUMNS as EFFECTIVE_COLUMNS
from shotbench.records.status import CASE_STATUSES, OK, is_failure, row_status, task_status
from shotbench.runs import RunKind
from shotbench.tableschema import CASE_ID, FINISHED, ORDER, RUN_ID, STARTED, TRIAL, Column, Table, column, columns_group

# A cell of a table: a number, a string, or "" where nothing was measured.
Cell = Any

# Columns both tables of a read run write, declared once.
BACKEND = Column("backend", doc="the backend that read the files (`shotbench.backends.registry`)")
OBJ_TYPE = Column(
    "obj-type", doc="the mode: `shots` (a task reads whole files) or `signals` (a task reads one signal of each file)"
)
NUM_WORKERS = Column("num-workers", doc="Dask workers of the case")
PB_SIZE = Column("pb-size", "B", "the page buffer asked for: bytes, 0 off, -1 the library's default")
TOTAL_RUNTIME = Column("total-runtime", "s", "the case's wall time, release of the tasks to the last row back")
HDF5_VERSION = Column("hdf5-version", doc="the libhdf5 version the backend ran (empty without HDF5)")
H5PY_VERSION = Column("h5py-version", doc="the h5py version the backend ran (empty without h5py)")
CLIENT_GETS = Column(
    "client-gets",
    doc="GET requests the client made, as it counted them (`backends/meters.py`); empty when it cannot tell",
)
CLIENT_HEADS = Column("client-heads", doc="HEAD requests the client made, counted the same way")
CLIENT_BYTES = Column("client-bytes", "B", "bytes those requests returned")
LAYOUT = Column("layout", doc="`single`, `shot` or `signal` (how the files store shots); empty outside `layouts` runs")
FILE_FAMILY = Column("file-family", doc="which family of files was read (`layouts` runs)")
GATHER_TIME = Column(
    "gather-time",
    "s",
    "many-shot cases: seconds to open the file and list every signal with `visititems`, once per case before the clock",
)

# What libhdf5 did, read back after each open (`shotbench.hdf5.effective` computes them);
# several files of one row with different values are joined by `|`.
EFFECTIVE_DOCS: dict[str, tuple[str, str]] = {
    "pb-effective": (
        "B",
        "page buffer of the open file (`get_page_buffer_size`); 0 when it has none; empty without HDF5",
    ),
    "file-space-strategy": ("", "`page`, `fsm-aggr`, `aggr` or `none`, from the file's creation property list"),
    "file-page-size": ("B", "file-space page size from the creation property list (4096 on files that are not paged)"),
    "chunk-cache-effective": ("B", "raw-data chunk cache (`rdcc_nbytes`) of the file's access property list"),
    "block-cache-size": (
        "B",
        "the 2.2 ROS3 block cache of the access list the file was opened with; 0 off; empty on other backends",
    ),
    "block-size": ("B", "the 2.2 ROS3 block size, read the same way"),
    "pb-meta-accesses": ("", "page-buffer metadata accesses, summed over the task's files"),
    "pb-meta-hitrate": ("", "page-buffer metadata hit rate: hits ÷ (accesses − bypasses) × 100"),
    "pb-meta-evicts": ("", "page-buffer metadata evictions"),
    "pb-raw-accesses": ("", "page-buffer raw-data accesses"),
    "pb-raw-hitrate": ("", "page-buffer raw-data hit rate"),
    "pb-raw-evicts": ("", "page-buffer raw-data evictions"),
}
EFFECTIVE = tuple(Column(name, *EFFECTIVE_DOCS[name]) for name in EFFECTIVE_COLUMNS)


@dataclass(frozen=True)
class WorkerRow(Table):
    """One row of workers.csv: one task's reads. The upstream harness's 12 columns come first, so
    its notebooks read our CSVs; units: s seconds, B bytes."""

    worker: Cell = column("worker#", doc="the task's number within the case (upstream's name)")
    obj_id: Cell = column("obj-id", doc="what the task read: a shot id (`shots`) or a signal name (`signals`)")
    open_read_data_time: Cell = column(
        "open+read-data-time", "s", "the task's time: opening its files and reading every value"
    )
    wrkr_num_objs: Cell = column("wrkr-num-objs", doc="files (shots) or signals the task read")
    mean_obj_time: Cell = column("mean-obj-time", "s", "open+read-data-time ÷ wrkr-num-objs")
    num_dsets: Cell = column("num-dsets", doc="datasets the task read")
    mean_dset_time: Cell = column("mean-dset-time", "s", "open+read-data-time ÷ num-dsets")
    pb_size: Cell = PB_SIZE.field()
    num_workers: Cell = NUM_WORKERS.field()
    obj_type: Cell = OBJ_TYPE.field()
    tot_num_obj: Cell = column("tot-num-obj", doc="objects the whole case read")
    total_runtime: Cell = TOTAL_RUNTIME.field()
    backend: Cell = BACKEND.field()
    hdf5_version: Cell = HDF5_VERSION.field()
    h5py_version: Cell = H5PY_VERSION.field()
    run_id: Cell = RUN_ID.field()
    case_id: Cell = CASE_ID.field()
    trial: Cell = TRIAL.field()
    dask_worker: Cell = column("dask-worker", doc="address of the Dask worker that ran the task")
    bytes_read: Cell = column("bytes-read", "B", "payload bytes the task read (decompressed)")
    open_time: Cell = column("open-time", "s", "seconds of the task spent opening files")
    error: Cell = column(
        "error",
        doc="the task's error in one line (`unsupported: …` when a reader cannot read that file shape); empty when ok",
    )
    # requests and bytes counted by the client (shotbench.backends.meters)
    client_gets: Cell = CLIENT_GETS.field()
    client_heads: Cell = CLIENT_HEADS.field()
    client_bytes: Cell = CLIENT_BYTES.field()
    # layouts: upstream many-shot timings and which file family a row read
    open_file_time: Cell = column(
        "open-file-time", "s", "seconds spent opening files in the task (upstream's many-shot name)"
    )
    read_data_time: Cell = column("read-data-time", "s", "the rest of the task's time")
    gather_time: Cell = GATHER_TIME.field()
    layout: Cell = LAYOUT.field()
    file_family: Cell = FILE_FAMILY.field()
    # failures: ok / failed / timeout; requests the client sent again (empty: it cannot tell);
    # yes / no (bytes checked against the local copy) or empty
    status: Cell = column(
        "status", doc="`ok`, `failed`, or `timeout` when the task had not answered by the case's deadline"
    )
    retries: Cell = column(
        "retries", doc="requests the client sent again, as the client counted them; empty when it cannot tell"
    )
    verified: Cell = column(
        "verified", doc="`yes`/`no`: a CRC-32 of every value read matched the local copy; empty when not checked"
    )
    # effective settings: what libhdf5 did, read back after open (shotbench.hdf5.effective)
    effective: Mapping[str, Cell] = columns_group(EFFECTIVE)
    # readers: a per-file index (kerchunk): its build seconds and stored bytes, measured once
    # when built, before any case clock; empty for readers without an index
    index_time: Cell = column(
        "index-time", "s", "indexed readers: seconds to build the files' chunk indexes, once, before any clock"
    )
    index_bytes: Cell = column("index-bytes", "B", "indexed readers: the indexes' stored size")


@dataclass(frozen=True)
class CaseRow(Table):
    """One row of cases.csv: one case (backend, mode, workers, page buffer, trial). Written after
    its worker rows, it is the commit mark a resume trusts."""

    run_id: Cell = RUN_ID.field()
    case_id: Cell = CASE_ID.field()
    trial: Cell = TRIAL.field()
    order: Cell = ORDER.field()
    backend: Cell = BACKEND.field()
    obj_type: Cell = OBJ_TYPE.field()
    num_workers: Cell = NUM_WORKERS.field()
    pb_size: Cell = PB_SIZE.field()
    chunk_cache: Cell = column("chunk-cache", "B", "the raw-data chunk cache asked for; empty: the library's default")
    n_tasks: Cell = column("n-tasks", doc="tasks of the case")
    total_runtime: Cell = TOTAL_RUNTIME.field()
    task_time_sum: Cell = column("task-time-sum", "s", "Σ of the tasks' open+read-data-time")
    harness_efficiency: Cell = column("harness-efficiency", doc="task-time-sum ÷ (num-workers × total-runtime)")
    raw_get_runtime: Cell = column(
        "raw-get-runtime", "s", "the raw-GET ceiling: the same bytes fetched with plain GETs"
    )
    gets: Cell = column(
        "gets", doc="GETs the server saw (embedded server's access log; empty on servers that cannot tell)"
    )
    get_bytes: Cell = column("get-bytes", "B", "bytes those GETs sent (empty rather than short when a count was lost)")
    hdf5_version: Cell = HDF5_VERSION.field()
    h5py_version: Cell = H5PY_VERSION.field()
    errors: Cell = column("errors", doc="the number of failed task rows")
    started: Cell = STARTED.field()
    finished: Cell = FINISHED.field()
    harness_overhead: Cell = column(
        "harness-overhead", "s", "total-runtime − the slowest task: the case's time no task accounts for"
    )
    # client-side sums; bytes-needed = stored bytes the reads must touch (hdf5/storage.py),
    # amplification = client-bytes ÷ bytes-needed (≥ 1)
    client_gets: Cell = CLIENT_GETS.field()
    client_heads: Cell = CLIENT_HEADS.field()
    client_bytes: Cell = CLIENT_BYTES.field()
    bytes_needed: Cell = column(
        "bytes-needed", "B", "stored bytes the case's reads cannot avoid, from each file's own index (a lower bound)"
    )
    amplification: Cell = column("amplification", doc="client-bytes ÷ bytes-needed: 1.0 is ideal, below 1 is a bug")
    request_p50_ms: Cell = column("request-p50-ms", "ms", "median request time, where the client gives it")
    request_p99_ms: Cell = column("request-p99-ms", "ms", "99th-percentile request time, where the client gives it")
    # layouts
    layout: Cell = LAYOUT.field()
    file_family: Cell = FILE_FAMILY.field()
    gather_time: Cell = GATHER_TIME.field()
    # failures: ok / partial / failed; `errors` above is the count of failed tasks
    status: Cell = column(
        "status",
        doc="`ok`; `partial` when some tasks failed; `failed` when none succeeded; `unsupported` when the reader cannot read the files",
    )
    first_error: Cell = column("first-error", doc="the first error's text")
    # effective settings: the requested 2.2 ROS3 block cache (-1 default, 0 off, else bytes)
    block_cache: Cell = column("block-cache", "B", "the 2.2 ROS3 block cache asked for: -1 default, 0 off, else bytes")
    # stalls: tasks far beyond their peers (status.stalled); such a case is not a measurement
    stalls: Cell = column("stalls", doc="tasks far beyond their peers; such a case is not a measurement")
    # the decompressed payload the tasks handed back (bytes-needed was this before)
    bytes_returned: Cell = column("bytes-returned", "B", "signal payload bytes the tasks handed back (decompressed)")
    # trials until the interval is tight (analyse/stopping.py): the half-width of the 95 %
    # interval of the group's median task time after this trial (0.05: ±5 %), and tight / cap /
    # more ("": fixed trials)
    ci_half_width: Cell = column(
        "ci-half-width",
        doc="`--precision`: half-width of the 95 % interval of the group's median task time after this trial (0.05: ±5 %)",
    )
    stop: Cell = column("stop", doc="`--precision`: `tight`, `cap` or `more`; empty with fixed trials")
    credential_source: Cell = column(
        "credential-source",
        doc="how the case signed and where its credentials came from: `given:iam-role`, `chain:env`, `anonymous`; "
        "empty for local data",
    )
    network: Cell = column(
        "network",
        doc="the network profile the case's requests went through (`store/network.py`): the run's `--network`, "
        "or its backend's own path (`[options.<backend>] network`); empty for local data",
    )


UPSTREAM_COLUMNS: tuple[str, ...] = tuple(WorkerRow.columns()[:12])
WORKER_COLUMNS = WorkerRow.columns()
CASE_COLUMNS = CaseRow.columns()


def _clean(text: str) -> str:
    return " ".join(str(text).split())


def worker_rows(
    raw: Iterable[dict[str, Any]],
    *,
    case: Any,
    total: float,
    tot_num_obj: int,
    run_id: str,
    hdf5: str,
    h5py_version: str,
    layout: str = "",
    family: str = "",
    gather: float | None = None,
) -> list[WorkerRow]:
    """Upstream-schema rows from what the tasks returned (plus our columns).

    `layout`/`family` name the files a `layouts` run read; `gather` is the case's gather-time.
    """
    rows = []
    for r in raw:
        t, nobjs, nd = float(r["time"]), int(r["objs"]), int(r["dsets"])
        rows.append(
            WorkerRow(
                worker=r["worker#"],
                obj_id=r["obj-id"],
                open_read_data_time=t,
                wrkr_num_objs=nobjs,
                mean_obj_time=t / nobjs if nobjs else 0.0,
                num_dsets=nd,
                mean_dset_time=t / nd if nd else 0.0,
                pb_size=case.pb_size,
                num_workers=case.workers,
                obj_type=case.mode,
                tot_num_obj=tot_num_obj,
                total_runtime=total,
                backend=case.backend,
                hdf5_version=r.get("hdf5") or hdf5,  # the worker's own, where it said
                h5py_version=h5py_version,
                run_id=run_id,
                case_id=case.case_id,
                trial=case.trial,
                dask_worker=r.get("dask-worker", ""),
                bytes_read=int(r["bytes"]),
                open_time=float(r["open"]),
                error=_clean(r.get("error", "")),
                effective={c: r.get(c, "") for c in EFFECTIVE_COLUMNS},
                index_time=r.get("index-time", ""),
                index_bytes=r.get("index-bytes", ""),
                client_gets=r.get("client-gets", ""),
                client_heads=r.get("client-heads", ""),
                client_bytes=r.get("client-bytes", ""),
                open_file_time=float(r["open"]),
                read_data_time=float(r.get("read", t - float(r["open"]))),
                gather_time="" if gather is None else gather,
                layout=layout,
                file_family=family,
                status=r.get("status") or task_status(r.get("error", "")),
                retries=r.get("retries", ""),
                verified=r.get("verified", ""),
            )
        )
    return rows


def efficiency(task_time_sum: float, workers: int, total: float) -> float:
    """Harness efficiency: Σ task time ÷ (workers × total runtime)."""
    return task_time_sum / (workers * total) if total > 0 and workers > 0 else 0.0


def task_time_sum(raw: Iterable[dict[str, Any]]) -> float:
    return float(sum(float(r["time"]) for r in raw))


def harness_overhead(raw: Iterable[dict[str, Any]], total: float) -> float:
    """Seconds of a case's runtime that no task accounts for: total − the slowest task.

    Efficiency below 1 mixes this with uneven work between workers; this is the harness alone.
    """
    per_task: dict[Any, float] = {}
    for r in raw:
        per_task[r["worker#"]] = per_task.get(r["worker#"], 0.0) + float(r["time"])
    return max(0.0, total - max(per_task.values(), default=0.0))


def valid_case_row(row: Mapping[str, Any]) -> bool:
    """A cases.csv row that parses: a backend, numeric trial, workers and page buffer, a known
    status, and a finite runtime when it says `ok`. A row torn in the middle of the file (or
    edited by hand) fails this, or has too few fields, and is set aside, never counted."""
    try:
        if not str(row.get("backend") or "").strip():
            return False
        for name in ("trial", "num-workers", "pb-size"):
            if row.get(name) not in (None, ""):
                float(str(row[name]))
        status = str(row.get("status") or "")
        if status not in ("", *CASE_STATUSES):
            return False
        if status == OK:
            runtime = float(str(row.get("total-runtime")))
            return math.isfinite(runtime) and runtime >= 0
        return True
    except (TypeError, ValueError):
        return False


# The read benchmark's run folder (shotbench.runs): cases.csv and workers.csv; a case id names its trial.
RUN_KIND = RunKind("read", CASE_COLUMNS, WORKER_COLUMNS, valid_case=valid_case_row)


def configuration_key(row: Mapping[str, Any]) -> tuple[str, ...]:
    """What a cases.csv row (as read back) measured, trial left out: the same key in two runs is
    the same configuration (backend, mode, workers, page buffer, chunk cache)."""
    return (row["backend"], row["obj-type"], row["num-workers"], row["pb-size"], row.get("chunk-cache", ""))


def measured(row: Mapping[str, Any]) -> bool:
    """A case row a resume keeps: ok, or unsupported (running it again cannot change that).
    Failed and partial cases run again."""
    return not is_failure(row_status(row))

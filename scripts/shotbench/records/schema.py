"""The read benchmark's tables: typed rows of workers.csv and cases.csv, their columns (order and
units in one place, the CSV headers derived from them) and the rows a case writes.

The run folder itself (appending, resuming, run.json) is shotbench.runs, shared with the
transfer benchmark; on resume a case row is the commit mark, so every case appears exactly once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from shotbench.hdf5.effective import COLUMNS as EFFECTIVE_COLUMNS
from shotbench.records.status import CASE_STATUSES, OK, is_failure, row_status, task_status
from shotbench.runs import RunKind

# A cell of a table: a number, a string, or "" where nothing was measured.
Cell = Any


def column(name: str, unit: str = "") -> Any:
    """A field that is one CSV column: its header name and its unit ("" for a count or a label)."""
    return field(default="", metadata={"column": name, "unit": unit})


def columns_group(names: Sequence[str]) -> Any:
    """A field holding several columns whose names another module owns (name -> value)."""
    return field(default_factory=dict, metadata={"group": tuple(names)})


class Table:
    """A row type whose fields, in order, are its table's columns: header, units and CSV row."""

    @classmethod
    def columns(cls) -> list[str]:
        out: list[str] = []
        for f in fields(cls):  # type: ignore[arg-type]
            out.extend(f.metadata["group"] if "group" in f.metadata else [f.metadata["column"]])
        return out

    @classmethod
    def units(cls) -> dict[str, str]:
        return {f.metadata["column"]: f.metadata["unit"] for f in fields(cls) if "column" in f.metadata}  # type: ignore[arg-type]

    @classmethod
    def by_column(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """Field names for CSV-named values (those of this table; others left out)."""
        names = {f.metadata["column"]: f.name for f in fields(cls) if "column" in f.metadata}  # type: ignore[arg-type]
        return {names[k]: v for k, v in values.items() if k in names}

    def to_csv(self) -> dict[str, Any]:
        """The row as its table writes it, in column order."""
        out: dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if "group" in f.metadata:
                out.update({c: value.get(c, "") for c in f.metadata["group"]})
            else:
                out[f.metadata["column"]] = value
        return out


@dataclass(frozen=True)
class WorkerRow(Table):
    """One row of workers.csv: one task's reads. The upstream harness's 12 columns come first, so
    its notebooks read our CSVs; units: s seconds, B bytes."""

    worker: Cell = column("worker#")
    obj_id: Cell = column("obj-id")
    open_read_data_time: Cell = column("open+read-data-time", "s")
    wrkr_num_objs: Cell = column("wrkr-num-objs")
    mean_obj_time: Cell = column("mean-obj-time", "s")
    num_dsets: Cell = column("num-dsets")
    mean_dset_time: Cell = column("mean-dset-time", "s")
    pb_size: Cell = column("pb-size", "B")
    num_workers: Cell = column("num-workers")
    obj_type: Cell = column("obj-type")
    tot_num_obj: Cell = column("tot-num-obj")
    total_runtime: Cell = column("total-runtime", "s")
    backend: Cell = column("backend")
    hdf5_version: Cell = column("hdf5-version")
    h5py_version: Cell = column("h5py-version")
    run_id: Cell = column("run-id")
    case_id: Cell = column("case-id")
    trial: Cell = column("trial")
    dask_worker: Cell = column("dask-worker")
    bytes_read: Cell = column("bytes-read", "B")
    open_time: Cell = column("open-time", "s")
    error: Cell = column("error")
    # requests and bytes counted by the client (shotbench.backends.meters)
    client_gets: Cell = column("client-gets")
    client_heads: Cell = column("client-heads")
    client_bytes: Cell = column("client-bytes", "B")
    # layouts: upstream many-shot timings and which file family a row read
    open_file_time: Cell = column("open-file-time", "s")
    read_data_time: Cell = column("read-data-time", "s")
    gather_time: Cell = column("gather-time", "s")
    layout: Cell = column("layout")
    file_family: Cell = column("file-family")
    # failures: ok / failed / timeout; requests the client sent again (empty: it cannot tell);
    # yes / no (bytes checked against the local copy) or empty
    status: Cell = column("status")
    retries: Cell = column("retries")
    verified: Cell = column("verified")
    # effective settings: what libhdf5 did, read back after open (shotbench.hdf5.effective)
    effective: Mapping[str, Cell] = columns_group(EFFECTIVE_COLUMNS)
    # readers: a per-file index (kerchunk): its build seconds and stored bytes, measured once
    # when built, before any case clock; empty for readers without an index
    index_time: Cell = column("index-time", "s")
    index_bytes: Cell = column("index-bytes", "B")


@dataclass(frozen=True)
class CaseRow(Table):
    """One row of cases.csv: one case (backend, mode, workers, page buffer, trial). Written after
    its worker rows, it is the commit mark a resume trusts."""

    run_id: Cell = column("run-id")
    case_id: Cell = column("case-id")
    trial: Cell = column("trial")
    order: Cell = column("order")
    backend: Cell = column("backend")
    obj_type: Cell = column("obj-type")
    num_workers: Cell = column("num-workers")
    pb_size: Cell = column("pb-size", "B")
    chunk_cache: Cell = column("chunk-cache", "B")
    n_tasks: Cell = column("n-tasks")
    total_runtime: Cell = column("total-runtime", "s")
    task_time_sum: Cell = column("task-time-sum", "s")
    harness_efficiency: Cell = column("harness-efficiency")
    raw_get_runtime: Cell = column("raw-get-runtime", "s")
    gets: Cell = column("gets")
    get_bytes: Cell = column("get-bytes", "B")
    hdf5_version: Cell = column("hdf5-version")
    h5py_version: Cell = column("h5py-version")
    errors: Cell = column("errors")
    started: Cell = column("started")
    finished: Cell = column("finished")
    harness_overhead: Cell = column("harness-overhead", "s")
    # client-side sums; bytes-needed = stored bytes the reads must touch (hdf5/storage.py),
    # amplification = client-bytes ÷ bytes-needed (≥ 1)
    client_gets: Cell = column("client-gets")
    client_heads: Cell = column("client-heads")
    client_bytes: Cell = column("client-bytes", "B")
    bytes_needed: Cell = column("bytes-needed", "B")
    amplification: Cell = column("amplification")
    request_p50_ms: Cell = column("request-p50-ms", "ms")
    request_p99_ms: Cell = column("request-p99-ms", "ms")
    # layouts
    layout: Cell = column("layout")
    file_family: Cell = column("file-family")
    gather_time: Cell = column("gather-time", "s")
    # failures: ok / partial / failed; `errors` above is the count of failed tasks
    status: Cell = column("status")
    first_error: Cell = column("first-error")
    # effective settings: the requested 2.2 ROS3 block cache (-1 default, 0 off, else bytes)
    block_cache: Cell = column("block-cache", "B")
    # stalls: tasks far beyond their peers (status.stalled); such a case is not a measurement
    stalls: Cell = column("stalls")
    # the decompressed payload the tasks handed back (bytes-needed was this before)
    bytes_returned: Cell = column("bytes-returned", "B")
    # trials until the interval is tight (analyse/stopping.py): the half-width of the 95 %
    # interval of the group's median task time after this trial (0.05: ±5 %), and tight / cap /
    # more ("": fixed trials)
    ci_half_width: Cell = column("ci-half-width")
    stop: Cell = column("stop")


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

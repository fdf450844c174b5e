"""The read benchmark's tables: the columns of workers.csv and cases.csv and the rows a case writes.

The run folder itself (appending, resuming, run.json) is shotbench.runs, shared with the
transfer benchmark; on resume a case row is the commit mark, so every case appears exactly once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from shotbench.hdf5.effective import COLUMNS as EFFECTIVE_COLUMNS
from shotbench.read.status import OK, row_status, task_status
from shotbench.runs import RunKind

# the upstream harness's 12 per-worker columns, first in ours so its notebooks read our CSVs
UPSTREAM_COLUMNS: tuple[str, ...] = (
    "worker#", "obj-id", "open+read-data-time", "wrkr-num-objs", "mean-obj-time", "num-dsets",
    "mean-dset-time", "pb-size", "num-workers", "obj-type", "tot-num-obj", "total-runtime",
)
WORKER_COLUMNS = list(UPSTREAM_COLUMNS) + [
    "backend", "hdf5-version", "h5py-version", "run-id", "case-id", "trial", "dask-worker",
    "bytes-read", "open-time", "error",
    # requests and bytes counted by the client (shotbench.backends.meters)
    "client-gets", "client-heads", "client-bytes",
    # layouts: upstream many-shot timings and which file family a row read
    "open-file-time", "read-data-time", "gather-time", "layout", "file-family",
    # failures: ok / failed / timeout; requests the client sent again (empty: it cannot tell);
    # yes / no (bytes checked against the local copy) or empty
    "status", "retries", "verified",
]
# effective settings: what libhdf5 did, read back after open (shotbench.hdf5.effective)
WORKER_COLUMNS += EFFECTIVE_COLUMNS
# readers: a per-file index (kerchunk): its build seconds and stored bytes,
# measured once when built, before any case clock; empty for readers without an index
WORKER_COLUMNS += ["index-time", "index-bytes"]
CASE_COLUMNS = [
    "run-id", "case-id", "trial", "order", "backend", "obj-type", "num-workers", "pb-size",
    "chunk-cache", "n-tasks", "total-runtime", "task-time-sum", "harness-efficiency",
    "raw-get-runtime", "gets", "get-bytes", "hdf5-version", "h5py-version", "errors",
    "started", "finished", "harness-overhead",
    # client-side sums; bytes-needed = stored bytes the reads must touch (hdf5/storage.py),
    # amplification = client-bytes ÷ bytes-needed (≥ 1); bytes-returned = payload the tasks returned
    "client-gets", "client-heads", "client-bytes", "bytes-needed", "amplification",
    "request-p50-ms", "request-p99-ms",
    # layouts
    "layout", "file-family", "gather-time",
    # failures: ok / partial / failed; `errors` above is the count of failed tasks
    "status", "first-error",
]
# effective settings: the requested 2.2 ROS3 block cache (-1 default, 0 off, else bytes)
CASE_COLUMNS += ["block-cache"]
# statistics: the decompressed payload the tasks handed back (bytes-needed was this before)
CASE_COLUMNS += ["bytes-returned"]
# trials until the interval is tight (read/analyse/stopping.py): the half-width of the 95 % interval of the
# group's median task time after this trial (0.05: ±5 %), and tight / cap / more ("" : fixed trials)
CASE_COLUMNS += ["ci-half-width", "stop"]


def _clean(text: str) -> str:
    return " ".join(str(text).split())


def worker_rows(
    raw: Iterable[dict[str, Any]], *, case: Any, total: float, tot_num_obj: int,
    run_id: str, hdf5: str, h5py_version: str, layout: str = "", family: str = "", gather: float | None = None,
) -> list[dict[str, Any]]:
    """Upstream-schema rows from what the tasks returned (plus our columns).

    `layout`/`family` name the files a `layouts` run read; `gather` is the case's gather-time.
    """
    rows = []
    for r in raw:
        t, nobjs, nd = float(r["time"]), int(r["objs"]), int(r["dsets"])
        rows.append({
            "worker#": r["worker#"], "obj-id": r["obj-id"], "open+read-data-time": t,
            "wrkr-num-objs": nobjs, "mean-obj-time": t / nobjs if nobjs else 0.0,
            "num-dsets": nd, "mean-dset-time": t / nd if nd else 0.0,
            "pb-size": case.pb_size, "num-workers": case.workers, "obj-type": case.mode,
            "tot-num-obj": tot_num_obj, "total-runtime": total,
            "backend": case.backend, "hdf5-version": hdf5, "h5py-version": h5py_version,
            "run-id": run_id, "case-id": case.case_id, "trial": case.trial,
            "dask-worker": r.get("dask-worker", ""), "bytes-read": int(r["bytes"]),
            "open-time": float(r["open"]), "error": _clean(r.get("error", "")),
            **{c: r.get(c, "") for c in EFFECTIVE_COLUMNS},
            "index-time": r.get("index-time", ""), "index-bytes": r.get("index-bytes", ""),
            "client-gets": r.get("client-gets", ""), "client-heads": r.get("client-heads", ""),
            "client-bytes": r.get("client-bytes", ""),
            "open-file-time": float(r["open"]), "read-data-time": float(r.get("read", t - float(r["open"]))),
            "gather-time": "" if gather is None else gather, "layout": layout, "file-family": family,
            "status": r.get("status") or task_status(r.get("error", "")),
            "retries": r.get("retries", ""),
            "verified": r.get("verified", ""),
        })
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


# The read benchmark's run folder (shotbench.runs): cases.csv and workers.csv; a case id names its trial.
RUN_KIND = RunKind("read", CASE_COLUMNS, WORKER_COLUMNS)


def measured(row: Mapping[str, Any]) -> bool:
    """A case row a resume keeps: ok. Failed and partial cases run again."""
    return row_status(row) == OK

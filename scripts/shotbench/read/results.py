"""The run folder: workers.csv, cases.csv, run.json — schema, appending, resuming.

A case's worker rows are appended first and its case row last, each flushed and fsynced,
so the case row is the commit mark: on resume, worker rows of cases without a case row
are dropped and those cases run again. Every case therefore appears exactly once.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from shotbench.read.effective import COLUMNS as EFFECTIVE_COLUMNS
from shotbench.read.status import OK, row_status, task_status

# the upstream harness's 12 per-worker columns, first in ours so its notebooks read our CSVs
UPSTREAM_COLUMNS: tuple[str, ...] = (
    "worker#", "obj-id", "open+read-data-time", "wrkr-num-objs", "mean-obj-time", "num-dsets",
    "mean-dset-time", "pb-size", "num-workers", "obj-type", "tot-num-obj", "total-runtime",
)
WORKER_COLUMNS = list(UPSTREAM_COLUMNS) + [
    "backend", "hdf5-version", "h5py-version", "run-id", "case-id", "trial", "dask-worker",
    "bytes-read", "open-time", "error",
    # requests and bytes counted by the client (shotbench.read.accounting)
    "client-gets", "client-heads", "client-bytes",
    # layouts: upstream many-shot timings and which file family a row read
    "open-file-time", "read-data-time", "gather-time", "layout", "file-family",
    # failures: ok / failed / timeout; requests the client sent again (empty: it cannot tell);
    # yes / no (bytes checked against the local copy) or empty
    "status", "retries", "verified",
]
# effective settings: what libhdf5 did, read back after open (shotbench.read.effective)
WORKER_COLUMNS += EFFECTIVE_COLUMNS
# readers: a per-file index (kerchunk): its build seconds and stored bytes,
# measured once when built, before any case clock; empty for readers without an index
WORKER_COLUMNS += ["index-time", "index-bytes"]
CASE_COLUMNS = [
    "run-id", "case-id", "trial", "order", "backend", "obj-type", "num-workers", "pb-size",
    "chunk-cache", "n-tasks", "total-runtime", "task-time-sum", "harness-efficiency",
    "raw-get-runtime", "gets", "get-bytes", "hdf5-version", "h5py-version", "errors",
    "started", "finished", "harness-overhead",
    # client-side sums; bytes-needed = signal payload bytes the tasks returned
    "client-gets", "client-heads", "client-bytes", "bytes-needed", "amplification",
    "request-p50-ms", "request-p99-ms",
    # layouts
    "layout", "file-family", "gather-time",
    # failures: ok / partial / failed; `errors` above is the count of failed tasks
    "status", "first-error",
]
# effective settings: the requested 2.2 ROS3 block cache (-1 default, 0 off, else bytes)
CASE_COLUMNS += ["block-cache"]


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


class RunFolder:
    """One run's files; appends are durable before the next case starts."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.workers_csv = self.path / "workers.csv"
        self.cases_csv = self.path / "cases.csv"
        self.run_json = self.path / "run.json"

    @classmethod
    def create(cls, path: Path, meta: dict[str, Any]) -> "RunFolder":
        path.mkdir(parents=True, exist_ok=False)
        folder = cls(path)
        for file, cols in ((folder.workers_csv, WORKER_COLUMNS), (folder.cases_csv, CASE_COLUMNS)):
            with open(file, "w", newline="") as fh:
                csv.writer(fh).writerow(cols)
        folder.write_meta(meta)
        return folder

    def read_meta(self) -> dict[str, Any]:
        return json.loads(self.run_json.read_text())

    def write_meta(self, meta: dict[str, Any]) -> None:
        tmp = self.run_json.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=False) + "\n")
        os.replace(tmp, self.run_json)

    @staticmethod
    def _append(file: Path, cols: list[str], rows: list[dict[str, Any]]) -> None:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
        for row in rows:
            writer.writerow({k: row.get(k, "") for k in cols})
        with open(file, "a", newline="") as fh:
            fh.write(buf.getvalue())
            fh.flush()
            os.fsync(fh.fileno())

    def append_case(self, workers: list[dict[str, Any]], case_row: dict[str, Any]) -> None:
        """Worker rows, then the case row (the commit mark)."""
        if workers:
            self._append(self.workers_csv, WORKER_COLUMNS, workers)
        self._append(self.cases_csv, CASE_COLUMNS, [case_row])

    @staticmethod
    def _read(file: Path) -> list[dict[str, str]]:
        """Complete rows only: a line cut short by a kill (no trailing newline) is ignored."""
        if not file.exists():
            return []
        text = file.read_text()
        if text and not text.endswith("\n"):
            text = text[: text.rfind("\n") + 1]
        return list(csv.DictReader(io.StringIO(text)))

    def cases(self) -> list[dict[str, str]]:
        return self._read(self.cases_csv)

    def workers(self) -> list[dict[str, str]]:
        return self._read(self.workers_csv)

    def repair(self) -> set[str]:
        """Drop rows of unfinished cases (and torn lines) and of failed or partial cases, which
        a resume runs again; returns the ids of the cases that stay measured."""
        cases = self.cases()
        seen: dict[str, dict[str, str]] = {}
        for row in cases:
            if row_status(row) == OK:
                seen.setdefault(row["case-id"], row)
        done = set(seen)
        workers = [r for r in self.workers() if r.get("case-id") in done]
        for file, cols, rows in (
            (self.cases_csv, CASE_COLUMNS, list(seen.values())),
            (self.workers_csv, WORKER_COLUMNS, workers),
        ):
            tmp = file.with_suffix(".csv.tmp")
            with open(tmp, "w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=cols, lineterminator="\n")
                writer.writeheader()
                for row in rows:
                    writer.writerow({k: row.get(k, "") for k in cols})
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, file)
        return done


def latest_run(runs: Path) -> Path | None:
    """The most recent run folder (run ids sort by time)."""
    if not runs.exists():
        return None
    folders = sorted(p for p in runs.iterdir() if (p / "run.json").exists())
    return folders[-1] if folders else None

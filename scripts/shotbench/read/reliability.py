"""Reliability per backend: what faults did to a run, next to a fault-free run of the same plan.

Read from run folders only (workers.csv, cases.csv): tasks, failed tasks, retries the client
reported, rows whose bytes did not match the local copy, and the slowdown of the median
ok-case runtime against the fault-free run (same backend, mode, workers, page buffer).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from shotbench.read.results import RUN_KIND
from shotbench.read.status import OK, row_status
from shotbench.runs import RunFolder

COLUMNS = ["backend", "rows", "failed", "timeouts", "retries", "wrong-bytes", "verified", "slowdown"]


def _case_key(row: dict[str, str]) -> tuple[str, ...]:
    return (row["backend"], row["obj-type"], row["num-workers"], row["pb-size"], row.get("chunk-cache", ""))


def _median_runtimes(rows: list[dict[str, str]]) -> dict[tuple[str, ...], float]:
    groups: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for r in rows:
        if row_status(r) == OK:
            groups[_case_key(r)].append(float(r["total-runtime"]))
    return {k: statistics.median(v) for k, v in groups.items()}


def table(run: Path, baseline: Path | None = None) -> list[dict[str, Any]]:
    """One row per backend of `run`; `slowdown` (median over matching cases of faulted ÷
    fault-free runtime) needs `baseline`, else it is None."""
    folder = RunFolder(run, RUN_KIND)
    out: dict[str, dict[str, Any]] = {}
    for w in folder.details():
        b = out.setdefault(w["backend"], {c: 0 for c in COLUMNS} | {"backend": w["backend"], "retries": None})
        b["rows"] += 1
        status = w.get("status") or ("failed" if w.get("error") else OK)
        b["failed"] += status != OK
        b["timeouts"] += status == "timeout"
        if w.get("retries", "") != "":
            b["retries"] = (b["retries"] or 0) + int(w["retries"])
        b["wrong-bytes"] += w.get("verified") == "no"
        b["verified"] += w.get("verified") == "yes"
    faulted = _median_runtimes(folder.cases())
    clean = _median_runtimes(RunFolder(baseline, RUN_KIND).cases()) if baseline else {}
    for name, b in out.items():
        ratios = [faulted[k] / clean[k] for k in faulted if k[0] == name and k in clean and clean[k] > 0]
        b["slowdown"] = statistics.median(ratios) if ratios else None
    return [out[k] for k in sorted(out)]


def render(rows: list[dict[str, Any]]) -> str:
    """A fixed-width text table (retries `-` where the client cannot tell)."""
    lines = [f"{'backend':<10} {'rows':>5} {'failed':>6} {'timeouts':>8} {'retries':>7} {'wrong':>5} "
             f"{'verified':>8} {'slowdown':>8}"]
    for r in rows:
        retries = "-" if r["retries"] is None else str(r["retries"])
        slow = "-" if r["slowdown"] is None else f"{r['slowdown']:.2f}x"
        lines.append(f"{r['backend']:<10} {r['rows']:>5} {r['failed']:>6} {r['timeouts']:>8} {retries:>7} "
                     f"{r['wrong-bytes']:>5} {r['verified']:>8} {slow:>8}")
    return "\n".join(lines)

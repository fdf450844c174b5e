"""After how many reads of a file does building its chunk index pay for itself?

An indexed reader (kerchunk) spends `index-time` once per file, then reads each file faster
than the reader it replaces when the index saves the HDF5 metadata reads. Break-even is the
number of reads at which the saving has repaid the build: index time ÷ saving per read.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any


def break_even_reads(index_time: float, indexed_read: float, baseline_read: float) -> float | None:
    """Reads of one file after which its index has paid off (rounded up); None if it never
    does (indexed reads are not faster than the baseline's)."""
    saving = baseline_read - indexed_read
    if saving <= 0 or index_time < 0:
        return None
    return float(math.ceil(index_time / saving)) if index_time > 0 else 0.0


def _num(v: Any) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if x != x else x


def per_file_read_time(workers: Iterable[dict[str, Any]], backend: str, mode: str) -> float | None:
    """Median seconds per file read (`mean-obj-time`) of error-free rows of one backend and mode."""
    vals = [
        _num(r.get("mean-obj-time"))
        for r in workers
        if r.get("backend") == backend and r.get("obj-type") == mode and not r.get("error")
    ]
    known = [v for v in vals if v is not None]
    return statistics.median(known) if known else None


def per_file_index_time(workers: Iterable[dict[str, Any]], backend: str) -> float | None:
    """Median build seconds of one file's index (a row's index-time ÷ its files)."""
    vals = []
    for r in workers:
        t, n = _num(r.get("index-time")), _num(r.get("wrkr-num-objs"))
        if r.get("backend") == backend and t is not None and n:
            vals.append(t / n)
    return statistics.median(vals) if vals else None


def summary_lines(
    workers: list[dict[str, Any]],
    indexed: str = "kerchunk",
    baselines: tuple[str, ...] = ("fsspec", "ros3-1.14", "local"),
) -> list[str]:
    """One line per mode: the index's cost per file and its break-even against each baseline run."""
    idx = per_file_index_time(workers, indexed)
    if idx is None:
        return []
    lines = []
    for mode in sorted({r.get("obj-type", "") for r in workers if r.get("backend") == indexed}):
        mine = per_file_read_time(workers, indexed, mode)
        if mine is None:
            continue
        parts = []
        for base in baselines:
            theirs = per_file_read_time(workers, base, mode)
            if theirs is None:
                continue
            n = break_even_reads(idx, mine, theirs)
            parts.append(f"vs {base}: {'never' if n is None else f'{n:.0f} reads'}")
        if parts:
            lines.append(f"{indexed} index {idx:.3f} s/file ({mode}): pays for itself " + ", ".join(parts))
    return lines

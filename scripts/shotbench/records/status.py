"""Status is the truth: what a task, a case and a run ended as.

A failed or partial case is not a measurement: its runtime never enters a summary, ratio,
confidence interval or plot. These rules live here so the runner (which writes the status)
and the analysis (which reads old and new run folders) agree on one meaning.

`unsupported` is neither a measurement nor a failure: the reader (or client) declared that it
cannot read this shape of file or object (`unsupported: <reader>: <what>` in the error cell). It
is a finding, shown in its own column and in the capability matrix, and it never sinks a run:
`is_failure` is the one test of "did something go wrong", for the exit code and for resume.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

OK, PARTIAL, FAILED, TIMEOUT, UNSUPPORTED = "ok", "partial", "failed", "timeout", "unsupported"
UNSUPPORTED_PREFIX = "unsupported: "  # how an error cell says it (shotbench.backends.unsupported)
STALL = "stall"  # a task that finished, but far beyond its peers: a stalled connection, not a measurement
# A time is a stall when it is more than STALL_FACTOR times the median of its peers and more than
# STALL_MIN_S seconds beyond it. Under `stalls-2pc` a stalled connection waits 120 s against a case's
# usual seconds; ordinary spread between tasks or trials is far below 10x.
STALL_FACTOR = 10.0
STALL_MIN_S = 5.0
CASE_STATUSES = (OK, PARTIAL, FAILED, UNSUPPORTED)
# run.json status
RUNNING, COMPLETE, INTERRUPTED = "running", "complete", "interrupted"


def is_unsupported(error: str) -> bool:
    """An error cell in which the reader declared the shape unsupported (not a crash)."""
    return str(error or "").strip().startswith(UNSUPPORTED_PREFIX)


def is_failure(status: str) -> bool:
    """Did something go wrong? Everything but `ok` and `unsupported` (a finding, not a failure)
    sinks a run's exit code and is run again on resume."""
    return status not in (OK, UNSUPPORTED)


def task_status(error: str) -> str:
    """One worker row: `ok`; `unsupported` when the reader declared the shape unsupported;
    `failed` when the row carries any other error."""
    if not error:
        return OK
    return UNSUPPORTED if is_unsupported(error) else FAILED


def case_status(task_statuses: Iterable[str], case_error: bool) -> str:
    """`ok` when every task succeeded; `unsupported` when the only problems are tasks whose
    reader declared the shape unsupported (even if it read some of it: a partial read is not a
    measurement of the case); `failed` when none succeeded (or the case itself broke);
    `partial` when some did."""
    statuses = list(task_statuses)
    if case_error and not statuses:
        return FAILED
    if not case_error and UNSUPPORTED in statuses and all(s in (OK, UNSUPPORTED) for s in statuses):
        return UNSUPPORTED
    bad = sum(1 for s in statuses if s != OK)
    if not statuses or bad == len(statuses):
        return FAILED
    if bad or case_error:
        return PARTIAL
    return OK


def error_count(value: Any) -> int:
    """The integer `errors` of a case row, also from old run folders whose column held text
    such as "16 errors; first: …" (an unparseable non-empty text counts as one)."""
    text = "" if value is None else str(value).strip()
    if text in ("", "nan", "0"):
        return 0
    match = re.match(r"(\d+)", text)
    return int(match.group(1)) if match else 1


def legacy_case_status(row: Mapping[str, Any]) -> str:
    """Status of a case row written before the `status` column existed."""
    runtime = str(row.get("total-runtime", "") or "").strip()
    if runtime in ("", "nan"):
        return FAILED
    return FAILED if error_count(row.get("errors")) else OK


def run_status(case_statuses: Iterable[str]) -> str:
    """`complete` when no case failed (ok or unsupported), `failed` when none is ok, else `partial`."""
    statuses = list(case_statuses)
    ok = sum(1 for s in statuses if s == OK)
    if not any(is_failure(s) for s in statuses):
        return COMPLETE
    return FAILED if ok == 0 else PARTIAL


def row_status(row: Mapping[str, Any]) -> str:
    """A case row's status, whether written with the `status` column or before it."""
    return str(row.get("status") or "") or legacy_case_status(row)


def beyond(value: float, peers: Sequence[float]) -> bool:
    """`value` is far beyond the median of `peers` (see STALL_FACTOR); False without peers."""
    if not peers:
        return False
    med = statistics.median(peers)
    return value > max(STALL_FACTOR * med, med + STALL_MIN_S)


def stalled(times: Sequence[float], sizes: Sequence[float] | None = None) -> list[bool]:
    """Which of a case's task times are stalls, each judged against the case's other tasks.

    With `sizes` (bytes each task read), a task must also be slow per byte, so a task that read
    a much larger signal is not taken for a stalled one."""
    out = []
    for i, t in enumerate(times):
        others = [x for j, x in enumerate(times) if j != i]
        slow = beyond(t, others)
        if slow and sizes is not None and len(sizes) == len(times):
            rates = [x / max(float(b), 1.0) for x, b in zip(times, sizes)]
            slow = rates[i] > STALL_FACTOR * statistics.median(rates[:i] + rates[i + 1 :])
        out.append(slow)
    return out

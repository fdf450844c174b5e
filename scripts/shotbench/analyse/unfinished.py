"""Runs that did not measure every case they planned: named above a report's answer.

An interrupted run (Ctrl-C, a full disk, a killed terminal) keeps the cases it finished, and a
report can be rendered from it. Its answer then ranks only what was measured: a backend whose
cases never ran is simply absent, so it cannot lose. The report says so, which cases are missing,
and how to finish the run, before the answer is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shotbench.records.schema import RUN_KIND
from shotbench.records.status import INTERRUPTED, RUNNING
from shotbench.runs import RunFolder, read_meta, resume_hint

SHOWN = 4  # missing cases named one by one; the rest are counted


@dataclass(frozen=True)
class Unfinished:
    """A run with planned cases it did not measure."""

    run: Path
    status: str
    planned: int | None  # None: an older run.json without its plan
    missing: list[str]  # the cases not measured, as "backend mode wN pb…"
    kind: str = RUN_KIND.name  # "read" (bench) or "transfer": which command resumes it


def _label(case: dict) -> str:
    pb = case.get("pb_size")
    return f"{case.get('backend')} {case.get('mode')} w{case.get('workers')}" + (f" pb {pb}" if pb else "")


def unfinished(run: Path) -> Unfinished | None:
    """The planned cases of `run` with no row in its cases.csv; None when every one has a row and
    the run ended (an interrupted or running run is unfinished even when its plan is unknown)."""
    try:
        meta = read_meta(run)
    except (OSError, ValueError):
        return None
    status, kind = str(meta.get("status") or ""), str(meta.get("kind") or RUN_KIND.name)
    plan = meta.get("plan") if kind == RUN_KIND.name else None  # a transfer run's plan is its matrix, not a list
    planned = [p for p in plan or [] if isinstance(p, dict) and p.get("case_id")]
    measured = {(r.get("case-id"), str(r.get("trial"))) for r in RunFolder(run, RUN_KIND).cases()} if planned else set()
    missing = [_label(p) for p in planned if (p["case_id"], str(p.get("trial"))) not in measured]
    if not missing and status not in (INTERRUPTED, RUNNING):
        return None
    return Unfinished(Path(run), status, len(planned) or None, missing, kind)


def summary(u: Unfinished) -> str:
    """`RUN` was interrupted with N of its M planned cases measured (or how else it stands)."""
    how = "is still running" if u.status == RUNNING else "was interrupted" if u.status == INTERRUPTED else "stopped"
    done = (
        f"with {u.planned - len(u.missing)} of its {u.planned} planned cases measured"
        if u.planned
        else "before it measured every case it planned"
    )
    return f"`{u.run.name}` {how} {done}"


def caveat(runs: list[Path]) -> str:
    """The sentence above a report's answer when a run did not measure all it planned ("" when
    every run did)."""
    lines = []
    for u in filter(None, map(unfinished, runs)):
        labels = list(dict.fromkeys(u.missing))  # a configuration missing in several trials is named once
        named = ", ".join(labels[:SHOWN])
        more = f" and {len(labels) - SHOWN} more" if len(labels) > SHOWN else ""
        lines.append(
            f"**Unfinished run:** {summary(u)}. "
            + (f"Not measured: {named}{more}; they are missing from every table and figure below, so the "
               "answer ranks only what was measured. " if u.missing else "")
            + f"Then {resume_hint(u.run, u.kind)} and render the report again."
        )  # fmt: skip
    return "\n\n".join(lines)

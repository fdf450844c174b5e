"""Faults the HTTP fault-injecting proxy injected, credited to the case they happened in.

The proxy counts per kind, and the GETs it answered itself, into a JSON file (store/faultproxy.py); the runner reads it right
before and right after each case and its raw-get ceiling, so a case's count is exactly the
faults its backend's requests got (those of the ceiling, of the health checks between cases and
of staging are counted apart).
Recorded in run.json as `faults_injected`, next to what the clients counted in workers.csv.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shotbench.store.faultproxy import ANSWERED_GETS, KINDS, describe, read_counts

COUNTS = (*KINDS, ANSWERED_GETS)


def _add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: int(a.get(k, 0)) + int(b.get(k, 0)) for k in COUNTS}


@dataclass
class InjectedFaults:
    """Per-case counts for one bench process; `stats` None (no HTTP faults) makes it a no-op.
    `earlier` is run.json's `faults_injected` of the sessions before a `--resume`. A case's
    count is its backend's own reads: the raw-get ceiling measured after it counts apart."""

    stats: Path | None = None
    earlier: dict[str, Any] = field(default_factory=dict)
    by_case: dict[str, dict[str, int]] = field(default_factory=dict)
    ceilings: dict[str, int] = field(default_factory=dict)  # faults the raw-get ceilings met, whole run
    _ceiling_now: dict[str, int] = field(default_factory=dict)  # ... within the current case

    def __post_init__(self) -> None:
        self.by_case = {**self.earlier.get("by_case", {}), **self.by_case}
        self.ceilings = _add(self.earlier.get("raw_get_ceiling", {}), self.ceilings)

    @contextlib.contextmanager
    def _counting(self) -> Iterator[dict[str, int]]:
        """Faults injected while the block ran (zeros without a proxy), filled in at its end."""
        got = {k: 0 for k in COUNTS}
        before = read_counts(self.stats) if self.stats is not None else got
        try:
            yield got
        finally:
            if self.stats is not None:
                after = read_counts(self.stats)
                got.update({k: after[k] - before[k] for k in COUNTS})

    @contextlib.contextmanager
    def case(self, case_id: str) -> Iterator[None]:
        self._ceiling_now = {}
        try:
            with self._counting() as got:
                yield
        finally:
            if self.stats is not None:
                self.by_case[case_id] = {k: got[k] - self._ceiling_now.get(k, 0) for k in COUNTS}

    @contextlib.contextmanager
    def ceiling(self) -> Iterator[None]:
        """Around a case's raw-get ceiling measurement: its faults are not the backend's."""
        try:
            with self._counting() as got:
                yield
        finally:
            self._ceiling_now = _add(self._ceiling_now, got)
            self.ceilings = _add(self.ceilings, got)

    def record(self) -> dict[str, Any] | None:
        """run.json's `faults_injected`: per case (the backend's reads), the raw-get ceilings',
        and the proxy's total over every session of the run (staging and health checks
        included); None without HTTP faults."""
        if self.stats is None and not self.earlier:
            return None
        now = read_counts(self.stats) if self.stats is not None else {}
        return {
            "by_case": self.by_case,
            "raw_get_ceiling": self.ceilings,
            "total": _add(self.earlier.get("total", {}), now),
        }


def summary_lines(record: dict[str, Any] | None, plan: list[dict[str, Any]]) -> list[str]:
    """`faults injected by the HTTP proxy: …` for the run, then one line per backend."""
    if not record:
        return []
    backend_of = {c["case_id"]: c["backend"] for c in plan}
    per_backend: dict[str, dict[str, int]] = {}
    for case_id, counts in record.get("by_case", {}).items():
        name = backend_of.get(case_id, "?")
        per_backend[name] = _add(per_backend.get(name, {}), counts)
    lines = [
        f"faults injected by the HTTP proxy: {describe(_add(record.get('total', {}), {}))} "
        "(whole run: staging, health checks and raw-get ceilings included)"
    ]
    lines += [f"  {name:<10} {describe(counts)}" for name, counts in sorted(per_backend.items())]
    lines.append(f"  {'(raw-get ceilings)':<10} {describe(_add(record.get('raw_get_ceiling', {}), {}))}")
    return lines

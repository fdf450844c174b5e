"""`shotbench bench-harness`: the upstream harness pattern against ours, same files, one run.

Upstream, per case: a fresh Dask Client (created before the clock, default settings),
work split into `len(items) // W + 1` batches, one submit/gather round per signal, and a
separately timed gather-info pass. Ours: warm pinned workers, one balanced task per worker,
parked and released together. The printed ratio (ours ÷ upstream total runtime) says how
much of upstream's runtime was harness rather than I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from shotbench.backends import registry


@dataclass(frozen=True)
class HarnessRow:
    """One case timed both ways on the same files: upstream's harness pattern, then ours."""

    run_id: str
    trial: int
    backend: str
    obj_type: str
    num_workers: int
    pb_size: int
    upstream_runtime: float
    upstream_efficiency: float
    upstream_info_time: float
    upstream_wall: float
    ours_runtime: float
    ours_efficiency: float

    @property
    def ratio(self) -> float:
        return self.ours_runtime / self.upstream_runtime if self.upstream_runtime else float("nan")

    def csv(self) -> dict[str, Any]:
        """The row under the CSV's column names (`run-id`, …, `ratio`)."""
        out = {f.name.replace("_", "-"): getattr(self, f.name) for f in fields(self)}
        return {**out, "ratio": self.ratio}


COLUMNS = [f.name.replace("_", "-") for f in fields(HarnessRow)] + ["ratio"]


def default_backends() -> list[str]:
    try:
        if Path(registry.get("ros3-1.14").python()).exists():
            return ["local", "ros3-1.14"]
    except Exception:  # noqa: BLE001 - env not built: fall back to an S3 backend of the main env
        pass
    return ["local", "obstore"]

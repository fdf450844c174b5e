"""`shotbench bench-harness`: the upstream harness pattern against ours, same files, one run.

Upstream, per case: a fresh Dask Client (created before the clock, default settings),
work split into `len(items) // W + 1` batches, one submit/gather round per signal, and a
separately timed gather-info pass. Ours: warm pinned workers, one balanced task per worker,
parked and released together. The printed ratio (ours ÷ upstream total runtime) says how
much of upstream's runtime was harness rather than I/O.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from shotbench.backends import registry
from shotbench.bench.prepare import check_envs, prepare, say
from shotbench.bench.protocol import Prepare, Run, Spec, Upstream
from shotbench.paths import data_dir, state_dir
from shotbench.plan import matrix as planmod
from shotbench.plan import profiles
from shotbench.provenance import new_run_id
from shotbench.records.schema import efficiency, task_time_sum
from shotbench.runs import interleave
from shotbench.store.credentials import CredentialSource
from shotbench.units import MiB


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


def run_harness(
    cfg: profiles.BenchConfig, data: str | None, page_buffer: int, shots_dir: Path | None, csv_path: Path | None
) -> Path:
    """Both harnesses on the same files, cases interleaved by trial; the per-case table's path."""
    from shotbench.bench.driverpool import Drivers

    check_envs(cfg.backends)
    run_id = new_run_id()
    out_csv = csv_path or data_dir() / "harness" / f"{run_id}.csv"
    rows: list[HarnessRow] = []
    with prepare(cfg, data, "none", shots_dir, None) as prep:
        wl = prep.workload
        drivers = Drivers(wl.s3, state_dir() / "logs" / f"harness-{run_id}", None, cfg.max_live_workers, prep.backends)
        creds = CredentialSource(wl.s3)  # a current set for every case, carried in its spec
        try:
            pb = int(page_buffer)
            combos = [(b, m, w) for b in prep.backends for m in cfg.modes for w in cfg.workers]
            trials = range(1, cfg.trials + 1)
            for trial, (backend, mode, w) in interleave(
                combos, trials, lambda t: planmod.seeded(cfg.seed, "harness", t)
            ):
                cls = registry.get(backend)
                drv = drivers.for_backend(cls)
                files = wl.files_for(mode)
                case = planmod.Case("h", trial, 0, backend, mode, w, pb, MiB)
                now = creds.current()
                spec = Spec(backend, wl.source, pb, MiB, cfg.options.get(backend, {}),
                            credentials=None if now is None else now.to_json())  # fmt: skip
                if mode == "shots":
                    shot = planmod.pick_shot(wl.files, cfg.seed, trial, w)
                    rounds = [planmod.shots_tasks(shot, w, upstream=True)]
                    info = [shot]
                else:
                    rounds = planmod.signals_rounds(files, w)
                    info = list(files)
                up = drv.request(Upstream(w, spec, rounds, [(f.key, f.size) for f in info]))
                drivers.reserve(cls.env_key(), w)
                drv.request(Prepare(w, spec))
                tasks = planmod.case_tasks(case, files, cfg.seed, cls.reads_hdf5)
                ours = drv.request(Run(tasks))
                row = HarnessRow(
                    run_id,
                    trial,
                    backend,
                    mode,
                    w,
                    pb,
                    up.total,
                    efficiency(task_time_sum(up.rows), w, up.total),
                    up.info_time,
                    up.wall,
                    ours.total,
                    efficiency(task_time_sum(ours.rows), w, ours.total),
                )
                rows.append(row)
                say(
                    f"{backend:<9} {mode:<7} w={w:<2} t{trial}  upstream {row.upstream_runtime:.3f}s "
                    f"(eff {row.upstream_efficiency:.2f}, info {row.upstream_info_time:.3f}s, "
                    f"wall {row.upstream_wall:.2f}s)  ours {row.ours_runtime:.3f}s "
                    f"(eff {row.ours_efficiency:.2f})  ratio {row.ratio:.2f}"
                )
        finally:
            drivers.stop()
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    with open(out_csv, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(r.csv() for r in rows)
    up_total = sum(r.upstream_runtime for r in rows)
    ours_total = sum(r.ours_runtime for r in rows)
    ratio = ours_total / up_total if up_total else float("nan")
    say("")
    say(
        f"total runtime: upstream {up_total:.2f}s, ours {ours_total:.2f}s -> ours = {ratio:.2f}x upstream "
        f"(median per case {statistics.median(r.ratio for r in rows):.2f}x; goal <= 0.8x)"
    )
    say(
        f"harness efficiency (median): upstream {statistics.median(r.upstream_efficiency for r in rows):.2f}, "
        f"ours {statistics.median(r.ours_efficiency for r in rows):.2f}"
    )
    say(f"results: {out_csv}")
    return out_csv

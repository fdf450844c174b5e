"""`shotbench direction`: which condition decides whether ROS3 2.x is faster or slower than 1.14.

The upstream study found 2.x faster; default local runs found it slower. This ablation starts from
the default conditions (embedded server, https, loopback, 16 MB files, 2 workers, 256 MiB page
buffer) and moves one knob at a time: page buffer, workers, TLS, latency, per-connection
bandwidth, how 2.x finds its credentials, 2.2's block size (which is also the size of its
open-time read), and which 2.x (our 2.0 build or the h5py-s3 wheel). Each group of settings that needs its own server is one ordinary
`shotbench bench` run in `<run>/settings/<group>/`; this module runs them in turn (resumable: a
finished group is kept) and then reduces them to one table: per setting and mode, the 2.x ÷ 1.14
runtime ratio with its bootstrap interval, and the requests, bytes and open/read time per open.
`direction.md` names the knobs whose values put the ratio on both sides of 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from shotbench.diskspace import atomic_write
from shotbench.errors import UserError
from shotbench.paths import data_dir
from shotbench.provenance import git_commit, machine_info, new_run_id, utc_iso
from shotbench.runs import DIRECTION
from shotbench.studies.direction.ablation import (
    BASE_FILE,
    BASE_PAGE,
    BASE_PB,
    BASE_WORKERS,
    BIG_FILE,
    REFERENCE,
    UNTESTED,
    interval,
    knob_table,
    knob_value,
    pb_value,
    verdicts,
)
from shotbench.studies.opencost import opencost_run
from shotbench.units import KiB, MiB

PB_64 = 64 * MiB


@dataclass(frozen=True)
class Group:
    """One bench run of the ablation: a server condition and the matrix measured under it.

    `bandwidth` (MB/s per connection, 0: none) and `credentials` label the condition in the cells;
    `block_caches` and `options` go into the run's config as they are."""

    name: str
    tls: bool
    network: str  # shotbench.store.network profile
    latency_ms: int
    backends: tuple[str, ...]
    page_buffers: tuple[int, ...]
    workers: tuple[int, ...]
    bandwidth: int = 0
    credentials: str = "explicit"
    block_caches: tuple[int | str, ...] = ()
    options: tuple[tuple[str, str, str], ...] = ()  # (backend, key, value)
    file_size: int = BASE_FILE  # synthetic files of another shape live in their own folder
    page_size: int = BASE_PAGE
    shots: int = 0  # files made and read; 0: the bench default

    @property
    def own_files(self) -> bool:
        return (self.file_size, self.page_size) != (BASE_FILE, BASE_PAGE)

    def config(self, trials: int, signals_files: int, signals_names: int) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "backends": list(self.backends),
            "modes": ["shots", "signals"],
            "workers": list(self.workers),
            "page_buffers": list(self.page_buffers),
            "trials": trials,
            "signals_files": signals_files,
            "signals_names": signals_names,
        }
        if self.block_caches:
            conf["block_caches"] = list(self.block_caches)
        if self.own_files:
            conf.update(file_size=self.file_size, page_size=self.page_size)
        if self.shots:
            conf["shots"] = self.shots
        return conf

    def config_toml(self, trials: int, signals_files: int, signals_names: int) -> str:
        """The run's config file: top-level keys, then one `[options.<backend>]` table each."""
        conf = self.config(trials, signals_files, signals_names)
        text = "".join(f"{k} = {json.dumps(v)}\n" for k, v in conf.items())
        for backend in dict.fromkeys(b for b, _, _ in self.options):
            text += f"[options.{json.dumps(backend)}]\n"
            text += "".join(f"{k} = {json.dumps(v)}\n" for b, k, v in self.options if b == backend)
        return text


TWO = ("ros3-1.14", "ros3-2.0")
PBS = (0, BASE_PB)
# 2.2's block cache setting N sets blocks of min(16 MiB, N): "default" is 16 MiB blocks. On
# paged files the driver caches only the first block, read at open: so the block size is the
# size of 2.2's open-time read, which 2.0 and 2.1 fix at 16 MiB.
BLOCK_SIZES: tuple[int | str, ...] = ("default", 8 * MiB, 64 * KiB)
GROUPS: tuple[Group, ...] = (
    # the default conditions, with the page-buffer knob and the 2.x build knob inside
    Group("base", True, "none", 0, ("ros3-1.14", "ros3-2.0", "ros3-wheel"), (0, PB_64, BASE_PB), (BASE_WORKERS,)),
    Group("http", False, "none", 0, TWO, PBS, (BASE_WORKERS,)),
    Group("latency-20ms", True, "s3-same-region", 20, TWO, PBS, (BASE_WORKERS,)),
    Group("workers", True, "none", 0, TWO, (BASE_PB,), (1, 8)),
    Group("latency-70ms", True, "latency-70ms", 70, TWO, PBS, (BASE_WORKERS,)),
    Group("bandwidth-90", True, "bandwidth-90", 0, TWO, PBS, (BASE_WORKERS,), bandwidth=90),
    Group("bandwidth-40", True, "bandwidth-40", 0, TWO, PBS, (BASE_WORKERS,), bandwidth=40),
    Group(
        "credentials-chain",
        True,
        "none",
        0,
        TWO,
        PBS,
        (BASE_WORKERS,),
        credentials="chain",
        options=(("ros3-2.0", "credentials", "chain"),),
    ),
    Group("block-size-2.2", True, "none", 0, ("ros3-1.14", "ros3-2.2"), PBS, (BASE_WORKERS,), block_caches=BLOCK_SIZES),
    # Page size, on 64 MB files (a 32 MB page needs a file of two pages at least): aws-c-s3 splits a
    # read into 8 MiB parts fetched in parallel, so only reads of several parts (a 32 MB page) can gain.
    # deflate by zlib-ng instead of the system zlib, on the same 2.0.0 (the upstream 2.0 arm's build flag)
    Group("zlib-ng", True, "none", 0, ("ros3-1.14", "ros3-2.0-zlibng"), PBS, (BASE_WORKERS,)),
    Group("pages-8MB", True, "none", 0, TWO, PBS, (BASE_WORKERS,), file_size=BIG_FILE, page_size=8_000_000, shots=8),
    Group("pages-32MB", True, "none", 0, TWO, PBS, (BASE_WORKERS,), file_size=BIG_FILE, page_size=32_000_000, shots=8),
)


@dataclass
class DirectionRun:
    """run.json of an ablation run (kind `direction`: not a read run, reports skip it)."""

    run_id: str
    started: str
    trials: int
    signals_files: int
    signals_names: int
    groups: list[dict[str, Any]] = field(default_factory=list)
    status: str = "running"
    finished: str = ""
    load_start: list[float] = field(default_factory=list)
    load_end: list[float] = field(default_factory=list)
    machine: dict[str, Any] = field(default_factory=dict)
    git_commit: str = ""
    kind: str = DIRECTION


def load_average() -> list[float]:
    """The machine's 1, 5 and 15 minute load, recorded so a busy machine shows in the run."""
    return [round(x, 2) for x in os.getloadavg()]


def _group_run(folder: Path, group: Group) -> Path | None:
    """The finished bench run of a group (status complete), if any."""
    base = folder / "settings" / group.name
    if not base.is_dir():
        return None
    for run in sorted(base.iterdir(), reverse=True):
        meta = run / "run.json"
        if meta.is_file():
            try:
                if json.loads(meta.read_text()).get("status") == "complete":
                    return run
            except json.JSONDecodeError:
                continue
    return None


def run_group(folder: Path, group: Group, meta: DirectionRun, timeout: float) -> Path:
    """One `shotbench bench` run for a group; an unfinished one is resumed."""
    done = _group_run(folder, group)
    if done is not None:
        return done
    out = folder / "settings" / group.name
    out.mkdir(parents=True, exist_ok=True)
    cfg = out / "config.toml"
    cfg.write_text(group.config_toml(meta.trials, meta.signals_files, meta.signals_names))
    cmd = [
        sys.executable,
        "-m",
        "shotbench.cli",
        "bench",
        "--config",
        str(cfg),
        "--runs-dir",
        str(out),
        "--network",
        group.network,
        "--tls" if group.tls else "--no-tls",
        "--keep-going",
    ]
    if group.own_files:  # files of another shape never overwrite the default data/shots
        cmd += ["--shots-dir", str(data_dir() / f"shots-{group.file_size}-{group.page_size}")]
    unfinished = [p for p in out.iterdir() if (p / "run.json").is_file()]
    if unfinished:
        cmd = [
            sys.executable,
            "-m",
            "shotbench.cli",
            "bench",
            "--resume",
            str(sorted(unfinished)[-1]),
            "--runs-dir",
            str(out),
            "--keep-going",
        ]
    print(f"[direction] {group.name}: {' '.join(cmd[3:])}", flush=True)
    try:
        proc = subprocess.run(cmd, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise UserError(
            f"the {group.name} settings took longer than {timeout:.0f} s; rerun `make bench-direction` "
            "to resume them, or give fewer --trials."
        ) from None
    done = _group_run(folder, group)
    if done is None:
        raise UserError(
            f"the {group.name} settings did not finish (exit {proc.returncode}); see the output above, "
            "then rerun `make bench-direction` to resume."
        )
    return done


# ------------------------------------------------------------------ reduce


def _per_open(workers: pd.DataFrame) -> pd.DataFrame:
    """Per case: opens, and requests, bytes and open/read seconds per open (client-side meters)."""
    w = workers.copy()
    if "block-size" not in w.columns:
        w["block-size"] = np.nan
    for col in (
        "wrkr-num-objs",
        "client-gets",
        "client-heads",
        "client-bytes",
        "open-file-time",
        "read-data-time",
        "block-size",
    ):
        w[col] = pd.to_numeric(w[col], errors="coerce")
    g = w.groupby("case-id").agg(
        opens=("wrkr-num-objs", "sum"),
        gets=("client-gets", "sum"),
        heads=("client-heads", "sum"),
        bytes=("client-bytes", "sum"),
        open_s=("open-file-time", "sum"),
        read_s=("read-data-time", "sum"),
        block=("block-size", "median"),  # 2.2's block size as the library reports it back
    )
    opens = g["opens"].where(g["opens"] > 0)
    return pd.DataFrame(
        {
            "opens": g["opens"],
            "gets-per-open": g["gets"] / opens,
            "heads-per-open": g["heads"] / opens,
            "MB-per-open": g["bytes"] / opens / 1e6,
            "open-ms": g["open_s"] / opens * 1e3,
            "read-ms": g["read_s"] / opens * 1e3,
            "block-size": g["block"],
        }
    )


def group_cells(run: Path, group: Group) -> pd.DataFrame:
    """One row per (backend, mode, page buffer, workers) of a group's run."""
    cases = pd.read_csv(run / "cases.csv")
    cases = cases[cases["status"] == "ok"]
    workers = pd.read_csv(run / "workers.csv", low_memory=False)
    per_open = _per_open(workers)
    cases = cases.join(per_open, on="case-id")
    if "block-cache" not in cases.columns:
        cases["block-cache"] = np.nan
    cases["block-cache"] = pd.to_numeric(cases["block-cache"], errors="coerce").fillna(-2)  # -2: no block cache
    keys = ["obj-type", "pb-size", "num-workers"]
    rows = []
    for (backend, mode, pb, w, _bc), g in cases.groupby(["backend", *keys, "block-cache"]):
        ref = cases[
            (cases["backend"] == REFERENCE)
            & (cases["obj-type"] == mode)
            & (cases["pb-size"] == pb)
            & (cases["num-workers"] == w)
        ].set_index("trial")["total-runtime"]
        times = g.set_index("trial")["total-runtime"]
        ratio, lo, hi = interval(ref, times) if backend != REFERENCE and len(ref) else (float("nan"),) * 3
        rows.append(
            {
                "group": group.name,
                "tls": group.tls,
                "latency-ms": group.latency_ms,
                "bandwidth-MBps": group.bandwidth,
                "file-MB": group.file_size // 1_000_000,
                "page-MB": group.page_size // 1_000_000,
                "credentials": group.credentials if backend != REFERENCE else "explicit",
                "backend": backend,
                "obj-type": mode,
                "pb-size": int(pb),
                "num-workers": int(w),
                "trials": len(times),
                "runtime-s": float(np.median(times.to_numpy(float))),
                "ratio-vs-1.14": ratio,
                "ci-low": lo,
                "ci-high": hi,
                "hdf5": str(g["hdf5-version"].iloc[0]),
                **{
                    c: float(g[c].median())
                    for c in ("gets-per-open", "heads-per-open", "MB-per-open", "open-ms", "read-ms", "block-size")
                },
            }
        )
    return pd.DataFrame(rows)


def cells(folder: Path) -> pd.DataFrame:
    """Every group's cells; groups not run yet are left out."""
    frames = [group_cells(run, g) for g in GROUPS if (run := _group_run(folder, g)) is not None]
    if not frames:
        raise UserError(f"{folder} has no finished settings yet; run `make bench-direction` first.")
    return pd.concat(frames, ignore_index=True)


def untested(folder: Path) -> list[str]:
    """The settings groups this run has not finished, and the knobs no group measures."""
    return [*(f"the {g.name} settings (not run)" for g in GROUPS if _group_run(folder, g) is None), *UNTESTED]


def markdown(folder: Path, c: pd.DataFrame) -> str:
    """direction.md: the per-open counts, the knob table, and which knobs move the ratio across 1.

    `c` is `cells(folder)`, passed in because the caller has already read every group's tables."""
    meta = json.loads((folder / "run.json").read_text()) if (folder / "run.json").is_file() else {}
    lines = [f"# Direction ablation {folder.name}", ""]
    if meta:
        lines.append(
            f"Trials per setting: {meta.get('trials')}; signals mode reads {meta.get('signals_files')} files × "
            f"{meta.get('signals_names')} signals. Load average (1, 5, 15 min) at start {meta.get('load_start')}, "
            f"at end {meta.get('load_end')}, on {meta.get('machine', {}).get('cpus', '?')} cores."
        )
        lines.append("")
    lines += [
        "## What one open sends (default conditions: https, loopback, 2 workers)",
        "",
        "2.2 at each block size (the size of its open-time read) is from the block-size settings, "
        "measured under the same conditions.",
        "",
        "| libhdf5 | block size | mode | page buffer | GETs per open | HEADs per open | MB per open | open ms | read ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    blocks = c[(c["group"] == "block-size-2.2") & (c["backend"] == "ros3-2.2")] if "block-size" in c.columns else c[:0]
    base = pd.concat([c[(c["group"] == "base")], blocks]).sort_values(["backend", "obj-type", "pb-size"])
    for _, r in base.iterrows():
        block = r.get("block-size")
        size = knob_value("block-size", block) if block is not None and pd.notna(block) else "—"
        lines.append(
            f"| {r['backend']} ({r['hdf5']}) | {size} | {r['obj-type']} | {pb_value(r['pb-size'])} | "
            f"{r['gets-per-open']:.2f} | {r['heads-per-open']:.2f} | {r['MB-per-open']:.1f} | "
            f"{r['open-ms']:.1f} | {r['read-ms']:.1f} |"
        )
    k = knob_table(c)
    lines += [
        "",
        "## One knob at a time: 2.x ÷ 1.14 runtime (median of trials, 95 % bootstrap interval)",
        "",
        f"Baseline: https, no added latency, no bandwidth cap, explicit credentials, {BASE_WORKERS} workers, "
        f"page buffer {BASE_PB // MiB} MiB, ros3-2.0 (ros3-2.2 for its block size). "
        "Below 1: 2.x is faster (the study's direction).",
        "",
        "| knob | mode | page buffer | value | 2.x ÷ 1.14 | interval | trials | 2.x GETs/open | 2.x MB/open |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in k.iterrows():
        lines.append(
            f"| {r['knob']} | {r['obj-type']} | {r['page buffer'] or '—'} | {r['value']} | {r['ratio-vs-1.14']:.2f} | "
            f"{r['ci-low']:.2f}–{r['ci-high']:.2f} | {r['trials']} | {r['gets-per-open']:.2f} | {r['MB-per-open']:.1f} |"
        )
    vs = verdicts(k)
    movers = [v for v in vs if v.crosses]
    lines += ["", "## Which knobs move the ratio across 1", ""]
    clear = [v for v in movers if v.clear]
    if clear:
        for v in clear:
            where = f", {v.page_buffer}" if v.page_buffer else ""
            lines.append(
                f"- **{v.knob}** ({v.mode}{where}): {v.low[1]:.2f} at {v.low[0]} vs {v.high[1]:.2f} at "
                f"{v.high[0]}, both intervals clear of 1."
            )
    else:
        lines.append("- No knob measured puts the ratio on both sides of 1 with both intervals clear of 1.")
    half = [v for v in movers if not v.clear and v.one_clear]
    if half:
        lines += ["", "Across 1 with one of the two intervals clear of 1 (the other touches 1):", ""]
        for v in half:
            where = f", {v.page_buffer}" if v.page_buffer else ""
            lines.append(
                f"- **{v.knob}** ({v.mode}{where}): {v.low[1]:.2f} at {v.low[0]} vs {v.high[1]:.2f} at {v.high[0]}."
            )
    noisy = [v for v in movers if not v.one_clear]
    if noisy:
        lines += ["", "Point estimates on both sides of 1, but an interval overlaps 1 (not a clear move):", ""]
        for v in noisy:
            where = f", {v.page_buffer}" if v.page_buffer else ""
            lines.append(
                f"  - {v.knob} ({v.mode}{where}): {v.low[1]:.2f} at {v.low[0]} vs {v.high[1]:.2f} at {v.high[0]}."
            )
    missing = untested(folder)
    if missing:
        lines += ["", "Not tested in this run: " + "; ".join(missing) + "."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ command


def write_meta(folder: Path, meta: DirectionRun) -> None:
    """run.json replaced whole, so a killed run never leaves half a file."""
    atomic_write(folder / "run.json", json.dumps(asdict(meta), indent=2))


@dataclass(frozen=True)
class AblationSettings:
    """What one ablation run measures, and where its folder goes."""

    parent: Path  # the folder run folders are made in
    trials: int = 3  # per setting, at least 3 for an interval
    signals_files: int = 4  # files read in signals mode
    signals_names: int = 8  # signals read per file in signals mode
    groups: tuple[str, ...] = ()  # only these settings groups; empty: all, then the open-cost reproducer
    group_timeout: float = 1800.0
    resume: Path | None = None  # an interrupted ablation run to finish


def run_ablation(args: AblationSettings) -> Path:
    """Measure every chosen settings group, then reduce the run folder to cells, knobs and direction.md."""
    parent = args.parent
    if args.resume:
        folder = args.resume
        if not (folder / "run.json").is_file():
            raise UserError(f"{folder} is not an ablation run folder (no run.json); pass data/runs/<id>.")
        meta = DirectionRun(
            **{
                k: v
                for k, v in json.loads((folder / "run.json").read_text()).items()
                if k in DirectionRun.__dataclass_fields__
            }
        )
        meta.groups = [asdict(g) for g in GROUPS]  # a resumed run measures this version's groups
    else:
        if args.trials < 3:
            raise UserError("the ablation needs at least 3 trials per setting for an interval; use --trials 3 or more.")
        folder = parent / new_run_id()
        folder.mkdir(parents=True)
        meta = DirectionRun(
            run_id=folder.name,
            started=utc_iso(),
            trials=args.trials,
            signals_files=args.signals_files,
            signals_names=args.signals_names,
            groups=[asdict(g) for g in GROUPS],
            load_start=load_average(),
            machine=machine_info(),
            git_commit=git_commit(),
        )
    write_meta(folder, meta)
    started = time.monotonic()
    chosen = [g for g in GROUPS if not args.groups or g.name in args.groups]
    unknown = sorted(set(args.groups or ()) - {g.name for g in GROUPS})
    if unknown:
        raise UserError(f"unknown settings group {unknown[0]!r}; choose from {', '.join(g.name for g in GROUPS)}.")
    for group in chosen:
        run_group(folder, group, meta, timeout=args.group_timeout)
    if not args.groups:  # what one open sends, by the minimal reproducer (open-cost.csv)
        opencost_run.measure(folder)
    c = cells(folder)
    atomic_write(folder / "cells.csv", c.to_csv(index=False))
    atomic_write(folder / "knobs.csv", knob_table(c).to_csv(index=False))
    meta.status, meta.finished, meta.load_end = "complete", utc_iso(), load_average()
    write_meta(folder, meta)
    text = markdown(folder, c)
    atomic_write(folder / "direction.md", text)
    print(text)
    print(f"[direction] {folder} in {time.monotonic() - started:.0f} s", flush=True)
    return folder

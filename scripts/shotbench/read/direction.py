"""`shotbench direction`: which condition decides whether ROS3 2.x is faster or slower than 1.14.

The upstream study found 2.x faster; default local runs found it slower. This ablation starts from
the default conditions (embedded server, https, loopback, 16 MB files, 2 workers, 256 MiB page
buffer) and moves one knob at a time: page buffer, workers, TLS, latency, and which 2.x (our 2.0
build or the h5py-s3 wheel). Each group of settings that needs its own server is one ordinary
`shotbench bench` run in `<run>/settings/<group>/`; this module runs them in turn (resumable: a
finished group is kept) and then reduces them to one table: per setting and mode, the 2.x ÷ 1.14
runtime ratio with its bootstrap interval, and the requests, bytes and open/read time per open.
`direction.md` names the knobs whose values put the ratio on both sides of 1.
"""

from __future__ import annotations

import argparse
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

from shotbench.errors import UserError
from shotbench.paths import runs_dir
from shotbench.provenance import git_commit, machine_info, new_run_id, utc_iso
from shotbench.units import MiB

KIND = "direction"
REFERENCE = "ros3-1.14"
BASE_PB = 256 * MiB
BASE_WORKERS = 2
PB_64 = 64 * MiB


@dataclass(frozen=True)
class Group:
    """One bench run of the ablation: a server condition and the matrix measured under it."""

    name: str
    tls: bool
    network: str  # shotbench.store.network profile
    latency_ms: int
    backends: tuple[str, ...]
    page_buffers: tuple[int, ...]
    workers: tuple[int, ...]

    def config(self, trials: int, signals_files: int, signals_names: int) -> dict[str, Any]:
        return {
            "backends": list(self.backends),
            "modes": ["shots", "signals"],
            "workers": list(self.workers),
            "page_buffers": list(self.page_buffers),
            "trials": trials,
            "signals_files": signals_files,
            "signals_names": signals_names,
        }


TWO = ("ros3-1.14", "ros3-2.0")
GROUPS: tuple[Group, ...] = (
    # the default conditions, with the page-buffer knob and the 2.x build knob inside
    Group("base", True, "none", 0, ("ros3-1.14", "ros3-2.0", "ros3-wheel"), (0, PB_64, BASE_PB), (BASE_WORKERS,)),
    Group("http", False, "none", 0, TWO, (0, BASE_PB), (BASE_WORKERS,)),
    Group("latency-20ms", True, "s3-same-region", 20, TWO, (0, BASE_PB), (BASE_WORKERS,)),
    Group("workers", True, "none", 0, TWO, (BASE_PB,), (1, 8)),
    Group("latency-70ms", True, "latency-70ms", 70, TWO, (0, BASE_PB), (BASE_WORKERS,)),
)


@dataclass(frozen=True)
class Knob:
    """One knob: the cell column it varies, and the baseline every other column keeps."""

    name: str
    column: str
    by_pb: bool  # report at each page buffer separately ("with and without a page buffer")


KNOBS: tuple[Knob, ...] = (
    Knob("page buffer", "pb-size", False),
    Knob("workers", "num-workers", False),
    Knob("https vs http", "tls", True),
    Knob("latency", "latency-ms", True),
    Knob("2.x: 2.0.0 build vs 2.1.1 wheel", "backend", True),
)
BASELINE = {"pb-size": BASE_PB, "num-workers": BASE_WORKERS, "tls": True, "latency-ms": 0, "backend": "ros3-2.0"}


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
    kind: str = KIND


def _load() -> list[float]:
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
    conf = group.config(meta.trials, meta.signals_files, meta.signals_names)
    cfg.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in conf.items()))
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
    for col in ("wrkr-num-objs", "client-gets", "client-heads", "client-bytes", "open-file-time", "read-data-time"):
        w[col] = pd.to_numeric(w[col], errors="coerce")
    g = w.groupby("case-id").agg(
        opens=("wrkr-num-objs", "sum"),
        gets=("client-gets", "sum"),
        heads=("client-heads", "sum"),
        bytes=("client-bytes", "sum"),
        open_s=("open-file-time", "sum"),
        read_s=("read-data-time", "sum"),
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
        }
    )


def interval(
    ref: np.ndarray, other: np.ndarray, n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """median(other) ÷ median(ref) with a percentile-bootstrap interval over trials."""
    ratio = float(np.median(other) / np.median(ref))
    if len(ref) < 2 or len(other) < 2:
        return ratio, float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    a = np.median(rng.choice(ref, (n_boot, len(ref))), axis=1)
    b = np.median(rng.choice(other, (n_boot, len(other))), axis=1)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(b / a, [tail, 100 - tail])
    return ratio, float(lo), float(hi)


def group_cells(run: Path, group: Group) -> pd.DataFrame:
    """One row per (backend, mode, page buffer, workers) of a group's run."""
    cases = pd.read_csv(run / "cases.csv")
    cases = cases[cases["status"] == "ok"]
    workers = pd.read_csv(run / "workers.csv", low_memory=False)
    per_open = _per_open(workers)
    cases = cases.join(per_open, on="case-id")
    keys = ["obj-type", "pb-size", "num-workers"]
    rows = []
    for (backend, mode, pb, w), g in cases.groupby(["backend", *keys]):
        ref = cases[
            (cases["backend"] == REFERENCE)
            & (cases["obj-type"] == mode)
            & (cases["pb-size"] == pb)
            & (cases["num-workers"] == w)
        ]["total-runtime"].to_numpy(float)
        times = g["total-runtime"].to_numpy(float)
        ratio, lo, hi = interval(ref, times) if backend != REFERENCE and len(ref) else (float("nan"),) * 3
        rows.append(
            {
                "group": group.name,
                "tls": group.tls,
                "latency-ms": group.latency_ms,
                "backend": backend,
                "obj-type": mode,
                "pb-size": int(pb),
                "num-workers": int(w),
                "trials": len(times),
                "runtime-s": float(np.median(times)),
                "ratio-vs-1.14": ratio,
                "ci-low": lo,
                "ci-high": hi,
                "hdf5": str(g["hdf5-version"].iloc[0]),
                **{
                    c: float(g[c].median())
                    for c in ("gets-per-open", "heads-per-open", "MB-per-open", "open-ms", "read-ms")
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


def knob_table(c: pd.DataFrame) -> pd.DataFrame:
    """Per knob, mode (and page buffer where it matters) and value: the 2.x ÷ 1.14 ratio."""
    rows = []
    two = c[c["backend"] != REFERENCE]
    for knob in KNOBS:
        fixed = {k: v for k, v in BASELINE.items() if k != knob.column and not (knob.by_pb and k == "pb-size")}
        sel = two
        for k, v in fixed.items():
            sel = sel[sel[k] == v]
        for _, r in sel.iterrows():
            rows.append(
                {
                    "knob": knob.name,
                    "value": _value(knob.column, r[knob.column]),
                    "sort": _sort(knob.column, r[knob.column]),
                    "page buffer": _pb(r["pb-size"]) if knob.by_pb else "",
                    **r.to_dict(),
                }
            )
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out = out.drop_duplicates(["knob", "value", "page buffer", "obj-type"])
    out["pb-sort"] = out["pb-size"].where(out["page buffer"] != "", 0)
    return out.sort_values(["knob", "obj-type", "pb-sort", "sort"]).drop(columns=["sort", "pb-sort"])


def _pb(size: int) -> str:
    return "pb 0" if size == 0 else f"pb {size // MiB} MiB"


def _value(column: str, v: Any) -> str:
    if column == "pb-size":
        return _pb(int(v))
    if column == "tls":
        return "https" if v else "http"
    if column == "latency-ms":
        return f"{int(v)} ms"
    if column == "num-workers":
        return f"{int(v)} workers"
    return str(v)


def _sort(column: str, v: Any) -> float:
    if column == "tls":
        return 0.0 if not v else 1.0
    if column == "backend":
        return 0.0 if v == "ros3-2.0" else 1.0
    return float(v)


@dataclass(frozen=True)
class Verdict:
    knob: str
    mode: str
    page_buffer: str
    low: tuple[str, float]  # the value with the smallest ratio
    high: tuple[str, float]
    crosses: bool  # point estimates on both sides of 1
    clear: bool  # and the two intervals exclude 1 on their sides
    one_clear: bool = False  # and at least one of the two intervals excludes 1


def verdicts(k: pd.DataFrame) -> list[Verdict]:
    out = []
    for (knob, mode, pb), g in k.groupby(["knob", "obj-type", "page buffer"], sort=False):
        g = g.dropna(subset=["ratio-vs-1.14"])
        if len(g) < 2:
            continue
        lo, hi = g.loc[g["ratio-vs-1.14"].idxmin()], g.loc[g["ratio-vs-1.14"].idxmax()]
        crosses = lo["ratio-vs-1.14"] < 1 < hi["ratio-vs-1.14"]
        clear = crosses and lo["ci-high"] < 1 < hi["ci-low"]
        one_clear = crosses and (lo["ci-high"] < 1 or hi["ci-low"] > 1)
        out.append(
            Verdict(
                knob,
                mode,
                pb,
                (lo["value"], float(lo["ratio-vs-1.14"])),
                (hi["value"], float(hi["ratio-vs-1.14"])),
                bool(crosses),
                bool(clear),
                bool(one_clear),
            )
        )
    return out


UNTESTED = (
    "per-connection bandwidth none / 90 / 40 MB/s",
    "page size 8 MB vs 32 MB",
    "open + close only, 1 MB vs 16 MB object",
    "credentials explicit vs the environment's chain",
    "stock zlib vs zlib-ng on the 2.x side",
    "the 2.2 block size 16 MiB / 8 MiB / 64 KiB",
)


def markdown(folder: Path) -> str:
    """direction.md: the per-open counts, the knob table, and which knobs move the ratio across 1."""
    c = cells(folder)
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
        "| libhdf5 | mode | page buffer | GETs per open | HEADs per open | MB per open | open ms | read ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    base = c[(c["group"] == "base")].sort_values(["backend", "obj-type", "pb-size"])
    for _, r in base.iterrows():
        lines.append(
            f"| {r['backend']} ({r['hdf5']}) | {r['obj-type']} | {_pb(r['pb-size'])} | {r['gets-per-open']:.2f} | "
            f"{r['heads-per-open']:.2f} | {r['MB-per-open']:.1f} | {r['open-ms']:.1f} | {r['read-ms']:.1f} |"
        )
    k = knob_table(c)
    lines += [
        "",
        "## One knob at a time: 2.x ÷ 1.14 runtime (median of trials, 95 % bootstrap interval)",
        "",
        f"Baseline: https, no added latency, {BASE_WORKERS} workers, page buffer {BASE_PB // MiB} MiB, ros3-2.0. "
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
    skipped = [f"the {g.name} settings (not run)" for g in GROUPS if _group_run(folder, g) is None]
    lines += ["", "Not tested in this run: " + "; ".join([*skipped, *UNTESTED]) + "."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ command


def cmd_direction(args: argparse.Namespace) -> int:
    parent = Path(args.runs_dir) if args.runs_dir else runs_dir()
    if args.resume:
        folder = Path(args.resume)
        if not (folder / "run.json").is_file():
            raise UserError(f"{folder} is not an ablation run folder (no run.json); pass data/runs/<id>.")
        meta = DirectionRun(
            **{
                k: v
                for k, v in json.loads((folder / "run.json").read_text()).items()
                if k in DirectionRun.__dataclass_fields__
            }
        )
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
            load_start=_load(),
            machine=machine_info(),
            git_commit=git_commit(),
        )
    _write(folder, meta)
    started = time.monotonic()
    chosen = [g for g in GROUPS if not args.groups or g.name in args.groups]
    unknown = sorted(set(args.groups or ()) - {g.name for g in GROUPS})
    if unknown:
        raise UserError(f"unknown settings group {unknown[0]!r}; choose from {', '.join(g.name for g in GROUPS)}.")
    for group in chosen:
        run_group(folder, group, meta, timeout=args.group_timeout)
    c = cells(folder)
    c.to_csv(folder / "cells.csv", index=False)
    knob_table(c).to_csv(folder / "knobs.csv", index=False)
    meta.status, meta.finished, meta.load_end = "complete", utc_iso(), _load()
    _write(folder, meta)
    text = markdown(folder)
    (folder / "direction.md").write_text(text)
    print(text)
    print(f"[direction] {folder} in {time.monotonic() - started:.0f} s", flush=True)
    return 0


def _write(folder: Path, meta: DirectionRun) -> None:
    tmp = folder / "run.json.tmp"
    tmp.write_text(json.dumps(asdict(meta), indent=2))
    tmp.replace(folder / "run.json")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "direction",
        help="ablation: which condition makes ROS3 2.x faster or slower than 1.14",
        description="Runs small bench runs that move one knob at a time from the default conditions "
        "(page buffer, workers, https vs http, latency, 2.0 build vs 2.1.1 wheel) and writes "
        "data/runs/<id>/{direction.md,knobs.csv,cells.csv}.",
    )
    p.add_argument("--trials", type=int, default=3, help="trials per setting (at least 3)")
    p.add_argument("--signals-files", type=int, default=4, metavar="N", help="files read in signals mode")
    p.add_argument("--signals-names", type=int, default=8, metavar="N", help="signals read per file in signals mode")
    p.add_argument("--group-timeout", type=float, default=1800.0, help=argparse.SUPPRESS)
    p.add_argument("--resume", metavar="RUN_DIR", help="finish an interrupted ablation run")
    p.add_argument(
        "--groups",
        nargs="+",
        metavar="NAME",
        help=f"run only these settings groups (default: all of {' '.join(g.name for g in GROUPS)})",
    )
    p.add_argument("--runs-dir", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_direction)

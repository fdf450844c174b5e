"""The report's "compared with the upstream study" section, as Markdown.

The study (MDSplusBench, EC2 in S3's region) found ROS3 2.x faster than 1.14 when reading every
signal; a local run may find the opposite. This section puts both ratios side by side per mode,
says which way each points, and when they differ gives the mechanism: the published direction
ablation's knobs that move the ratio across 1 if one exists beside the run, otherwise the leads
measured in this run itself (bytes and requests per open, open time per open, http or https).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from shotbench.paths import data_dir
from shotbench.plan.matrix import MODES, UPSTREAM_PAGE_BUFFER

OLD, NEW = "ros3-1.14", "ros3-2.0"
STUDY_OLD = "single-shot-ec2-s3.csv.gz"
STUDY_NEW = "single-shot-ec2-s3-libaws.csv.gz"


@dataclass(frozen=True)
class ModeRatios:
    """2.x ÷ 1.14 runtime ratios of one mode, one per (page buffer, workers) cell."""

    mode: str
    ratios: dict[str, float]  # cell label -> ratio

    @property
    def low(self) -> float:
        return min(self.ratios.values())

    @property
    def high(self) -> float:
        return max(self.ratios.values())

    @property
    def median(self) -> float:
        return float(np.median(list(self.ratios.values())))

    def direction(self) -> str:
        if self.high < 1:
            return "2.x faster"
        if self.low > 1:
            return "2.x slower"
        return f"mixed; at the median 2.x {'faster' if self.median < 1 else 'slower'}"

    def span(self) -> str:
        return (
            f"{self.low:.2f}–{self.high:.2f} (median {self.median:.2f})" if len(self.ratios) > 1 else f"{self.low:.2f}"
        )


def study_ratios(fixtures: Path | None = None) -> dict[str, ModeRatios]:
    """Per mode, the study's new ÷ old total runtime at each worker count (one run per case)."""
    base = fixtures or data_dir() / "fixtures" / "mdsplusbench"
    old = pd.read_csv(base / STUDY_OLD).groupby(["obj-type", "num-workers"])["total-runtime"].median()
    new = pd.read_csv(base / STUDY_NEW).groupby(["obj-type", "num-workers"])["total-runtime"].median()
    out: dict[str, ModeRatios] = {}
    for mode in MODES:
        cells = {
            f"{w} workers": float(new[(mode, w)] / old[(mode, w)])
            for (m, w) in old.index
            if m == mode and (m, w) in new.index
        }
        if cells:
            out[mode] = ModeRatios(mode, cells)
    return out


def _ok_cases(run_dir: Path) -> pd.DataFrame:
    cases = pd.read_csv(run_dir / "cases.csv")
    if "status" in cases.columns:
        cases = cases[cases["status"].fillna("ok") == "ok"]
    return cases


def run_ratios(run_dir: Path, new: str = NEW) -> dict[str, ModeRatios]:
    """Per mode, this run's median(2.x) ÷ median(1.14) in every (page buffer, workers) cell."""
    cases = _ok_cases(run_dir)
    med = cases.groupby(["backend", "obj-type", "pb-size", "num-workers"])["total-runtime"].median()
    out: dict[str, ModeRatios] = {}
    for mode in MODES:
        cells = {}
        for (b, m, pb, w), t in med.items():
            if b == new and m == mode and (OLD, m, pb, w) in med.index:
                label = f"pb {'0' if pb == 0 else f'{int(pb) // 2**20} MiB'}, {w} workers"
                cells[label] = float(t / med[(OLD, m, pb, w)])
        if cells:
            out[mode] = ModeRatios(mode, cells)
    return out


@dataclass(frozen=True)
class PerOpen:
    """What one open cost a backend in this run, from the client-side meters."""

    backend: str
    page_buffer: bool
    mb: float
    gets: float
    open_ms: float


def per_open(run_dir: Path) -> list[PerOpen]:
    """MB, GETs and open time per open, per ROS3 backend, with and without a page buffer."""
    w = pd.read_csv(run_dir / "workers.csv", low_memory=False)
    errors = w["error"].astype("string").fillna("") if "error" in w.columns else pd.Series("", index=w.index)
    w = w[w["backend"].isin([OLD, NEW]) & (errors == "")]
    for column in ("client-bytes", "client-gets", "open-file-time"):  # runs made before these meters
        if column not in w.columns:
            w = w.assign(**{column: float("nan")})
    out = []
    for (backend, has_pb), g in w.groupby([w["backend"], w["pb-size"] > 0]):
        opens = pd.to_numeric(g["wrkr-num-objs"], errors="coerce").sum()
        if not opens:
            continue
        out.append(
            PerOpen(
                str(backend),
                bool(has_pb),
                float(pd.to_numeric(g["client-bytes"], errors="coerce").sum() / opens / 1e6),
                float(pd.to_numeric(g["client-gets"], errors="coerce").sum() / opens),
                float(pd.to_numeric(g["open-file-time"], errors="coerce").sum() / opens * 1e3),
            )
        )
    return out


def published_ablation(runs: Path) -> Path | None:
    """The newest complete direction-ablation run folder beside the run, if any."""
    found = []
    for folder in runs.iterdir() if runs.is_dir() else []:
        meta = folder / "run.json"
        if not meta.is_file():
            continue
        try:
            data = json.loads(meta.read_text())
        except json.JSONDecodeError:
            continue
        if data.get("kind") == "direction" and data.get("status") == "complete" and (folder / "direction.md").is_file():
            found.append(folder)
    return sorted(found)[-1] if found else None


def _ablation_lines(folder: Path) -> list[str]:
    """The ablation's numbers (per open, per knob at the study's page buffer) and its conclusion, quoted."""
    text = (folder / "direction.md").read_text()
    out = [
        f"The direction ablation `{folder.name}` (`data/runs/{folder.name}/direction.md`) moved one knob at a time "
        "from the default conditions (https, loopback, 2 workers, page buffer 256 MiB):",
        "",
    ]
    cells_csv, knobs_csv = folder / "cells.csv", folder / "knobs.csv"
    if cells_csv.is_file():
        c = pd.read_csv(cells_csv)
        base = c[(c["group"] == "base") & (c["obj-type"] == "signals")]
        per = {(r["backend"], r["pb-size"] > 0): r for _, r in base.iterrows()}
        old_pb, old_0 = per.get((OLD, True)), per.get((OLD, False))
        new_pb = per.get((NEW, True))
        if old_pb is not None and old_0 is not None and new_pb is not None:
            out.append(
                f"- per open, 1.14 ({old_pb['hdf5']}) moved {old_pb['MB-per-open']:.1f} MB in "
                f"{old_pb['gets-per-open']:.1f} GETs with a page buffer and {old_0['MB-per-open']:.1f} MB in "
                f"{old_0['gets-per-open']:.1f} without (page 2 fetched again); 2.x moved "
                f"{new_pb['MB-per-open']:.1f} MB in {new_pb['gets-per-open']:.1f} GETs either way;"
            )
    if knobs_csv.is_file():
        k = pd.read_csv(knobs_csv).fillna({"page buffer": ""})
        k = k[(k["page buffer"].isin(["", f"pb {UPSTREAM_PAGE_BUFFER // 2**20} MiB"]))]
        for knob, g in k.groupby("knob", sort=False):
            if g["value"].nunique() < 2:
                continue
            parts = [
                f"{r['obj-type']} {r['value']}: {r['ratio-vs-1.14']:.2f} ({r['ci-low']:.2f}–{r['ci-high']:.2f})"
                for _, r in g.iterrows()
            ]
            out.append(f"- {knob} (2.x ÷ 1.14, interval): " + "; ".join(parts) + ";")
    if "## Which knobs move the ratio across 1" in text:
        tail = text.split("## Which knobs move the ratio across 1", 1)[1].strip().splitlines()
        out += ["", "Its verdict:", ""] + [line for line in tail if line.startswith("- ")]
        out += ["", *[line for line in tail if line.startswith("Not tested")]]
    meta = json.loads((folder / "run.json").read_text())
    if meta.get("load_start"):
        cpus = meta.get("machine", {}).get("cpus") or 0
        busy = bool(cpus) and max(meta["load_start"][0], (meta.get("load_end") or [0])[0]) > 2 * cpus
        out += [
            "",
            f"(Measured on {cpus or '?'} cores at a load average of "
            f"{meta['load_start'][0]} to {(meta.get('load_end') or ['?'])[0]}"
            + (": ratios side by side in one run, absolute times inflated.)" if busy else ".)"),
        ]
    return out


def _lead_lines(run_dir: Path, tls: bool) -> list[str]:
    rows = per_open(run_dir)
    by = {(r.backend, r.page_buffer): r for r in rows}
    out = ["No published direction ablation is beside this run, so these are the leads, measured in this run:", ""]
    old_pb, old_nopb = by.get((OLD, True)), by.get((OLD, False))
    if old_pb and old_nopb and old_pb.mb == old_pb.mb and old_nopb.mb == old_nopb.mb:  # NaN: not metered
        out.append(
            f"- **1.14 re-downloads page 2 with a page buffer**: {old_pb.mb:.1f} MB in {old_pb.gets:.1f} GETs per open "
            f"with a page buffer, {old_nopb.mb:.1f} MB in {old_nopb.gets:.1f} without"
            + (f"; 2.x moved {by[(NEW, True)].mb:.1f} MB per open with one." if (NEW, True) in by else ".")
        )
    new_any = by.get((NEW, False)) or by.get((NEW, True))
    old_any = old_nopb or old_pb
    if new_any and old_any and new_any.open_ms == new_any.open_ms and old_any.open_ms == old_any.open_ms:
        out.append(
            f"- **2.x pays a setup per open** (client, TLS context, HEAD, then its 8 MiB parts in turn): "
            f"{new_any.open_ms:.1f} ms per open against 1.14's {old_any.open_ms:.1f} ms."
        )
    if tls:
        out.append("- The run was **https**: 1.14 makes a new TLS session per file, as on S3.")
    else:
        out.append(
            "- The run was **plain http**, which hides 1.14's TLS setup per open; real S3 (and the study) is https."
        )
    out.append("- Run `make bench-direction` to measure which of these moves the ratio across 1.")
    return out


def upstream_section(run_dir: Path) -> str:
    """Markdown: the study's 2.x ÷ 1.14 ratio per mode, this run's, their directions, and why they differ."""
    run_dir = Path(run_dir)
    meta = json.loads((run_dir / "run.json").read_text()) if (run_dir / "run.json").is_file() else {}
    config = meta.get("config", {})
    tls = bool(config.get("tls", False))
    network = config.get("network") or "none"
    study = study_ratios()
    ours = run_ratios(run_dir)
    lines = [f"### The study and run `{run_dir.name}`", ""]
    if not ours:
        lines.append(
            f"This run has no {NEW} and {OLD} cases side by side, so it cannot be compared with the study "
            "(which measured exactly those two)."
        )
        return "\n".join(lines) + "\n"
    lines += [
        "The study (MDSplusBench) read 500 files of 16 MB from S3 in its own region on an m5.4xlarge, 1–64 Dask "
        f"workers, page buffer {UPSTREAM_PAGE_BUFFER:,} B, https, one run per case. Ratio = 2.x runtime ÷ 1.14 "
        "runtime: below 1, 2.x is faster.",
        "",
        f"This run: network `{network}`, {'https' if tls else 'http'}.",
        "",
        "| mode | study: 2.x ÷ 1.14 | study direction | this run: 2.x ÷ 1.14 | this run's direction |",
        "|---|---|---|---|---|",
    ]
    differ = []
    for mode in MODES:
        s, o = study.get(mode), ours.get(mode)
        if o is None or s is None:
            continue
        lines.append(f"| {mode} | {s.span()} | {s.direction()} | {o.span()} | {o.direction()} |")
        if s.direction() != o.direction():
            differ.append(mode)
    pb_cells = {
        m: {k: v for k, v in r.ratios.items() if k.startswith(f"pb {UPSTREAM_PAGE_BUFFER // 2**20} MiB")}
        for m, r in ours.items()
    }
    at_pb = [f"{m} {min(c.values()):.2f}–{max(c.values()):.2f}" for m, c in pb_cells.items() if c]
    if at_pb:
        lines += [
            "",
            f"At the study's page buffer ({UPSTREAM_PAGE_BUFFER // 2**20} MiB) this run's ratio is: "
            + "; ".join(at_pb)
            + ".",
        ]
    lines.append("")
    if not differ:
        lines.append("The directions agree in every mode.")
        return "\n".join(lines) + "\n"
    lines += [f"The directions differ in {' and '.join(differ)} mode. Why:", ""]
    ablation = published_ablation(run_dir.parent)
    lines += _ablation_lines(ablation) if ablation is not None else _lead_lines(run_dir, tls)
    return "\n".join(lines) + "\n"

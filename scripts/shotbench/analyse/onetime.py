"""The readers that skip libhdf5 or move it to a server: what their one-time work costs, and after
how many reads of a file it is repaid against ROS3 2.x.

VirtualiZarr, Icechunk and h5coro-hidefix build a chunk index (a manifest, a repository of virtual
references, a hidefix index) and HSDS ingests the file's metadata (`hsload --link`) once per file,
untimed, before the cases (`shotbench.backends.chunkindex`). Each build leaves
`<run>/index/<backend>/<key>.meta.json`: its seconds, the bytes the index holds, and the GETs and
bytes the build fetched. A read saves `baseline - reader` seconds per file (medians of
`mean-obj-time` over error-free rows); the one-time cost is repaid after `ceil(build / saving)`
reads, or never when the reader is not faster.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pandas as pd

from shotbench.analyse import breakeven

SKIPPERS = ("virtualizarr", "icechunk-virtual", "h5coro-hidefix", "hsds")
BASELINE = "ros3-2.0"
WHAT = {
    "virtualizarr": "VirtualiZarr's manifest",
    "icechunk-virtual": "the Icechunk repository of virtual chunks",
    "h5coro-hidefix": "the hidefix chunk index",
    "hsds": "the HSDS load (`hsload --link`)",
}


def index_costs(run: Path) -> pd.DataFrame:
    """Median one-time cost per file of each indexed reader of a run folder."""
    rows = []
    for folder in sorted((Path(run) / "index").glob("*")):
        metas = []
        for path in sorted(folder.glob("*.meta.json")):
            try:
                metas.append(json.loads(path.read_text()))
            except (OSError, json.JSONDecodeError):
                continue
        if not metas:
            continue

        def med(k: str, metas: list[dict[str, Any]] = metas) -> float | None:
            vals = [float(m[k]) for m in metas if k in m]
            return statistics.median(vals) if vals else None

        rows.append(
            {
                "reader": folder.name,
                "files": len(metas),
                "build [s/file]": med("index-time"),
                "index stored [B/file]": med("index-bytes"),
                "build GETs [/file]": med("index-gets"),
                "build fetched [B/file]": med("index-get-bytes"),
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "reader",
            "files",
            "build [s/file]",
            "index stored [B/file]",
            "build GETs [/file]",
            "build fetched [B/file]",
        ],
    )


def repay_table(
    workers: list[dict[str, Any]], costs: pd.DataFrame, family: str = "", baseline: str = BASELINE
) -> pd.DataFrame:
    """Per reader with a one-time cost and per mode: its read, the baseline's, and reads to repay."""
    out = []
    for reader in costs["reader"] if len(costs) else []:
        build = costs.loc[costs["reader"] == reader, "build [s/file]"].iloc[0]
        for mode in sorted({str(r.get("obj-type", "")) for r in workers if r.get("backend") == reader}):
            mine = breakeven.per_file_read_time(workers, reader, mode)
            theirs = breakeven.per_file_read_time(workers, baseline, mode)
            if mine is None:
                continue
            n = None if theirs is None or build is None else breakeven.break_even_reads(float(build), mine, theirs)
            out.append(
                {
                    "family": family,
                    "mode": mode,
                    "reader": reader,
                    "build [s/file]": build,
                    "read [s/file]": mine,
                    f"{baseline} read [s/file]": theirs,
                    "reads to repay": n if n is not None else math.inf,
                }
            )
    return pd.DataFrame(out)


def _fmt_reads(n: float) -> str:
    return "never" if not math.isfinite(n) else f"{n:.0f} read{'s' if n != 1 else ''}"


def section_lines(table: pd.DataFrame, costs: pd.DataFrame, baseline: str = BASELINE) -> list[str]:
    """One sentence per reader that skips libhdf5 or moves it to a server: where it wins, where it
    loses, on the files of this run (its fastest and slowest mode against the baseline)."""
    lines = []
    for reader in SKIPPERS:
        rows = table[table["reader"] == reader] if len(table) else table
        if not len(rows):
            continue
        base_col = f"{baseline} read [s/file]"
        known = rows[rows[base_col].notna()]
        cost = costs.loc[costs["reader"] == reader].iloc[0] if (costs["reader"] == reader).any() else None
        build = (
            f"{cost['build [s/file]']:.2f} s, {cost['build GETs [/file]']:.0f} GETs and "
            f"{cost['build fetched [B/file]'] / 1e6:.2f} MB per file once"
            if cost is not None and pd.notna(cost["build GETs [/file]"])
            else "a one-time build"
        )
        if not len(known):
            lines.append(
                f"{reader}: reads a file in {rows['read [s/file]'].median():.3f} s after {build}; no {baseline} rows to compare."
            )
            continue
        ratio = known["read [s/file]"] / known[base_col]
        best, worst = known.loc[ratio.idxmin()], known.loc[ratio.idxmax()]
        wins = ratio < 1
        if wins.all():
            verdict = (
                f"wins in every mode and family (best {best['family']} {best['mode']}: {best['read [s/file]']:.3f} s "
                f"vs {best[base_col]:.3f} s per file), repaying {build} after {_fmt_reads(best['reads to repay'])}"
            )
        elif not wins.any():
            verdict = (
                f"loses in every mode (closest {best['family']} {best['mode']}: {best['read [s/file]']:.3f} s vs "
                f"{best[base_col]:.3f} s per file, worst {worst['family']} {worst['mode']}: {worst['read [s/file]']:.3f} s), "
                f"so {build} is never repaid"
            )
        else:
            verdict = (
                f"wins in {best['family']} {best['mode']} ({best['read [s/file]']:.3f} s vs {best[base_col]:.3f} s per file, "
                f"repaying {build} after {_fmt_reads(best['reads to repay'])}) and loses in {worst['family']} "
                f"{worst['mode']} ({worst['read [s/file]']:.3f} s vs {worst[base_col]:.3f} s)"
            )
        lines.append(f"{reader} ({WHAT[reader]}): against {baseline} it {verdict}.")
    return lines

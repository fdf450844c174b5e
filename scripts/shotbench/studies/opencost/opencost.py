"""The open-cost finding: what one ROS3 open sends and costs per libhdf5, from the reproducer's rows.

Rows come from `open-cost.csv` (one per libhdf5 environment, object, page buffer and open-only
setting; medians over the warm opens of one process). Everything here is a pure function of those
rows, so the notebook only narrates and plots, and each sentence is tested on rows whose answer is
known.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from shotbench.errors import UserError
from shotbench.units import MiB

CSV = "open-cost.csv"
OLD = "hdf5-1.14"
NEW = "hdf5-2.0"
BIG = "16MB"
SMALL = "1MB"
PB = 256 * MiB


def load(folder: Path) -> pd.DataFrame:
    """open-cost.csv of an ablation run folder."""
    path = Path(folder) / CSV
    if not path.is_file():
        raise UserError(f"{folder} has no {CSV}; run `make bench-direction` (it runs the reproducer last).")
    df = pd.read_csv(path)
    df["open_only"] = df["open_only"].astype(str).str.lower() == "true"
    return df


def label(df: pd.DataFrame) -> pd.Series:
    """`1.14.6 (hdf5-1.14)`: the version the library reported, and the environment it ran in."""
    return df["libhdf5"].astype(str) + " (" + df["env"].astype(str) + ")"


def table(df: pd.DataFrame) -> pd.DataFrame:
    """The per-open table a reader scans: one row per library, object, page buffer and what was timed."""
    out = pd.DataFrame(
        {
            "libhdf5": label(df),
            "object": df["object"],
            "page buffer": df["page_buffer"].map(lambda b: "none" if int(b) == 0 else f"{int(b) // MiB} MiB"),
            "timed": df["open_only"].map({True: "open", False: "open + 1 read"}),
            "open ms": df["open_ms"].round(1),
            "open ms, 95 % interval": _span(df),
            "read ms": df["read_ms"].round(1),
            "GETs / open": df["gets_per_open"],
            "HEADs / open": df["heads_per_open"],
            "connections / open": df["connections_per_open"],
            "MB / open": df["mb_per_open"].round(2),
            "requests of one open": df["requests"],
        }
    )
    return out.sort_values(["object", "timed", "page buffer", "libhdf5"]).reset_index(drop=True)


def _span(df: pd.DataFrame) -> pd.Series:
    """`20.1–22.4`, or `—` for rows written before the reproducer's rows had an interval."""
    if "open_ms_low" not in df.columns:
        return pd.Series("—", index=df.index)
    return df["open_ms_low"].map("{:.1f}".format) + "–" + df["open_ms_high"].map("{:.1f}".format)


@dataclass(frozen=True)
class Cost:
    """One library's median open under one setting."""

    open_ms: float
    read_ms: float
    mb: float
    gets: float
    heads: float
    connections: float


def cost(df: pd.DataFrame, env: str, obj: str, pb: int, open_only: bool) -> Cost | None:
    row = df[(df["env"] == env) & (df["object"] == obj) & (df["page_buffer"] == pb) & (df["open_only"] == open_only)]
    if row.empty:
        return None
    r = row.iloc[0]
    return Cost(
        float(r["open_ms"]),
        float(r["read_ms"]),
        float(r["mb_per_open"]),
        float(r["gets_per_open"]),
        float(r["heads_per_open"]),
        float(r["connections_per_open"]),
    )


def findings(df: pd.DataFrame) -> list[str]:
    """What the rows show, each sentence with its numbers; a sentence whose rows are missing is left out."""
    lines: list[str] = []
    names = dict(zip(df["env"], df["libhdf5"].astype(str), strict=False))
    old, new = names.get(OLD, "1.14"), names.get(NEW, "2.0")
    o_open, n_open = cost(df, OLD, BIG, 0, True), cost(df, NEW, BIG, 0, True)
    if o_open and n_open:
        lines.append(
            f"**Every open reads the whole 16 MB object.** An open alone moves {o_open.mb:.1f} MB in {o_open.gets:g} GET "
            f"and {o_open.heads:g} HEAD with {old}, and {n_open.mb:.1f} MB in {n_open.gets:g} GETs and "
            f"{n_open.heads:g} HEAD with {new}: the first min(object size, 16 MiB) is read at open, so an access "
            "pattern that opens a file per signal pays for the whole file every time."
        )
    o_pb, o_nopb, n_pb = cost(df, OLD, BIG, PB, False), cost(df, OLD, BIG, 0, False), cost(df, NEW, BIG, PB, False)
    if o_pb and o_nopb and n_pb:
        extra = o_pb.mb - o_nopb.mb
        verb = "re-downloads" if extra > 0.5 else "does not re-download"
        lines.append(
            f"**With a page buffer, {old} {verb} a page it already holds.** Open + one read of the largest signal moves "
            f"{o_pb.mb:.1f} MB in {o_pb.gets:g} GETs with a {PB // MiB} MiB page buffer and {o_nopb.mb:.1f} MB in "
            f"{o_nopb.gets:g} without; {new} moves {n_pb.mb:.1f} MB either way."
        )
    o_small, n_small = cost(df, OLD, SMALL, 0, True), cost(df, NEW, SMALL, 0, True)
    if o_small and n_small:
        fixed = n_small.open_ms - o_small.open_ms
        more = "more" if fixed >= 0 else "less"
        lines.append(
            f"**The fixed cost of an open.** Opening a 1 MB object, where the bytes take no time, costs "
            f"{o_small.open_ms:.1f} ms with {old} and {n_small.open_ms:.1f} ms with {new}: {abs(fixed):.1f} ms "
            f"{more} per open for {new}, before any data."
        )
    for env in sorted(set(df["env"]) - {OLD, NEW}):
        c = cost(df, env, SMALL, 0, True)
        if c and o_small:
            lines.append(f"{names[env]} ({env}) opens the 1 MB object in {c.open_ms:.1f} ms.")
    return lines


def fixes(df: pd.DataFrame) -> list[str]:
    """What each upstream change would save per open, as far as these rows measure it."""
    out: list[str] = []
    names = dict(zip(df["env"], df["libhdf5"].astype(str), strict=False))
    old, new = names.get(OLD, "1.14"), names.get(NEW, "2.0")
    o_pb, o_nopb = cost(df, OLD, BIG, PB, False), cost(df, OLD, BIG, 0, False)
    if o_pb and o_nopb and o_pb.mb - o_nopb.mb > 0.5:
        saved = o_pb.mb - o_nopb.mb
        out.append(
            f"**{old}: serve a read that ends exactly at the end of the open-time cache from the cache.** 1.14.6 "
            "tests `addr + size < cache_size` (`H5FDros3.c`, line 1108), 2.0.0 `<=` (line 1355): with a page buffer "
            f"the second page ends exactly there, so 1.14.6 fetches it again. The fix would save {saved:.1f} MB and {o_pb.gets - o_nopb.gets:g} GET per open with a page buffer: "
            f"{saved / o_pb.mb:.0%} of the bytes. On S3 at ~90 MB/s per stream, about {saved / 90 * 1e3:.0f} ms per open."
        )
    o_small, n_small = cost(df, OLD, SMALL, 0, True), cost(df, NEW, SMALL, 0, True)
    if o_small and n_small and n_small.open_ms > o_small.open_ms:
        out.append(
            f"**{new}: keep the S3 client across opens** instead of building a client bootstrap and an S3 client "
            f"in every `H5FD__s3comms_s3r_open` (`H5FDros3_s3comms.c`, lines 701 and 741; the event loop group and "
            f"host resolver are already shared). At most {n_small.open_ms - o_small.open_ms:.1f} ms per open here: "
            "the whole difference between the two libraries' 1 MB opens, which also holds the HEAD and the GET."
        )
    n_open = cost(df, NEW, BIG, 0, True)
    if n_open and n_open.gets > 1:
        out.append(
            f"**{new}: read the open-time range in parallel parts, or read less of it.** The 16 MiB read at open goes "
            f"out as {n_open.gets:g} GETs; libhdf5 2.2's block size sets how much is read at open (the ablation's "
            "block-size rows measure it)."
        )
    return out

"""The direction ablation's reduction: from its cells to 2.x ÷ 1.14 per knob, and what moves it.

`shotbench direction` (studies/direction/ablation_run.py) runs one bench run per settings group and reduces each to
cells: one row per group, backend, mode, page buffer and worker count, with the 2.x ÷ 1.14 ratio
and what one open sent. Here, as pure functions of those cells: the ratio of a cell (paired by
interleaved round), the table of one knob at a time against the baseline conditions, which knobs
put the ratio on both sides of 1, and the answer in a few sentences.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from shotbench import stats
from shotbench.analyse.text import as_text
from shotbench.units import KiB, MiB

REFERENCE = "ros3-1.14"
BASE_PB = 256 * MiB
BASE_WORKERS = 2
BASE_FILE, BASE_PAGE = 16_000_000, 8_000_000  # the default synthetic shot file and its page size
BIG_FILE = 64_000_000  # the page-size knob's files: room for two 32 MB pages
DEFAULT_BLOCK = 16 * MiB  # 2.2's block size when nothing sets it (HDF5_ROS3_VFD_DEFAULT_BLOCK_SIZE)


@dataclass(frozen=True)
class Knob:
    """One knob: the cell column it varies, and the baseline every other column keeps.

    `backend` names the 2.x backend the knob is measured on when it is not the baseline's.
    `baseline` is the value every other knob's rows hold this column at, for a column only some
    backends fill: it stays out of BASELINE, whose fill would give the others a value, so an
    empty cell counts as at the baseline."""

    name: str
    column: str
    by_pb: bool  # report at each page buffer separately ("with and without a page buffer")
    backend: str | None = None
    where: tuple[tuple[str, Any], ...] = ()  # other columns this knob holds away from the baseline
    baseline: float | None = None


CREDENTIALS_KNOB = Knob("2.x credentials: explicit vs the chain", "credentials", True)
BLOCK_SIZE_KNOB = Knob(
    "2.2 block size (its open-time read)", "block-size", True, backend="ros3-2.2", baseline=DEFAULT_BLOCK
)
WHICH_2X_KNOB = Knob("which 2.x: 2.0.0, 2.0.0 + zlib-ng, the 2.1.1 wheel, 2.2.0", "backend", True)
KNOBS: tuple[Knob, ...] = (
    Knob("page buffer", "pb-size", False),
    Knob("workers", "num-workers", False),
    Knob("https vs http", "tls", True),
    Knob("latency", "latency-ms", True),
    Knob("bandwidth per connection", "bandwidth-MBps", True),
    CREDENTIALS_KNOB,
    BLOCK_SIZE_KNOB,
    Knob("page size (64 MB files)", "page-MB", True, where=(("file-MB", BIG_FILE // 1_000_000),)),
    WHICH_2X_KNOB,
)
BASELINE = {
    "pb-size": BASE_PB,
    "num-workers": BASE_WORKERS,
    "tls": True,
    "latency-ms": 0,
    "bandwidth-MBps": 0,
    "credentials": "explicit",
    "file-MB": BASE_FILE // 1_000_000,
    "page-MB": BASE_PAGE // 1_000_000,
    "backend": "ros3-2.0",
}


def interval(ref: pd.Series, other: pd.Series) -> tuple[float, float, float]:
    """2.x ÷ 1.14 with its 95 % interval, from trial times indexed by trial number.

    Trial i of every case runs in the same interleaved round, so where both have the same trials
    the ratio is the median of the per-round ratios (a round that ran slower for everyone, such as
    the first one of a fresh server, divides out); otherwise median ÷ median, resampled apart."""
    common = ref.index.intersection(other.index)
    if len(common) >= 2 and len(common) == len(ref) == len(other):
        est = stats.paired_ratio_interval(other.loc[common].to_numpy(float), ref.loc[common].to_numpy(float))
    else:
        est = stats.ratio_interval(other.to_numpy(float), ref.to_numpy(float))
    return est.estimate, est.low, est.high


def knob_table(c: pd.DataFrame) -> pd.DataFrame:
    """Per knob, mode (and page buffer where it matters) and value: the 2.x ÷ 1.14 ratio."""
    rows = []
    two = c[c["backend"] != REFERENCE].copy()
    for col, v in BASELINE.items():  # runs made before a knob existed were made at its baseline
        two[col] = two[col].fillna(v) if col in two.columns else v
    for knob in KNOBS:
        fixed = {k: v for k, v in BASELINE.items() if k != knob.column and not (knob.by_pb and k == "pb-size")}
        if knob.backend is not None:
            fixed["backend"] = knob.backend
        fixed.update(dict(knob.where))
        if knob.column not in two.columns:
            continue
        sel = two.dropna(subset=[knob.column])
        for other in KNOBS:  # e.g. 2.2 only at its default block size
            if other.baseline is not None and other.column != knob.column and other.column in sel.columns:
                sel = sel[sel[other.column].isna() | (sel[other.column] == other.baseline)]
        for k, v in fixed.items():
            sel = sel[sel[k] == v]
        for _, r in sel.iterrows():
            rows.append(
                {
                    "knob": knob.name,
                    "value": knob_value(knob.column, r[knob.column]),
                    "sort": _sort(knob.column, r[knob.column]),
                    "page buffer": pb_value(r["pb-size"]) if knob.by_pb else "",
                    **r.to_dict(),
                }
            )
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out = out.drop_duplicates(["knob", "value", "page buffer", "obj-type"])
    out["pb-sort"] = out["pb-size"].where(out["page buffer"] != "", 0)
    return out.sort_values(["knob", "obj-type", "pb-sort", "sort"]).drop(columns=["sort", "pb-sort"])


def pb_value(size: int) -> str:
    """A page-buffer setting as the knob table names it: `pb 0`, `pb 256 MiB`."""
    return "pb 0" if size == 0 else f"pb {size // MiB} MiB"


def knob_value(column: str, v: Any) -> str:
    """A knob's value as the table names it (`https`, `70 ms`, `64 KiB`, `8 MB pages`)."""
    if column == "pb-size":
        return pb_value(int(v))
    if column == "tls":
        return "https" if v else "http"
    if column == "latency-ms":
        return f"{int(v)} ms"
    if column == "num-workers":
        return f"{int(v)} workers"
    if column == "bandwidth-MBps":
        return "no cap" if int(v) == 0 else f"{int(v)} MB/s"
    if column == "page-MB":
        return f"{int(v)} MB pages"
    if column == "block-size":
        return f"{int(v) // KiB} KiB" if int(v) < MiB else f"{int(v) // MiB} MiB"
    return str(v)


def _sort(column: str, v: Any) -> float:
    if column == "tls":
        return 0.0 if not v else 1.0
    if column == "backend":
        order = ("ros3-2.0", "ros3-2.0-zlibng", "ros3-wheel", "ros3-2.2")
        return float(order.index(v)) if v in order else float(len(order))
    if column == "credentials":
        return 0.0 if v == "explicit" else 1.0
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


def _cell(k: pd.DataFrame, knob: str, mode: str, pb: str, value: str) -> str | None:
    """`0.85 (0.59–0.91)` for one knob row, or None when the run has no such row."""
    row = k[(k["knob"] == knob) & (k["obj-type"] == mode) & (as_text(k["page buffer"]) == pb) & (k["value"] == value)]
    if row.empty:
        return None
    r = row.iloc[0]
    return f"{r['ratio-vs-1.14']:.2f} ({r['ci-low']:.2f}–{r['ci-high']:.2f})"


def headline(k: pd.DataFrame) -> list[str]:
    """The ablation's answer in a few sentences, each from the knob rows it quotes (2.x ÷ 1.14.6,
    median of trials with its 95 % interval); a sentence whose rows this run lacks is left out."""
    pb, which = f"pb {BASE_PB // MiB} MiB", WHICH_2X_KNOB.name
    out: list[str] = []
    sig, shots = _cell(k, which, "signals", pb, "ros3-2.0"), _cell(k, which, "shots", pb, "ros3-2.0")
    wheel = _cell(k, which, "signals", pb, "ros3-wheel")
    if sig and shots:
        out.append(
            f"**Under the study's conditions 2.x reads faster here too.** Over https with a {BASE_PB // MiB} MiB page "
            f"buffer, 2.0.0 ÷ 1.14.6 is {sig} reading signals across files and {shots} reading whole shots"
            + (f"; the 2.1.1 wheel, {wheel} on signals." if wheel else ".")
        )
    slower = [
        (what, cell)
        for what, cell in (
            ("over plain http, where 1.14.6 sets up no TLS", _cell(k, "https vs http", "signals", "pb 0", "http")),
            ("70 ms from the server", _cell(k, "latency", "signals", "pb 0", "70 ms")),
            ("2.x finding its credentials itself", _cell(k, CREDENTIALS_KNOB.name, "signals", "pb 0", "chain")),
        )
        if cell
    ]
    if slower:
        out.append(
            "**Where 2.x is slower, its opens cost more.** Without a page buffer, signals: "
            + "; ".join(f"{what}, {cell}" for what, cell in slower)
            + ". Each 2.0.0 open builds a client bootstrap and an S3 client (and, finding credentials itself, a "
            "default credentials chain: `H5FDros3_s3comms.c`), and sends its 16 MiB open-time read as two GETs in a "
            "row on one connection: one more round trip than 1.14.6's single GET."
        )
    small, big = (_cell(k, BLOCK_SIZE_KNOB.name, "signals", "pb 0", v) for v in ("64 KiB", "16 MiB"))
    if small and big:
        out.append(
            f"**Reading less at open is the lever.** 2.2's block size is the size of its open-time read: at 64 KiB "
            f"instead of 16 MiB, 2.2.0 ÷ 1.14.6 reading signals without a page buffer is {small} instead of {big}."
        )
    return out


def answer_lines(vs: list[Verdict]) -> list[str]:
    """Which knobs move 2.x ÷ 1.14 across 1, clearest first; or that none does."""

    def where(v: Verdict) -> str:
        return f", {v.page_buffer}" if v.page_buffer else ""

    movers = [v for v in vs if v.crosses]
    lines = [
        f"**{v.knob}** moves the ratio across 1 ({v.mode}{where(v)}): {v.low[1]:.2f} at {v.low[0]} vs "
        f"{v.high[1]:.2f} at {v.high[0]}, both intervals clear of 1."
        for v in movers
        if v.clear
    ]
    lines += [
        f"{v.knob} puts the ratio on both sides of 1 ({v.mode}{where(v)}): {v.low[1]:.2f} at {v.low[0]} vs "
        f"{v.high[1]:.2f} at {v.high[0]}; one of the two intervals touches 1."
        for v in movers
        if not v.clear and v.one_clear
    ]
    if not lines:
        lines.append("No knob measured moves the ratio across 1 with an interval clear of 1.")
    return lines


UNTESTED: tuple[str, ...] = ()  # every knob the ablation was asked for is a settings group above

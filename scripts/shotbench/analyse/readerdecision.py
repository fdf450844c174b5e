"""The reader decision: for files like mine, which reader is fastest, what ties it, what it costs.

A `readers` run reads two kinds of files (families): `compat`, the oldest format, which every
reader reads, and the default v110 paged files, which some readers cannot read. The question a
user brings is per kind of file, so the decision table is made per family (one family's cases
at a time) and answered per access pattern: the fastest reader none of whose cases failed, the
readers whose runtime cannot be told apart from it (95 % CI of the ratio contains 1), the
readers that cannot read this kind of file, and GETs, bytes and dollars per 1,000 reads.
A reader told to skip what it cannot resolve (h5coro and dimension scales) reads less than the
others: it is named apart, never the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from shotbench.analyse import analysis, breakeven, decision
from shotbench.analyse.capability import Capability
from shotbench.analyse.text import as_text
from shotbench.plan.families import COMPAT
from shotbench.runs import read_meta

FAMILY = "file-family"


@dataclass(frozen=True)
class ReaderAnswer:
    """The decision for one family and one access pattern."""

    family: str
    mode: str
    fastest: str
    workers: int
    runtime: float
    ties: list[str]  # readers (with worker count) whose ratio to the fastest has a CI containing 1
    gets: float
    bytes: float
    cost: dict[str, float]  # $ per 1,000 reads by placement
    cannot_read: list[str] = field(default_factory=list)
    reads_less: list[str] = field(default_factory=list)  # "h5coro 0.41 s (signal data only)"
    one_trial: bool = False  # no CI: whether another reader ties cannot be told

    def line(self) -> str:
        text = f"{self.family}, {self.mode}: {self.fastest} with {_workers(self.workers)}, {self.runtime:.3g} s"
        text += f"; {self.gets:.0f} GETs, {self.bytes / 1e6:,.1f} MB" if not np.isnan(self.gets) else ""
        costs = [f"${v:.4f} {p}" for p, v in self.cost.items() if not np.isnan(v)]
        text += f", per 1,000 reads {', '.join(costs)}" if costs else ""
        if self.ties:
            text += f". Tied (no clear difference): {', '.join(self.ties)}"
        else:
            text += ". One trial: ties cannot be told" if self.one_trial else ". No other reader ties it (95 % CI)"
        if self.reads_less:
            text += f". Reads less, not ranked: {', '.join(self.reads_less)}"
        if self.cannot_read:
            text += f". Cannot read these files: {', '.join(self.cannot_read)}"
        return text + "."


def families(ds: analysis.Dataset) -> list[str]:
    """The families of a run, in the order its cases ran."""
    frames = [f for f in (ds.cases, ds.failed, ds.unsupported) if len(f) and FAMILY in f.columns]
    names = as_text(pd.concat([f[FAMILY] for f in frames])) if frames else pd.Series([], dtype=str)
    return list(dict.fromkeys(n for n in names if n))


def for_family(ds: analysis.Dataset, family: str) -> analysis.Dataset:
    """The same dataset narrowed to one family's cases and rows."""

    def keep(frame: pd.DataFrame) -> pd.DataFrame:
        if not len(frame) or FAMILY not in frame.columns:
            return frame
        return frame[as_text(frame[FAMILY]) == family].reset_index(drop=True)

    return replace(
        ds, cases=keep(ds.cases), workers=keep(ds.workers), failed=keep(ds.failed), unsupported=keep(ds.unsupported)
    )


def decision_tables(ds: analysis.Dataset, prices: decision.Prices | None = None) -> dict[str, pd.DataFrame]:
    """decision.decision_table per family."""
    prices = prices or decision.load_prices()
    return {fam: decision.decision_table(for_family(ds, fam), prices) for fam in families(ds)}


def answers(ds: analysis.Dataset, caps: list[Capability], prices: decision.Prices | None = None) -> list[ReaderAnswer]:
    """Per family and mode: the fastest reader that reads the whole file, its ties and costs."""
    prices = prices or decision.load_prices()
    partial = {(c.backend, c.family) for c in caps if c.readable and c.reason}  # reads less (skips scales)
    cannot = {(c.backend, c.family): c.reason for c in caps if c.readable is False}
    out = []
    for fam, table in decision_tables(ds, prices).items():
        for mode in analysis.MODES:
            t = table[(table["obj-type"] == mode) & table["rank"].notna()]
            if t.empty:
                continue
            reads_less_mask = t["series"].map(_backend).isin({b for (b, f) in partial if f == fam})
            whole = t[~reads_less_mask]
            best = decision._best(whole, mode) if len(whole) else None
            if best is None:
                continue
            same_w = whole[whole["num-workers"] == best["num-workers"]]
            ref = best["runtime"]
            ties = [
                f"{_plain(r['name'], fam)} ({r['runtime']:.3g} s)"
                for _, r in same_w.iterrows()
                if r.name != best.name and r["verdict"] in (decision.EQUIVALENT, decision.UNDECIDED)
            ]
            less = t[reads_less_mask]
            reads_less = [
                f"{_plain(r['name'], fam)} with {_workers(int(r['num-workers']))}, {r['runtime']:.3g} s "
                f"({r['runtime'] / ref:.2f}× the fastest's time, signal data only)"
                for _, r in less.sort_values("runtime").groupby("name", sort=False).head(1).iterrows()
            ]
            out.append(
                ReaderAnswer(
                    family=fam,
                    mode=mode,
                    fastest=_plain(str(best["name"]), fam),
                    workers=int(best["num-workers"]),
                    runtime=float(best["runtime"]),
                    ties=ties,
                    gets=float(best["gets"]),
                    bytes=float(best["bytes"]),
                    cost={p: float(best[decision.cost_column(p)]) for p in prices.transfer_per_gb},
                    cannot_read=sorted(b for (b, f) in cannot if f == fam),
                    reads_less=reads_less,
                    one_trial=bool((same_w["verdict"] == decision.ONE_TRIAL).any()),
                )
            )
    return out


def _workers(n: int) -> str:
    return f"{n} worker" if n == 1 else f"{n} workers"


def _plain(name: str, family: str) -> str:
    """A series name without the family it is already answered under ("fsspec · compat" -> "fsspec")."""
    return str(name).replace(f" · {family}", "")


def _backend(series: str) -> str:
    """The backend of a series name ("h5coro · …" -> "h5coro")."""
    return str(series).split(" · ")[0].split("/")[-1]


def breakeven_lines(ds: analysis.Dataset, indexed: str = "kerchunk") -> list[str]:
    """Per family: what kerchunk's index costs per file and after how many reads it pays off,
    against every other reader of that family that reads the whole file."""
    out = []
    for fam in families(ds):
        sub = for_family(ds, fam).workers
        if not len(sub):
            continue
        rows = sub.assign(
            error=as_text(sub.get("error", pd.Series("", index=sub.index))),
            backend=sub["backend"].astype(str).map(_backend),
        ).to_dict("records")
        others = tuple(b for b in dict.fromkeys(r["backend"] for r in rows) if b not in (indexed, analysis.RAW_GET))
        out += [f"{fam}: {line}" for line in breakeven.summary_lines(rows, indexed, others)]
    return out


def runtimes(ds: analysis.Dataset) -> pd.DataFrame:
    """Median runtime per (family, mode, reader, workers) over ok cases: what the figure draws."""
    c = ds.cases
    if not len(c) or FAMILY not in c.columns:
        return pd.DataFrame(columns=["family", "mode", "reader", "workers", "runtime [s]"])
    c = c.assign(_t=pd.to_numeric(c["total-runtime"], errors="coerce"))
    g = c.groupby([FAMILY, "obj-type", "series", "num-workers"], sort=False, observed=True)["_t"].median().reset_index()
    g.columns = ["family", "mode", "reader", "workers", "runtime [s]"]
    g["workers"] = g["workers"].astype(int).astype(str) + " workers"
    return g


def is_readers_run(run: Path) -> bool:
    """A run of the `readers` profile (or any run that read the compat family): it gets readers.ipynb."""
    try:
        config = read_meta(run).get("config") or {}
    except (OSError, ValueError):
        return False
    return config.get("profile") == "readers" or COMPAT in ((config.get("bench") or {}).get("families") or [])

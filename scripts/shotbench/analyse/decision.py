"""The decision table: which backend, with how many workers, for each access pattern.

Per (mode, workers) every backend configuration (series and page buffer) is ranked by median
runtime over trials, with a BCa bootstrap 95 % CI (stats.py). Its ratio to the fastest carries
the interval that should hold the next run's ratio (stats.next_run_intervals: per-trial paired ratios,
their spread pooled per mode), and a ratio whose interval contains 1 is "no clear difference".
Configurations from different runs (the upstream study's) keep a BCa interval of medians. The *limit* is the speed that
could not be beaten on this machine: max(local-disk runtime, raw-GET runtime of the same bytes).
Costs come from the dated price table in prices.toml.
"""

from __future__ import annotations

import math
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from shotbench import stats
from shotbench.analyse import analysis, stopping
from shotbench.diskspace import atomic_open
from shotbench.errors import UserError

PRICES_FILE = Path(__file__).with_name("prices.toml")
LOCAL = "local"
# what the limit is made of: shown below the ranking, never ranked (data on local disk, or bytes
# fetched with no HDF5 at all, is not a way to read HDF5 from S3)
REFERENCES = (LOCAL, analysis.RAW_GET)
LIMIT_ROW = "limit reference"
GIB = 1 << 30
FASTEST, UNCLEAR, SLOWER, ONE_TRIAL = "fastest", "no clear difference", "slower", "one trial: no CI"
CROWD = 4  # a tie of this many configurations or more is told as "this run cannot tell them apart"
CANNOT_READ = "cannot read these files"  # every case of the configuration was unsupported
NO_MEASUREMENT = "failed: no measurement"  # every case of the configuration failed: listed, never ranked
COLUMNS = [
    "obj-type",
    "num-workers",
    "rank",
    "name",
    "series",
    "pb-size",
    "trials",
    "failed",
    "unsupported",
    "runtime",
    "runtime-ci-low",
    "runtime-ci-high",
    "vs-fastest",
    "vs-fastest-ci-low",
    "vs-fastest-ci-high",
    "verdict",
    "limit",
    "vs-limit",
    "gets",
    "bytes",
    "amplification",
    "noisy",
]


@dataclass(frozen=True)
class Prices:
    """S3 list prices: per-1,000 GET and per-GB transfer out by placement, with source and date."""

    source: str
    as_of: str
    region: str
    currency: str
    get_per_1000: float
    transfer_per_gb: dict[str, float]

    @property
    def note(self) -> str:
        return f"S3 Standard list prices, {self.region}, from {self.source} as of {self.as_of}"


def load_prices(path: Path = PRICES_FILE) -> Prices:
    try:
        raw = tomllib.loads(path.read_text())
        return Prices(
            source=raw["source"],
            as_of=str(raw["as_of"]),
            region=raw["region"],
            currency=raw["currency"],
            get_per_1000=float(raw["requests"]["get_per_1000"]),
            transfer_per_gb={k: float(v) for k, v in raw["transfer_per_gb"].items()},
        )
    except (OSError, tomllib.TOMLDecodeError, KeyError, ValueError) as exc:
        raise UserError(f"{path} is not a valid price table ({exc}); restore it from git.") from None


def cost_column(placement: str) -> str:
    return f"$/1000 reads {placement}"


def usable_cases(cases: pd.DataFrame) -> pd.DataFrame:
    """Cases that measured a runtime (and, where a status is recorded, finished ok)."""
    ok = pd.to_numeric(cases["total-runtime"], errors="coerce").notna()
    if "status" in cases.columns:
        status = cases["status"].fillna("").astype(str)
        ok &= status.isin(["", "ok"])
    return cases[ok]


def failed_counts(failed: pd.DataFrame) -> dict[tuple[str, str, str, int, int], int]:
    """Failed or partial cases per (label, backend, mode, workers, page buffer): a configuration
    ranked on its ok trials alone would look as good as one that never failed."""
    if failed.empty:
        return {}
    return dict(
        Counter(
            zip(
                failed.get("label", pd.Series("", index=failed.index)).astype(str),
                failed["backend"].astype(str),
                failed["obj-type"].astype(str),
                pd.to_numeric(failed["num-workers"]).astype(int),
                pd.to_numeric(failed["pb-size"]).astype(int),
            )
        )
    )


def _number(cases: pd.DataFrame, preferred: str, fallback: str | None) -> pd.Series:
    """A request column from client-side accounting when present, else the server's."""
    out = pd.Series(np.nan, index=cases.index)
    for col in (preferred, fallback):
        if col and col in cases.columns:
            out = out.fillna(pd.to_numeric(cases[col], errors="coerce"))
    return out


def per_trial_ratios(g: pd.DataFrame, fastest: pd.DataFrame) -> np.ndarray | None:
    """This configuration's runtime ÷ the fastest's, one ratio per trial both ran, or None when the
    two were not measured in the same run (different labels, or no trial in common).

    Trials of one run are interleaved rounds, so a round that ran slow for everyone divides out of
    its pair; configurations from different runs (the upstream study's) have nothing to pair."""
    label = "label" if "label" in g.columns and "label" in fastest.columns else None
    if label and set(g[label].astype(str)) != set(fastest[label].astype(str)):
        return None
    x = g.groupby("trial")["total-runtime"].median()
    y = fastest.groupby("trial")["total-runtime"].median()
    both = pd.concat([x.rename("x"), y.rename("y")], axis=1, join="inner").dropna()
    both = both[both["y"] > 0]
    return None if both.empty else (both["x"] / both["y"]).to_numpy(float)


def verdict(rank: int, lo: float, hi: float) -> str:
    if rank == 1:
        return FASTEST
    if np.isnan(lo) or np.isnan(hi):
        return ONE_TRIAL
    return UNCLEAR if stats.tied(stats.Interval(1.0, lo, hi)) else SLOWER


def candidate_name(series: str, pb: int, several_pb: bool) -> str:
    """How a backend configuration is named in the table (page buffer only when it varies)."""
    return f"{series} · page buffer {analysis.pb_label(pb)}" if several_pb else str(series)


def decision_table(
    ds: analysis.Dataset, prices: Prices | None = None, n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """One row per (mode, workers, backend configuration), ranked fastest first."""
    prices = prices or load_prices()
    c = usable_cases(ds.cases).copy()
    failed = failed_counts(ds.failed)
    unsupported = failed_counts(ds.unsupported)  # same keys: cases the reader declared it cannot read
    c["total-runtime"] = pd.to_numeric(c["total-runtime"], errors="coerce")
    c["_gets"] = _number(c, "client-gets", "gets") + _number(c, "client-heads", None).fillna(0)
    c["_bytes"] = _number(c, "client-bytes", "get-bytes")
    c["_amp"] = _number(c, "amplification", None)
    c["_raw"] = _number(c, "raw-get-runtime", None)
    rows: list[dict] = []
    next_run: list[tuple[int, str, np.ndarray]] = []  # (row, mode, per-trial ratios to the fastest)
    ranked: set[tuple[str, str, str, int, int]] = set()
    for (mode, workers), part in c.groupby(["obj-type", "num-workers"], sort=False):
        pbs = part.groupby("series")["pb-size"].nunique()
        local = part[part["backend"] == LOCAL]
        local_time = float(local.groupby("pb-size")["total-runtime"].median().min()) if len(local) else np.nan
        raw_backend = part.loc[part["backend"] == analysis.RAW_GET, "total-runtime"]
        raw_backend_time = float(raw_backend.median()) if len(raw_backend) else np.nan
        groups = []
        for (series, pb), g in part.groupby(["series", "pb-size"], sort=False):
            groups.append((str(series), int(pb), g["total-runtime"].to_numpy(float), g))
        groups.sort(key=lambda x: (x[3]["backend"].iloc[0] in REFERENCES, float(np.median(x[2]))))
        fastest, fastest_g = groups[0][2], groups[0][3]
        rank = 0
        for series, pb, times, g in groups:
            reference = g["backend"].iloc[0] in REFERENCES
            rank += 0 if reference else 1
            med = float(np.median(times))
            spread = stats.median_interval(times, level, n_boot, seed)
            lo, hi = spread.low, spread.high
            if rank == 1 and not reference:
                rlo = rhi = 1.0
            else:
                paired = per_trial_ratios(g, fastest_g)
                if paired is not None:  # same run: the interval for the next run, filled in below
                    next_run.append((len(rows), str(mode), paired))
                    rlo = rhi = np.nan
                else:
                    vs = stats.ratio_interval(times, fastest, level, n_boot, seed)
                    rlo, rhi = vs.low, vs.high
            # the raw-GET runtime measured for this case's bytes, else the raw-get backend's
            raw = float(g["_raw"].median()) if g["_raw"].notna().any() else raw_backend_time
            limit = np.nan if np.isnan(local_time) and np.isnan(raw) else float(np.nanmax([local_time, raw]))
            label = str(g["label"].iloc[0]) if "label" in g.columns else ""
            ranked.add((label, str(g["backend"].iloc[0]), str(mode), int(workers), pb))
            # trials until the interval is tight: the last trial's row says whether it got there
            last = g[pd.to_numeric(g["trial"], errors="coerce") == pd.to_numeric(g["trial"], errors="coerce").max()]
            noisy = bool("stop" in g.columns and last["stop"].astype(str).isin(stopping.NOISY).any())
            rows.append(
                {
                    "obj-type": mode,
                    "num-workers": int(workers),
                    "rank": np.nan if reference else rank,
                    "name": candidate_name(series, pb, pbs.get(series, 1) > 1),
                    "series": series,
                    "pb-size": pb,
                    "trials": len(times),
                    "failed": failed.get((label, str(g["backend"].iloc[0]), str(mode), int(workers), pb), 0),
                    "unsupported": unsupported.pop((label, str(g["backend"].iloc[0]), str(mode), int(workers), pb), 0),
                    "runtime": med,
                    "runtime-ci-low": lo,
                    "runtime-ci-high": hi,
                    "vs-fastest": med / float(np.median(fastest)),
                    "vs-fastest-ci-low": rlo,
                    "vs-fastest-ci-high": rhi,
                    "verdict": LIMIT_ROW if reference else verdict(rank, rlo, rhi),
                    "limit": limit,
                    "vs-limit": med / limit if not np.isnan(limit) else np.nan,
                    "gets": float(g["_gets"].median()),
                    "bytes": float(g["_bytes"].median()),
                    "amplification": float(g["_amp"].median()),
                    "noisy": noisy,
                }
            )
    intervals = stats.next_run_intervals([r for _, _, r in next_run], [m for _, m, _ in next_run], level)
    for (i, _, _), ci in zip(next_run, intervals):
        row = rows[i]
        row["vs-fastest-ci-low"], row["vs-fastest-ci-high"] = ci.low, ci.high
        if row["verdict"] != LIMIT_ROW:
            row["verdict"] = verdict(int(row["rank"]), ci.low, ci.high)
    rows += _cannot_read_rows(ds.unsupported, unsupported)
    rows += unmeasured_rows(ds, failed, ranked)
    out = pd.DataFrame(rows, columns=COLUMNS)
    for placement, per_gb in prices.transfer_per_gb.items():
        per_read = out["gets"] * prices.get_per_1000 / 1000 + out["bytes"] / GIB * per_gb
        out[cost_column(placement)] = per_read * 1000
    mode_rank = out["obj-type"].map({m: i for i, m in enumerate(analysis.MODES)})
    out["rank"] = out["rank"].astype("Int64")
    order = out.assign(_m=mode_rank, _r=out["rank"].astype(float).fillna(np.inf))
    return (
        order.sort_values(["_m", "num-workers", "_r"], kind="stable").drop(columns=["_m", "_r"]).reset_index(drop=True)
    )


def _cannot_read_rows(cases: pd.DataFrame, left: dict[tuple[str, str, str, int, int], int]) -> list[dict]:
    """A row, unranked and untimed, for each configuration none of whose cases it could read
    (`left`: the unsupported counts no timed row took)."""
    rows = []
    for (_label, backend, mode, workers, pb), n in left.items():
        mine = cases[(cases["backend"].astype(str) == backend) & (cases["obj-type"].astype(str) == mode)]
        series = str(mine["series"].iloc[0]) if "series" in mine.columns and len(mine) else backend
        rows.append(
            {
                "obj-type": mode,
                "num-workers": workers,
                "rank": np.nan,
                "name": series,
                "series": series,
                "pb-size": pb,
                "trials": 0,
                "failed": 0,
                "unsupported": n,
                "runtime": np.nan,
                "verdict": CANNOT_READ,
            }
        )
    return rows


def unmeasured_rows(
    ds: analysis.Dataset, failed: dict[tuple[str, str, str, int, int], int], ranked: set[tuple[str, str, str, int, int]]
) -> list[dict[str, object]]:
    """A row for each configuration whose every case failed: unranked, no runtime, its failed
    count shown, so a backend that never measured is in the table rather than missing from it."""
    if ds.failed.empty:
        return []
    f = ds.failed
    series = dict(
        zip(
            zip(
                f.get("label", pd.Series("", index=f.index)).astype(str),
                f["backend"].astype(str),
                f["obj-type"].astype(str),
                pd.to_numeric(f["num-workers"]).astype(int),
                pd.to_numeric(f["pb-size"]).astype(int),
            ),
            f["series"].astype(str),
        )
    )
    both = (
        pd.concat([ds.cases[["series", "pb-size"]], f[["series", "pb-size"]]])
        if len(ds.cases)
        else f[["series", "pb-size"]]
    )
    pbs = both.astype({"series": str}).groupby("series")["pb-size"].nunique()
    out = []
    for key, n in failed.items():
        if key in ranked:
            continue
        label, backend, mode, workers, pb = key
        name = series.get(key, backend)
        out.append(
            {
                "obj-type": mode,
                "num-workers": workers,
                "rank": np.nan,
                "name": candidate_name(name, pb, pbs.get(name, 1) > 1),
                "series": name,
                "pb-size": pb,
                "trials": 0,
                "failed": n,
                "runtime": np.nan,
                "runtime-ci-low": np.nan,
                "runtime-ci-high": np.nan,
                "vs-fastest": np.nan,
                "vs-fastest-ci-low": np.nan,
                "vs-fastest-ci-high": np.nan,
                "verdict": NO_MEASUREMENT,
                "limit": np.nan,
                "vs-limit": np.nan,
                "gets": np.nan,
                "bytes": np.nan,
                "amplification": np.nan,
            }
        )
    return out


def write_decision(table: pd.DataFrame, out_dir: Path) -> Path:
    """decision.csv beside summary.csv."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "decision.csv"
    with atomic_open(path, "w", newline="") as fh:  # whole or not at all
        table.to_csv(fh, index=False)
    return path


def _fmt(value: float, fmt: str) -> str:
    """Seconds as 3 significant digits, but 1,117 rather than 1.12e+03."""
    if fmt == "s":
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return f"{value:{fmt}}"


def _interval(value: float, lo: float, hi: float, fmt: str, unit: str = "") -> str:
    if np.isnan(value):
        return "—"
    if np.isnan(lo) or np.isnan(hi) or lo == hi:
        return f"{_fmt(value, fmt)}{unit}"
    return f"{_fmt(value, fmt)}{unit} [{_fmt(lo, fmt)}, {_fmt(hi, fmt)}]"


def _plain(value: float, fmt: str, unit: str = "") -> str:
    return "—" if value is None or np.isnan(value) else f"{value:{fmt}}{unit}"


def display_table(table: pd.DataFrame, mode: str, prices: Prices | None = None) -> pd.DataFrame:
    """The rows of one mode as a reader scans them: formatted numbers with their CIs."""
    prices = prices or load_prices()
    t = table[table["obj-type"] == mode]
    out = pd.DataFrame(
        {
            "workers": t["num-workers"],
            "rank": t["rank"].astype(object).where(t["rank"].notna(), "—"),
            "backend": t["name"],
            "median runtime [s] (95 % CI)": [
                _interval(v[0], v[1], v[2], "s") for v in t[["runtime", "runtime-ci-low", "runtime-ci-high"]].to_numpy()
            ],
            "× fastest (95 % next run)": [
                _interval(v[0], v[1], v[2], ".2f", "×")
                for v in t[["vs-fastest", "vs-fastest-ci-low", "vs-fastest-ci-high"]].to_numpy()
            ],
            "verdict": t["verdict"],
            "failed cases": [f"{int(n)} of {int(n) + int(k)}" if n else "—" for n, k in zip(t["failed"], t["trials"])],
            "unsupported": [
                f"{int(n)}" if n == n and n else "—"
                for n in (t["unsupported"] if "unsupported" in t.columns else [0] * len(t))
            ],
            "× limit": [_plain(v, ".2f", "×") for v in t["vs-limit"]],
            "GETs": [_plain(v, ".0f") for v in t["gets"]],
            "MB moved": [_plain(v / 1e6, ",.1f") for v in t["bytes"]],
            "amplification": [_plain(v, ".2f", "×") for v in t["amplification"]],
            "interval": [
                "noisy: stopped at the trial cap" if str(n) == "True" else "—"
                for n in t.get("noisy", pd.Series(False, index=t.index))
            ],
            **{f"$/1k reads, {p}": [_plain(v, ".4f") for v in t[cost_column(p)]] for p in prices.transfer_per_gb},
        }
    )
    # columns a dataset has nothing for (no limit, no request counts: upstream CSVs; no
    # client-side accounting: amplification) are left out rather than shown as a column of dashes
    empty = [c for c in out.columns if (out[c] == "—").all()]
    out = out.drop(columns=empty)
    return out.reset_index(drop=True)


def styled(frame: pd.DataFrame) -> pd.io.formats.style.Styler:
    """`display_table` for HTML: one line per row, names left-aligned, verdicts told apart."""

    def tone(v: str) -> str:
        return {FASTEST: "font-weight: bold", UNCLEAR: "color: #555; font-style: italic", LIMIT_ROW: "color: #777"}.get(
            v, ""
        )

    return (
        frame.style.hide(axis="index")
        .map(tone, subset=["verdict"])
        .set_properties(subset=[c for c in frame.columns if c != "backend"], **{"white-space": "nowrap"})
        .set_properties(
            subset=["backend"],
            **{"text-align": "left", "white-space": "normal", "min-width": "14em", "max-width": "24em"},
        )
        .set_table_styles(
            [
                {"selector": "td", "props": "padding: 2px 6px"},
                {"selector": "th", "props": "padding: 2px 6px"},
                {"selector": "", "props": "display: block; overflow-x: auto; max-width: 100%"},
            ]
        )
    )


def _fastest(table: pd.DataFrame, mode: str, reliable: bool) -> pd.Series | None:
    t = table[(table["obj-type"] == mode) & table["rank"].notna()]
    if reliable and "failed" in t.columns:
        t = t[t["failed"].fillna(0) == 0]
    return None if t.empty else t.loc[t["runtime"].idxmin()]


def _best(table: pd.DataFrame, mode: str) -> pd.Series | None:
    """The answer for a mode: the fastest configuration none of whose cases failed, so a backend
    that finished only some of its cases under faults is not recommended on its survivors' times."""
    best = _fastest(table, mode, reliable=True)
    return best if best is not None else _fastest(table, mode, reliable=False)


@dataclass(frozen=True)
class Answer:
    """The answer for one access pattern: the leader and every configuration tied with it.

    `tied` holds the other configurations at the leader's worker count whose runtime shows no
    clear difference from the leader's (stats.tied: the interval of their ratio to the fastest
    contains 1, the decision table's "no clear difference"). When it is not empty the answer is
    the group, not one winner."""

    mode: str
    leader: str
    workers: int
    runtime: float
    vs_limit: float
    costs: dict[str, float]  # $ per 1,000 reads by placement
    tied: tuple[str, ...] = ()
    spread: float = 0.0  # slowest ÷ fastest median runtime in the group, minus 1 (0.04: 4 %)
    faster_failed: str = ""  # the clause naming a faster configuration whose cases failed
    noisy: bool = False  # the leader's interval never got within the run's precision (stopping.py)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.leader, *self.tied)

    @property
    def within(self) -> int:
        """The group's spread as a whole percent, rounded up (so "within" is true)."""
        return max(1, math.ceil(round(self.spread * 100, 6)))

    @property
    def text(self) -> str:
        w = _workers(self.workers)
        if crowd(self.tied):  # say first that the run cannot rank them
            text = (
                f"{self.mode}: this run cannot tell {len(self.names)} configurations with {w} apart "
                f"(within {self.within} % of one another, no clear difference at 95 %): {_and(self.names)}; "
                f"pick on cost or simplicity, or run more trials (--precision) to separate them. "
                f"Fastest median: {self.leader}, {self.runtime:.3g} s"
            )
        elif self.tied:
            text = (
                f"{self.mode}: {_and(self.names)} with {w} are within {self.within} % of one another "
                f"(no clear difference at 95 %); pick on cost or simplicity. Fastest median: {self.leader}, "
                f"{self.runtime:.3g} s"
            )
        else:
            text = f"{self.mode}: {self.leader} with {w}, {self.runtime:.3g} s"
        if not np.isnan(self.vs_limit):
            text += f", {self.vs_limit:.2f}× the limit"
        if self.costs:
            text += " (per 1,000 reads: " + ", ".join(f"${v:.4f} {p}" for p, v in self.costs.items()) + ")"
        if self.noisy:
            text += "; its runtime is noisy (its interval stayed wider than the target up to the trial cap)"
        return text + self.faster_failed


def crowd(tied: tuple[str, ...]) -> bool:
    """The leader and `tied` make a group of CROWD or more: told as a run that cannot rank them."""
    return len(tied) + 1 >= CROWD


def _and(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


def vs_fastest_interval(row: pd.Series) -> stats.Interval:
    """One row's runtime ÷ the fastest's, with its interval, as a typed value."""
    return stats.Interval(
        float(row.at["vs-fastest"]), float(row.at["vs-fastest-ci-low"]), float(row.at["vs-fastest-ci-high"])
    )


def vs_fastest(table: pd.DataFrame) -> list[stats.Interval]:
    """Each row's runtime ÷ the fastest's, with its interval, one typed value per row."""
    return [vs_fastest_interval(row) for _, row in table.iterrows()]


def _tied_rows(table: pd.DataFrame, leader: pd.Series) -> pd.DataFrame:
    """The configurations at the leader's mode and worker count with no clear difference from it
    (none of whose cases failed when the leader's did not)."""
    t = table[
        (table["obj-type"] == leader["obj-type"])
        & (table["num-workers"] == leader["num-workers"])
        & table["rank"].notna()
    ]
    t = t[t.index != leader.name]
    if "failed" in t.columns and not leader.get("failed", 0):
        t = t[t["failed"].fillna(0) == 0]
    ref = vs_fastest_interval(leader)

    def tie(ci: stats.Interval) -> bool:
        if leader["verdict"] == FASTEST:  # the decision table's own rule: the ratio's interval holds 1
            return stats.tied(ci)
        return ci.overlaps(ref)  # a leader that is not the fastest (the fastest failed cases)

    mask = pd.Series([tie(ci) for ci in vs_fastest(t)], index=t.index, dtype=bool)
    return t.loc[mask].sort_values("runtime", kind="stable")


def answer_records(table: pd.DataFrame, prices: Prices | None = None) -> list[Answer]:
    """Per mode: the fastest configuration over all worker counts none of whose cases failed, and
    the configurations tied with it."""
    prices = prices or load_prices()
    out = []
    for mode in analysis.MODES:
        best = _best(table, mode)
        if best is None:
            continue
        tied = _tied_rows(table, best)
        runtimes = [float(best["runtime"]), *tied["runtime"].astype(float)]
        costs = {
            p: float(best[cost_column(p)])
            for p in prices.transfer_per_gb
            if cost_column(p) in best.index and not np.isnan(best[cost_column(p)])
        }
        faster = ""
        quicker = _fastest(table, mode, reliable=False)
        if quicker is not None and quicker.name != best.name:  # .name: the row's index
            n, k, qw = int(quicker["failed"]), int(quicker["trials"]), int(quicker["num-workers"])
            faster = (
                f"; {quicker['name']} with {_workers(qw)} was faster ({quicker['runtime']:.3g} s) "
                f"but {n} of its {n + k} cases failed"
            )
        out.append(
            Answer(
                mode=mode,
                leader=str(best["name"]),
                workers=int(best["num-workers"]),
                runtime=float(best["runtime"]),
                vs_limit=float(best["vs-limit"]),
                costs=costs,
                tied=tuple(str(n) for n in tied["name"]),
                spread=max(runtimes) / min(runtimes) - 1 if min(runtimes) > 0 else 0.0,
                faster_failed=faster,
                noisy=str(best.get("noisy", False)) == "True",
            )
        )
    return out


def one_line(table: pd.DataFrame) -> str:
    """The index page's answer: per mode, the fastest (or the tied group), its workers, ratio to
    the limit, internet cost."""
    parts = []
    internet = [c for c in table.columns if c.startswith("$/1000 reads ")][-1:]
    for mode in analysis.MODES:
        best = _best(table, mode)
        if best is None:
            continue
        tied = tuple(str(n) for n in _tied_rows(table, best)["name"])
        if crowd(tied):  # the index page keeps one line: the count, and the fastest
            who = f"{len(tied) + 1} configurations tied (fastest median: {best['name']})"
        else:
            who = best["name"] if not tied else f"{_and((str(best['name']), *tied))} (tied)"
        text = f"{mode}: {who} with {_workers(int(best['num-workers']))}, {best['runtime']:.3g} s"
        if pd.notna(best["vs-limit"]):
            text += f", {best['vs-limit']:.2f}× limit"
        if internet and pd.notna(best[internet[0]]):
            text += f", ${best[internet[0]]:.3g}/1k reads ({internet[0].removeprefix('$/1000 reads ')})"
        parts.append(text)
    return "; ".join(parts)


def read_decision(folder: Path) -> pd.DataFrame | None:
    """decision.csv of a rendered report, or None when the report predates it."""
    path = folder / "decision.csv"
    try:
        return pd.read_csv(path)
    except (OSError, pd.errors.EmptyDataError, pd.errors.ParserError):
        return None


def answers(table: pd.DataFrame, prices: Prices | None = None) -> list[str]:
    """One line per mode (Answer.text): the fastest configuration over all worker counts, or the
    configurations tied with it, its limit ratio and cost."""
    return [a.text for a in answer_records(table, prices)]


MAX_FINDINGS = 8
PER_TOPIC = 2  # at most this many sentences of one kind about one mode, so both modes are heard


def _workers(n: int) -> str:
    return f"{n} worker" if n == 1 else f"{n} workers"


def _significant(lo: float, hi: float) -> bool:
    """A difference worth a sentence: a known interval that is not a tie (stats.tied)."""
    ci = stats.Interval(1.0, lo, hi)
    return ci.known and not stats.tied(ci)


MIN_WORKER_COUNTS = 3


def _across_workers(
    t: pd.DataFrame, best: pd.Series, mode: str, n_boot: int, level: float, seed: int
) -> list[tuple[float, str, str, str]]:
    """Each configuration against the best one, over every worker count both ran.

    The worker counts are the replicates: the median of the per-count runtime ratios with a
    bootstrap CI over counts. This is what single-trial data (the upstream CSVs) can support.
    """
    out = []
    ref = t[t["name"] == best["name"]].set_index("num-workers")["runtime"]
    for name, part in t[t["name"] != best["name"]].groupby("name", sort=False):
        ratios = (part.set_index("num-workers")["runtime"] / ref).dropna().to_numpy(float)
        if len(ratios) < MIN_WORKER_COUNTS:
            continue
        ci = stats.median_interval(ratios, level, n_boot, seed)
        lo, hi = ci.low, ci.high
        if not _significant(lo, hi):
            continue
        r = float(np.median(ratios))
        out.append(
            (
                abs(np.log(r)),
                mode,
                "across",
                (
                    f"{mode}: across {len(ratios)} worker counts, {name} takes a median {r:.2f}× the runtime of "
                    f"{best['name']} ({round(level * 100)} % CI over worker counts {lo:.2f}–{hi:.2f}×)."
                ),
            )
        )
    return out


def findings(
    ds: analysis.Dataset, table: pd.DataFrame, n_boot: int = 2000, level: float = 0.95, seed: int = 1
) -> list[str]:
    """At most 8 sentences, largest effect first, each with its ratio and 95 % CI.

    Only differences whose CI excludes 1 are said: the best configuration against every slower one
    at the best configuration's worker count, and each configuration's change from its fewest to
    its most workers.
    """
    pct = round(level * 100)
    found: list[tuple[float, str, str, str]] = []  # (effect, mode, kind, sentence)
    for mode in analysis.MODES:
        t = table[(table["obj-type"] == mode) & table["rank"].notna()]
        if t.empty:
            continue
        best = t.loc[t["runtime"].idxmin()]
        w = int(best["num-workers"])
        slower = t[(t["num-workers"] == w) & (t["verdict"] == SLOWER)]
        for name, ci in zip(slower["name"], vs_fastest(slower), strict=True):
            r, lo, hi = ci.estimate, ci.low, ci.high
            found.append(
                (
                    abs(np.log(r)),
                    mode,
                    "rank",
                    (
                        f"{mode}, {_workers(w)}: {name} takes {r:.2f}× the runtime of {best['name']} "
                        f"({pct} % CI {lo:.2f}–{hi:.2f}×)."
                    ),
                )
            )
        found += _across_workers(t, best, mode, n_boot, level, seed)
        c = usable_cases(ds.cases)
        c = c[(c["obj-type"] == mode) & ~c["backend"].isin(REFERENCES)]
        for (series, pb), g in c.groupby(["series", "pb-size"], sort=False):
            ws = sorted(g["num-workers"].unique())
            if len(ws) < 2:
                continue
            few = g.loc[g["num-workers"] == ws[0], "total-runtime"].to_numpy(float)
            many = g.loc[g["num-workers"] == ws[-1], "total-runtime"].to_numpy(float)
            ci = stats.ratio_interval(few, many, level, n_boot, seed)
            lo, hi = ci.low, ci.high
            if not _significant(lo, hi):
                continue
            r = float(np.median(few) / np.median(many))
            name = t.loc[(t["series"] == series) & (t["pb-size"] == pb), "name"]
            name = name.iloc[0] if len(name) else str(series)
            how = "faster" if r > 1 else "slower"
            shown, slo, shi = (r, lo, hi) if r > 1 else (1 / r, 1 / hi, 1 / lo)
            found.append(
                (
                    abs(np.log(r)),
                    mode,
                    "workers",
                    (
                        f"{mode}: {name} is {shown:.2f}× {how} with {_workers(int(ws[-1]))} than with {ws[0]} "
                        f"({pct} % CI {slo:.2f}–{shi:.2f}×)."
                    ),
                )
            )
    found.sort(key=lambda x: -x[0])
    out: list[str] = []
    per: dict[tuple[str, str], int] = {}
    for _, mode, kind, text in found:
        if per.get((mode, kind), 0) >= PER_TOPIC:
            continue
        per[(mode, kind)] = per.get((mode, kind), 0) + 1
        out.append(text)
        if len(out) == MAX_FINDINGS:
            break
    return out

"""The decision table: which backend, with how many workers, for each access pattern.

Per (mode, workers) every backend configuration (series and page buffer) is ranked by median
runtime over trials, with a BCa bootstrap 95 % CI (stats.py). Its ratio to the fastest is paired by
round (stats.paired_ratios: the geometric mean of per-round ratios), with a 95 % confidence
interval and the prediction interval that should hold the next run's ratio; together they decide
its verdict (slower when the next run's interval lies above 1, equivalent when the confidence
interval lies within the margin, or undecided: stats.verdict_of).
Configurations from different runs (the upstream study's) keep a BCa interval of medians. The *limit* is the speed that
could not be beaten on this machine: max(local-disk runtime, raw-GET runtime of the same bytes, pooled over
the group: analysis.raw_ceiling).
Costs come from the dated price table in prices.toml.
"""

from __future__ import annotations

import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from shotbench import stats
from shotbench.analyse import analysis, stopping
from shotbench.analyse.text import as_text
from shotbench.diskspace import atomic_open
from shotbench.errors import UserError

PRICES_FILE = Path(__file__).with_name("prices.toml")
LOCAL = "local"
# what the limit is made of: shown below the ranking, never ranked (data on local disk, or bytes
# fetched with no HDF5 at all, is not a way to read HDF5 from S3)
REFERENCES = (LOCAL, analysis.RAW_GET)
LIMIT_ROW = "limit reference"
GIB = 1 << 30
FASTEST, ONE_TRIAL = "fastest", "one trial: no CI"
SLOWER, FASTER, EQUIVALENT, UNDECIDED = stats.SLOWER, stats.FASTER, stats.EQUIVALENT, stats.UNDECIDED
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
    "next-run-low",
    "next-run-high",
    "round-spread",
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
        status = as_text(cases["status"])
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


def margin_of(ds: analysis.Dataset) -> float:
    """The equivalence margin the runs were made with (run.json's bench config), else the default;
    runs that disagree are judged by the widest, so no pair is called equivalent more easily than
    one of its runs asked."""
    margins = [
        float(m)
        for meta in ds.runs.values()
        if isinstance(meta, dict) and (m := meta.get("config", {}).get("bench", {}).get("margin")) is not None
    ]
    return max(margins) if margins else stats.MARGIN


def verdict(rank: int, shown: stats.Interval, within: stats.Interval, margin: float) -> str:
    """The leader is `fastest`; a ratio without an interval claims nothing; else stats.verdict_of
    (a paired ratio: its next-run and confidence intervals; runs apart: one bootstrap interval)."""
    if rank == 1:
        return FASTEST
    if not within.known:
        return ONE_TRIAL
    return stats.verdict_of(shown, within, margin)


def candidate_name(series: str, pb: int, several_pb: bool) -> str:
    """How a backend configuration is named in the table (page buffer only when it varies)."""
    return f"{series} · page buffer {analysis.pb_label(pb)}" if several_pb else str(series)


def decision_table(
    ds: analysis.Dataset,
    prices: Prices | None = None,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    margin: float | None = None,
) -> pd.DataFrame:
    """One row per (mode, workers, backend configuration), ranked fastest first; `margin` is the
    equivalence margin (0.10: within ±10 % of the fastest is equivalent; None: the run's own)."""
    prices = prices or load_prices()
    margin = margin_of(ds) if margin is None else margin
    c = usable_cases(ds.cases).copy()
    failed = failed_counts(ds.failed)
    unsupported = failed_counts(ds.unsupported)  # same keys: cases the reader declared it cannot read
    c["total-runtime"] = pd.to_numeric(c["total-runtime"], errors="coerce")
    c["_gets"] = _number(c, "client-gets", "gets") + _number(c, "client-heads", None).fillna(0)
    c["_bytes"] = _number(c, "client-bytes", "get-bytes")
    c["_amp"] = _number(c, "amplification", None)
    c["_raw"] = analysis.raw_ceiling(c)
    rows: list[dict] = []
    next_run: list[tuple[int, tuple[str, int], np.ndarray]] = []  # (row, group, per-round ratios to the fastest)
    ranked: set[tuple[str, str, str, int, int]] = set()
    for (mode, workers), part in c.groupby(["obj-type", "num-workers"], sort=False):
        pbs = part.groupby("series")["pb-size"].nunique()
        local = part[part["backend"] == LOCAL]
        local_time = float(local.groupby("pb-size")["total-runtime"].median().min()) if len(local) else np.nan
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
            nlo = nhi = np.nan
            if rank == 1 and not reference:
                rlo = rhi = 1.0
                row_verdict = FASTEST
            else:
                paired = per_trial_ratios(g, fastest_g)
                if paired is not None:  # same run: the paired intervals, filled in below
                    next_run.append((len(rows), (str(mode), int(workers)), paired))
                    rlo = rhi = np.nan
                    row_verdict = ONE_TRIAL
                else:  # different runs: medians' ratio, its bootstrap interval read both ways
                    vs = stats.ratio_interval(times, fastest, level, n_boot, seed)
                    rlo, rhi = vs.low, vs.high
                    row_verdict = verdict(rank, vs, vs, margin)
            # the raw-GET ceiling of the group's bytes (analysis.raw_ceiling)
            raw = float(g["_raw"].median())  # NaN when the group has no raw-GET measurement
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
                    "next-run-low": nlo,
                    "next-run-high": nhi,
                    "round-spread": np.nan,
                    "verdict": LIMIT_ROW if reference else row_verdict,
                    "limit": limit,
                    "vs-limit": med / limit if not np.isnan(limit) else np.nan,
                    "gets": float(g["_gets"].median()),
                    "bytes": float(g["_bytes"].median()),
                    "amplification": float(g["_amp"].median()),
                    "noisy": noisy,
                }
            )
    pairs = stats.paired_ratios([r for _, _, r in next_run], [k for _, k, _ in next_run], 1 - level, margin)
    for (i, _, _), pr in zip(next_run, pairs):
        row = rows[i]
        row["vs-fastest"] = pr.estimate
        row["vs-fastest-ci-low"], row["vs-fastest-ci-high"] = pr.confidence.low, pr.confidence.high
        row["next-run-low"], row["next-run-high"] = pr.next_run.low, pr.next_run.high
        row["round-spread"] = pr.spread
        if row["verdict"] != LIMIT_ROW:
            row["verdict"] = verdict(int(row["rank"]), pr.next_run, pr.confidence, margin)
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
            "× fastest (95 % CI)": [
                _interval(v[0], v[1], v[2], ".2f", "×")
                for v in t[["vs-fastest", "vs-fastest-ci-low", "vs-fastest-ci-high"]].to_numpy()
            ],
            "next run (95 %)": [
                _interval(v[0], v[1], v[2], ".2f", "×")
                for v in t[["vs-fastest", "next-run-low", "next-run-high"]]
                .reindex(columns=["vs-fastest", "next-run-low", "next-run-high"])
                .to_numpy()
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
        return {
            FASTEST: "font-weight: bold",
            EQUIVALENT: "font-weight: bold; color: #333",
            UNDECIDED: "color: #555; font-style: italic",
            LIMIT_ROW: "color: #777",
        }.get(v, "")

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
    """The answer for one access pattern: the leader, its equivalents, and what is left undecided.

    Among the configurations at the leader's worker count, `equivalent` holds those whose ratio to
    the leader passed the equivalence test (within ±margin, stats.verdict_of), `slower` counts those
    shown slower, `undecided` those the run could not tell either way. The answer is the leader and
    its equivalents: `shotbench repeat` asks whether exactly that repeats."""

    mode: str
    leader: str
    workers: int
    runtime: float
    vs_limit: float
    costs: dict[str, float]  # $ per 1,000 reads by placement
    equivalent: tuple[str, ...] = ()
    slower: int = 0
    undecided: tuple[str, ...] = ()
    margin: float = stats.MARGIN
    faster_failed: str = ""  # the clause naming a faster configuration whose cases failed
    noisy: bool = False  # the leader's interval never got within the run's precision (stopping.py)

    @property
    def names(self) -> tuple[str, ...]:
        """The answer itself: the leader and its equivalents."""
        return (self.leader, *self.equivalent)

    @property
    def pairs(self) -> int:
        """The pairs (leader, other) at the answer's worker count that have a verdict to give."""
        return len(self.equivalent) + self.slower + len(self.undecided)

    @property
    def decided(self) -> int:
        return len(self.equivalent) + self.slower

    @property
    def text(self) -> str:
        """One sentence: the leader, its equivalents, how many are slower and how many undecided."""
        w = _workers(self.workers)
        text = f"{self.mode}: {self.leader} with {w}, {self.runtime:.3g} s"
        if not np.isnan(self.vs_limit):
            text += f", {self.vs_limit:.2f}× the limit"
        if self.costs:
            text += " (per 1,000 reads: " + ", ".join(f"${v:.4f} {p}" for p, v in self.costs.items()) + ")"
        pct = f"±{self.margin * 100:.0f} %"
        if self.equivalent:
            verb = "is" if len(self.equivalent) == 1 else "are"
            text += f"; {_and(self.equivalent)} {verb} equivalent (within {pct}, pick on cost or simplicity)"
        if self.slower:
            text += f"; {self.slower} {'is' if self.slower == 1 else 'are'} slower"
        if self.undecided:
            text += f"; {len(self.undecided)} undecided ({_and(self.undecided)}: neither shown slower nor within {pct})"
        if self.noisy:
            text += "; its runtime is noisy (its interval stayed wider than the target up to the trial cap)"
        return text + self.faster_failed


def _and(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


def vs_fastest_interval(row: pd.Series) -> stats.Interval:
    """One row's runtime ÷ the fastest's, with its 95 % confidence interval, as a typed value."""
    return stats.Interval(
        float(row.at["vs-fastest"]), float(row.at["vs-fastest-ci-low"]), float(row.at["vs-fastest-ci-high"])
    )


def vs_fastest(table: pd.DataFrame) -> list[stats.Interval]:
    """Each row's runtime ÷ the fastest's, with its interval, one typed value per row."""
    return [vs_fastest_interval(row) for _, row in table.iterrows()]


def _group_rows(table: pd.DataFrame, leader: pd.Series) -> pd.DataFrame:
    """The other ranked configurations at the leader's mode and worker count (none of whose cases
    failed when the leader's did not), fastest first."""
    t = table[
        (table["obj-type"] == leader["obj-type"])
        & (table["num-workers"] == leader["num-workers"])
        & table["rank"].notna()
    ]
    t = t[t.index != leader.name]
    if "failed" in t.columns and not leader.get("failed", 0):
        t = t[t["failed"].fillna(0) == 0]
    return t.sort_values("runtime", kind="stable")


def _verdicts(table: pd.DataFrame, leader: pd.Series) -> tuple[tuple[str, ...], int, tuple[str, ...]]:
    """(equivalent names, how many slower, undecided names) of the leader's group.

    The verdicts are the table's, each against the fastest; when the leader is not the fastest
    (the fastest failed cases) nothing was tested against it, so nothing counts as decided."""
    t = _group_rows(table, leader)
    v = t["verdict"].astype(str)
    if leader["verdict"] != FASTEST:
        return (), 0, tuple(str(n) for n in t["name"])
    names = t["name"].astype(str)
    return (
        tuple(names[v == EQUIVALENT]),
        int((v == SLOWER).sum()),
        tuple(names[~v.isin([EQUIVALENT, SLOWER])]),
    )


def answer_records(table: pd.DataFrame, prices: Prices | None = None, margin: float = stats.MARGIN) -> list[Answer]:
    """Per mode: the fastest configuration over all worker counts none of whose cases failed, its
    equivalents, and what is left undecided (`margin`: the one the table was made with)."""
    prices = prices or load_prices()
    out = []
    for mode in analysis.MODES:
        best = _best(table, mode)
        if best is None:
            continue
        equivalent, slower, undecided = _verdicts(table, best)
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
                equivalent=equivalent,
                slower=slower,
                undecided=undecided,
                margin=margin,
                faster_failed=faster,
                noisy=str(best.get("noisy", False)) == "True",
            )
        )
    return out


def one_line(table: pd.DataFrame) -> str:
    """The index page's answer: per mode, the leader and its equivalents, its workers, ratio to
    the limit, internet cost, and how many pairs were left undecided."""
    parts = []
    internet = [c for c in table.columns if c.startswith("$/1000 reads ")][-1:]
    for mode in analysis.MODES:
        best = _best(table, mode)
        if best is None:
            continue
        equivalent, _, undecided = _verdicts(table, best)
        who = str(best["name"]) if not equivalent else f"{_and((str(best['name']), *equivalent))} (equivalent)"
        text = f"{mode}: {who} with {_workers(int(best['num-workers']))}, {best['runtime']:.3g} s"
        if pd.notna(best["vs-limit"]):
            text += f", {best['vs-limit']:.2f}× limit"
        if internet and pd.notna(best[internet[0]]):
            text += f", ${best[internet[0]]:.3g}/1k reads ({internet[0].removeprefix('$/1000 reads ')})"
        if undecided:
            text += f", {len(undecided)} undecided"
        parts.append(text)
    return "; ".join(parts)


def read_decision(folder: Path) -> pd.DataFrame | None:
    """decision.csv of a rendered report, or None when the report predates it."""
    path = folder / "decision.csv"
    try:
        return pd.read_csv(path)
    except (OSError, pd.errors.EmptyDataError, pd.errors.ParserError):
        return None


def answers(table: pd.DataFrame, prices: Prices | None = None, margin: float = stats.MARGIN) -> list[str]:
    """One line per mode (Answer.text): the leader over all worker counts, its equivalents, its
    limit ratio and cost, and how many pairs were left undecided."""
    return [a.text for a in answer_records(table, prices, margin)]


MAX_FINDINGS = 8
PER_TOPIC = 2  # at most this many sentences of one kind about one mode, so both modes are heard


def _workers(n: int) -> str:
    return f"{n} worker" if n == 1 else f"{n} workers"


def _significant(lo: float, hi: float) -> bool:
    """A difference worth a sentence: a known interval that excludes 1."""
    ci = stats.Interval(1.0, lo, hi)
    return ci.known and not ci.contains(1.0)


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

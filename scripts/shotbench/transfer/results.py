"""Reading transfer runs back: the seed-style tables and the two ratios the benchmark exists for.

Shared by the terminal summary and notebooks/transfer.ipynb so both show the same numbers.
A cell is the median over trials that verified; a case with no good trial shows its error.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd

from shotbench import stats
from shotbench.errors import UserError
from shotbench.runs import RUN_JSON, read_meta
from shotbench.transfer.cases import size_label
from shotbench.transfer.checks import same_check_tools
from shotbench.transfer.cpubound import FULL, Cores, CpuReading, Spent, reading

BASELINE = "raw-get"
CLASSIC = "aws-s3-sync"  # the seed tables' reference column
SELF = "shotbench"
THRESHOLD = 1.10  # shotbench's median time may be at most this multiple of the best tool's, on every row
SAME_CHECK: tuple[str, ...] = same_check_tools()
"""Tools that check each transfer as `stage` does (SAME_CHECK_HOW): the like-for-like comparison,
printed beside the threshold and never in its place. A tool counts on the rows of the directions it
runs (boto3-crc64nvme uploads only)."""
SAME_CHECK_HOW = (
    "a whole-object CRC64NVME computed by the client and verified by the server on upload, "
    "the bytes checked against the CRC64NVME the server stores on download"
)
LOOPBACK = "loopback"
CELL = ("network", "direction", "tool", "concurrency", "test")
"""What makes cases identical: one tool on one row, in flight and network alike; trials differ."""


CPU_COLUMNS = ("client-cpu-s", "server-cpu-s", "stolen-cpu-s")
STOLEN_NOTABLE = 0.05  # a case that lost more than this share of the machine's CPU time ran on noticeably less
STOLEN_EXPLAINS = 0.3  # a correlation at least this strong is called one reason identical cases differ


NUMBERS = ("trial", "concurrency", "file-count", "file-size", "total-bytes", "seconds", "mb-per-s")
NEEDED = ("direction", "tool", "test", "error", *NUMBERS)
"""The columns of cases.csv the tables read (runs of every age have them), and those of them that
hold numbers (seconds and mb-per-s are empty where a case failed)."""


def _damaged(path: Path, why: str) -> UserError:
    return UserError(f"{path} is damaged ({why}); restore it from a copy or start a new run with `shotbench transfer`.")


def load_cases(run_dir: Path) -> pd.DataFrame:
    """cases.csv as a frame; a damaged one (empty, not CSV, without the columns or numbers the
    tables read) is one sentence naming it, not a pandas error in a notebook."""
    path = run_dir / "cases.csv"
    blank = {c: [""] for c in ("seconds", "mb-per-s", *CPU_COLUMNS)}
    try:
        df = pd.read_csv(path, keep_default_na=False, na_values=blank)
    except pd.errors.EmptyDataError:
        raise _damaged(path, "it is empty, without even its header row") from None
    except ValueError:  # pandas' ParserError, or bytes that are not UTF-8
        raise _damaged(path, "it is not a readable CSV table") from None
    missing = [c for c in NEEDED if c not in df.columns]
    if missing:
        raise _damaged(path, f"it lacks the columns {', '.join(missing)}")
    for c in NUMBERS:
        text = df[c].where(df[c].notna(), "").astype(str).str.strip()
        wrong = text[(text != "") & pd.to_numeric(text, errors="coerce").isna()]
        if len(wrong):
            raise _damaged(path, f"its column {c} holds {wrong.iloc[0]!r}, not a number")
    df["error"] = df["error"].astype(str)
    for c in CPU_COLUMNS:  # runs written before CPU was counted: unknown
        df[c] = pd.to_numeric(df[c], errors="coerce") if c in df.columns else float("nan")
    if "network" not in df.columns:  # runs written before the network axis: all on loopback
        df["network"] = LOOPBACK
    df["network"] = df["network"].replace("", LOOPBACK)
    return df


def loopback(cases: pd.DataFrame) -> pd.DataFrame:
    """The main matrix: cases over the direct connection (the latency sweep has its own tables)."""
    return cases[cases["network"] == LOOPBACK] if "network" in cases.columns else cases


def load_meta(run_dir: Path) -> dict:
    """run.json (checked by shotbench.runs), or {} for a folder without one."""
    return read_meta(run_dir) if (run_dir / RUN_JSON).exists() else {}


_SUMMARIES: dict[str, pd.DataFrame] = {}  # by content, the newest last
SUMMARIES_KEPT = 8


def summarize(cases: pd.DataFrame) -> pd.DataFrame:
    """One row per (direction, tool, concurrency, test): median seconds/MB/s of good trials,
    trials counted, and the first error when no trial was good.

    Remembered by the content of `cases`: a report's tables and figures ask for the summary of the
    same rows some 30 times, and each is a bootstrap per cell (12 of a 15 CPU-s report render)."""
    key = hashlib.sha256(
        ",".join(map(str, cases.columns)).encode() + pd.util.hash_pandas_object(cases, index=False).to_numpy().tobytes()
    ).hexdigest()
    if key not in _SUMMARIES:
        while len(_SUMMARIES) >= SUMMARIES_KEPT:
            del _SUMMARIES[next(iter(_SUMMARIES))]
        _SUMMARIES[key] = _summarize(cases)
    return _SUMMARIES[key].copy()


def _summarize(cases: pd.DataFrame) -> pd.DataFrame:
    keys = [*CELL, "file-count", "file-size", "total-bytes"]  # the row's sizes follow from `test`
    if "network" not in cases.columns:
        cases = cases.assign(network=LOOPBACK)
    if cases.empty:
        return pd.DataFrame(
            columns=[*keys, "seconds", "lo", "hi", "mb-per-s", *CPU_COLUMNS, "trials", "good", "error", "times"]
        )
    out = []
    for key, g in cases.groupby(keys, sort=False):
        good = g[(g["error"] == "") & g["seconds"].notna()]
        errors = g.loc[g["error"] != "", "error"]
        ci = stats.median_interval(good["seconds"].to_numpy())  # BCa, as the reading benchmark's
        lo, hi = ci.low, ci.high
        out.append(
            {
                **dict(zip(keys, key)),
                "seconds": good["seconds"].median() if len(good) else float("nan"),
                "lo": lo,
                "hi": hi,
                "mb-per-s": good["mb-per-s"].median() if len(good) else float("nan"),
                **{c: good[c].median() if c in good.columns and len(good) else float("nan") for c in CPU_COLUMNS},
                "trials": len(g),
                "good": len(good),
                "error": "" if len(good) else (errors.iloc[0] if len(errors) else "no result"),
                "times": tuple(good["seconds"].astype(float)),  # for ratio intervals between two cells
            }
        )
    return pd.DataFrame(out)


def tools_table(meta: dict) -> pd.DataFrame:
    """One row per tool from run.json: mode, version, installed or why not, and the exact calls."""
    rows = []
    for name, t in (meta.get("tools") or {}).items():
        how = t.get("how") or {}
        rows.append(
            {
                "tool": name,
                "mode": t.get("mode"),
                "upload check": recorded_check(t),
                "version": t.get("version") or "",
                "status": t.get("status"),
                "upload": how.get("upload", "—"),
                "download": how.get("download", "—"),
            }
        )
    return pd.DataFrame(rows).set_index("tool") if rows else pd.DataFrame()


def _cell(r: pd.Series, metric: str) -> str:
    if r["good"] == 0:
        err = r["error"]
        return "not installed" if err.startswith("not installed") else f"error: {err[:60]}"
    v = r[metric]
    return f"{v:.2f}s" if metric == "seconds" else f"{v:.1f}"


def main_concurrency(cases: pd.DataFrame) -> int | None:
    """The concurrency the seed table shows: the one that covers the most tests (a tie goes to
    the middle value, so a 4/16/64 sweep shows 16)."""
    cases = loopback(cases)
    if cases.empty:
        return None
    cover = cases.groupby("concurrency")["test"].nunique()
    tied = sorted(cover[cover == cover.max()].index)
    return int(tied[len(tied) // 2])


def seed_table(
    cases: pd.DataFrame, direction: str, metric: str = "seconds", concurrency: int | None = None
) -> pd.DataFrame:
    """Rows = test ('1000 File/1 MiB ea'), then Total Transfer Size, columns = tools, at one
    concurrency (default `main_concurrency`); cells '12.34s' / MB/s, or the error."""
    cases = loopback(cases)
    conc = concurrency if concurrency is not None else main_concurrency(cases)
    s = summarize(cases)
    s = s[(s["direction"] == direction) & (s["concurrency"] == conc)]
    if s.empty:
        return pd.DataFrame()
    s = s.assign(cell=[_cell(r, metric) for _, r in s.iterrows()])
    tests = (
        s[["test", "file-count", "file-size", "total-bytes"]]
        .drop_duplicates("test")
        .sort_values(["total-bytes", "file-size"], ascending=[False, True])
    )
    table = s.pivot(index="test", columns="tool", values="cell")
    table = table.reindex(index=tests["test"], columns=sorted(s["tool"].unique())).fillna("")
    table.insert(0, "Total Transfer Size", [size_label(int(b)) for b in tests["total-bytes"]])
    table.index.name = "Test"
    table.columns.name = None
    return table


def recorded_check(tool: dict) -> str:
    """The upload check run.json records for a tool; runs from before it was recorded say so
    rather than borrow today's table (stage's own check changed from SHA-256 to CRC64NVME)."""
    return str(tool.get("check") or "not recorded")


def check_table(cases: pd.DataFrame, meta: dict, metric: str = "seconds") -> pd.DataFrame:
    """The upload seed table turned on its side, with each tool's upload check (as run.json
    records it) as its first column: a time only compares with the times of tools that did the
    same work over the bytes, so the check stands beside every number."""
    table = seed_table(cases, "upload", metric)
    if table.empty:
        return table
    tools = meta.get("tools") or {}
    out = table.drop(columns="Total Transfer Size").T
    out.insert(0, "check", [recorded_check(tools.get(str(tool)) or {}) for tool in out.index])
    out.index.name = "Tool"
    out.columns.name = None
    return out


def sweep_table(cases: pd.DataFrame, direction: str, metric: str = "mb-per-s") -> pd.DataFrame:
    """For tests run at several concurrencies: rows = (test, tool), columns = concurrency."""
    s = summarize(loopback(cases))
    s = s[s["direction"] == direction]
    swept = s.groupby("test")["concurrency"].nunique()
    s = s[s["test"].isin(swept[swept > 1].index)]
    if s.empty:
        return pd.DataFrame()
    s = s.assign(cell=[_cell(r, metric) for _, r in s.iterrows()], row=s["test"] + " · " + s["tool"])
    table = s.pivot(index="row", columns="concurrency", values="cell").fillna("")
    table = table.reindex(sorted(table.index), columns=sorted(table.columns))
    table.columns = [f"{c} threads" for c in table.columns]
    table.index.name = "Test · tool"
    return table


def markdown(table: pd.DataFrame) -> str:
    """A pipe table like the seed's, without extra dependencies."""
    if table.empty:
        return "(no rows)"
    head = [table.index.name or ""] + [str(c) for c in table.columns]
    rows = [[str(i)] + [str(v) for v in r] for i, r in zip(table.index, table.values)]
    widths = [max(len(x[k]) for x in [head] + rows) for k in range(len(head))]

    def fmt(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([fmt(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [fmt(r) for r in rows])


@dataclass
class Ratio:
    """A measured comparison: value = numerator / denominator, with what was compared."""

    name: str
    value: float | None
    numerator: str
    denominator: str
    note: str = ""

    def text(self) -> str:
        if self.value is None:
            return f"{self.name}: not measured ({self.note})"
        return f"{self.name}: {self.value:.2f}  [{self.numerator} / {self.denominator}]" + (
            f"  {self.note}" if self.note else ""
        )


def _best(s: pd.DataFrame, tool: str, direction: str, test: str) -> pd.Series | None:
    g = s[(s["tool"] == tool) & (s["direction"] == direction) & (s["test"] == test) & (s["good"] > 0)]
    return None if g.empty else g.sort_values("seconds").iloc[0]


def stage_vs_sync(cases: pd.DataFrame, test: str = "1000 File/1 MiB ea") -> Ratio:
    """Upload time of `aws s3 sync` over `shotbench stage` on the many-small-files row
    (> 1 means stage is faster); each at its fastest concurrency in this run."""
    s = summarize(loopback(cases))
    if test not in set(s["test"]):
        many = s.sort_values("file-count", ascending=False)
        if many.empty:
            return Ratio("aws s3 sync / shotbench stage", None, "", "", "no cases")
        test = many["test"].iloc[0]
    stage, sync = _best(s, "shotbench", "upload", test), _best(s, "aws-s3-sync", "upload", test)
    if stage is None or sync is None:
        missing = "shotbench stage" if stage is None else "aws s3 sync"
        return Ratio("aws s3 sync / shotbench stage", None, "", "", f"{missing} has no verified upload of {test}")
    return Ratio(
        f"upload {test}: aws s3 sync time / shotbench stage time",
        sync["seconds"] / stage["seconds"],
        f"aws s3 sync {sync['seconds']:.2f}s (c={sync['concurrency']})",
        f"stage {stage['seconds']:.2f}s (jobs={stage['concurrency']})",
        "(>1: stage faster)",
    )


def best_vs_raw(cases: pd.DataFrame) -> list[Ratio]:
    """Per test: the fastest verified download tool's MB/s over raw-get's MB/s at the same
    concurrency (raw-get reads whole objects into memory, no disk writes)."""
    s = summarize(loopback(cases))
    d = s[(s["direction"] == "download") & (s["good"] > 0)]
    out = []
    for test in d.sort_values("total-bytes", ascending=False)["test"].drop_duplicates():
        g = d[d["test"] == test]
        tools = g[g["tool"] != BASELINE]
        if tools.empty:
            continue
        best = tools.sort_values("mb-per-s", ascending=False).iloc[0]
        raw = g[(g["tool"] == BASELINE) & (g["concurrency"] == best["concurrency"])]
        if raw.empty:
            out.append(
                Ratio(
                    f"download {test}: best tool MB/s / raw-get MB/s",
                    None,
                    "",
                    "",
                    f"no verified raw-get at concurrency {best['concurrency']}",
                )
            )
            continue
        r = raw.iloc[0]
        out.append(
            Ratio(
                f"download {test}: best tool MB/s / raw-get MB/s",
                best["mb-per-s"] / r["mb-per-s"],
                f"{best['tool']} {best['mb-per-s']:.1f} MB/s (c={best['concurrency']})",
                f"raw-get {r['mb-per-s']:.1f} MB/s (c={r['concurrency']})",
            )
        )
    return out


def terminal_summary(run_dir: Path) -> str:
    """What `shotbench transfer` prints at the end."""
    cases = load_cases(run_dir)
    parts = []
    conc = main_concurrency(cases)
    for direction in ("upload", "download"):
        for metric, unit in (("seconds", "seconds"), ("mb-per-s", "MB/s")):
            t = seed_table(cases, direction, metric)
            if not t.empty:
                parts.append(
                    f"\n{direction.capitalize()} ({unit}, concurrency {conc}, median of verified trials)\n{markdown(t)}"
                )
        t = sweep_table(cases, direction)
        if not t.empty:
            parts.append(f"\n{direction.capitalize()} concurrency sweep (MB/s)\n{markdown(t)}")
    for direction in ("upload", "download"):
        for ref in (CLASSIC, BASELINE):
            t = normalised_table(cases, direction, ref)
            if not t.empty:
                parts.append(f"\n{direction.capitalize()} time ÷ {ref} on the same row\n{markdown(t)}")
    parts.append("\n" + stage_vs_sync(cases).text())
    parts += [r.text() for r in best_vs_raw(cases)]
    if (cases["network"] != LOOPBACK).any():
        parts.append(latency_text(cases))
    if cases["stolen-cpu-s"].notna().any():  # runs that read it: how much machine the cases had
        parts.append(stolen_text(cases, load_meta(run_dir)))
    return "\n".join(parts)


# ---------------------------------------------------------------- normalised tables and the stage threshold


def normalised_table(cases: pd.DataFrame, direction: str, ref: str) -> pd.DataFrame:
    """The seed table with every median time divided by `ref`'s on the same row (test and
    concurrency): '0.42×' is 0.42 times the reference's time. Rows are 'test · c=N'."""
    s = summarize(loopback(cases))
    s = s[(s["direction"] == direction) & (s["good"] > 0)]
    r = s[s["tool"] == ref].set_index(["test", "concurrency"])["seconds"]
    if s.empty or r.empty:
        return pd.DataFrame()
    s = s[s.set_index(["test", "concurrency"]).index.isin(r.index)]
    s = s.assign(
        row=s["test"] + " · c=" + s["concurrency"].astype(str),
        cell=[f"{v / r[(t, c)]:.2f}×" for v, t, c in zip(s["seconds"], s["test"], s["concurrency"])],
    )
    order = (
        s[["row", "total-bytes", "file-size", "concurrency"]]
        .drop_duplicates("row")
        .sort_values(["total-bytes", "file-size", "concurrency"], ascending=[False, True, True])["row"]
    )
    table = s.pivot(index="row", columns="tool", values="cell").reindex(index=order).fillna("")
    table = table[[ref] + sorted(c for c in table.columns if c != ref)]
    table.index.name = f"Test · concurrency (time ÷ {ref})"
    table.columns.name = None
    return table


WITHIN = "within"  # the threshold's own verdict; slower and undecided are the ones every verdict uses
SLOWER, UNDECIDED = stats.SLOWER, stats.UNDECIDED
VERDICT_TRIALS = 5
"""The fewest verified trials a side for a verdict: a bootstrap interval of the medians of two or
three values a side is far narrower than what those trials can know, and covers much less than its
level says."""


@dataclass
class StageCheck:
    """One row of the matrix judged against the threshold: shotbench against the fastest other tool."""

    direction: str
    test: str
    concurrency: int
    seconds: float | None  # shotbench's median
    lo: float
    hi: float
    best_tool: str
    best_seconds: float | None
    best_lo: float
    best_hi: float
    tied: list[str]  # tools whose interval overlaps shotbench's (a tie, as far as these trials can tell)
    threshold: float = THRESHOLD
    error: str = ""
    ratio_lo: float = float("nan")  # the 95 % BCa interval of shotbench's median ÷ the fastest other's
    ratio_hi: float = float("nan")
    trials: int = 0  # shotbench's verified trials on this row
    best_trials: int = 0

    @property
    def ratio(self) -> float | None:
        if self.seconds is None or not self.best_seconds:
            return None
        return self.seconds / self.best_seconds

    @property
    def passed(self) -> bool:
        r = self.ratio
        return r is not None and r <= self.threshold

    @property
    def verdict(self) -> str:
        """`within` the threshold when the ratio's whole interval is at or under it, `slower` when
        the whole interval is above it, `undecided` otherwise (or with fewer than VERDICT_TRIALS
        trials a side): what the trials can tell, beside the pass or fail of the medians themselves."""
        if self.best_seconds is None and self.seconds is not None:
            return WITHIN  # no other tool finished the row
        if np.isnan(self.ratio_lo) or np.isnan(self.ratio_hi) or min(self.trials, self.best_trials) < VERDICT_TRIALS:
            return UNDECIDED
        if self.ratio_hi <= self.threshold:
            return WITHIN
        return SLOWER if self.ratio_lo > self.threshold else UNDECIDED

    def line(self) -> str:
        def iv(v: float, lo: float, hi: float) -> str:
            return f"{v:.2f} s" + (f" [{lo:.2f}, {hi:.2f}]" if not np.isnan(lo) else " [one trial]")

        head = f"{self.direction:8} {self.test:20} c={self.concurrency:<3}"
        if self.seconds is None:
            return f"{head} FAIL  shotbench has no verified trial ({self.error[:80]})"
        if self.best_seconds is None:
            return f"{head} PASS  shotbench {iv(self.seconds, self.lo, self.hi)}; no other tool finished this row"
        tie = f"; tied with {', '.join(self.tied)}" if self.tied else ""
        ratio = f"{self.ratio:.2f}×" + (
            "" if np.isnan(self.ratio_lo) else f" [{self.ratio_lo:.2f}, {self.ratio_hi:.2f}]"
        )
        return (
            f"{head} {'PASS' if self.passed else 'FAIL'}  shotbench {iv(self.seconds, self.lo, self.hi)} vs "
            f"{self.best_tool} {iv(self.best_seconds, self.best_lo, self.best_hi)} = {ratio} "
            f"({self.verdict}, {self.trials} and {self.best_trials} trials){tie}"
        )


def _overlap(a: pd.Series, b: pd.Series) -> bool:
    if any(np.isnan(x) for x in (a["lo"], a["hi"], b["lo"], b["hi"])):
        return False
    return a["lo"] <= b["hi"] and b["lo"] <= a["hi"]


def stage_checks(cases: pd.DataFrame, threshold: float = THRESHOLD) -> list[StageCheck]:
    """Every loopback row shotbench ran: its median time over the fastest other tool's (raw-get,
    the in-memory ceiling that writes no files, is not a competitor)."""
    return _stage_checks(summarize(loopback(cases)), threshold)


def like_for_like(cases: pd.DataFrame, threshold: float = THRESHOLD) -> list[StageCheck]:
    """stage_checks against the tools that make stage's check only (SAME_CHECK): what the tool
    costs, apart from what its SHA-256 costs. Rows where none of them finished are left out."""
    return _stage_checks(summarize(loopback(cases)), threshold, SAME_CHECK)


def _stage_checks(s: pd.DataFrame, threshold: float, among: tuple[str, ...] | None = None) -> list[StageCheck]:
    """stage_checks of a loopback summary already made; `among`: only these tools are rivals."""
    out = []
    for (direction, test, conc), g in s.groupby(["direction", "test", "concurrency"], sort=False):
        me = g[g["tool"] == SELF]
        if me.empty:
            continue
        me = me.iloc[0]
        rivals = g[(g["tool"] != SELF) & (g["tool"] != BASELINE) & (g["good"] > 0)].sort_values("seconds")
        if among is not None:
            rivals = rivals[rivals["tool"].isin(among)]
            if rivals.empty:
                continue
        row = (direction, test, int(conc))
        if me["good"] == 0:
            out.append(StageCheck(*row, None, np.nan, np.nan, "", None, np.nan, np.nan, [], threshold, me["error"]))
            continue
        tied = [r["tool"] for _, r in rivals.iterrows() if _overlap(me, r)]
        mine = (float(me["seconds"]), me["lo"], me["hi"])
        if rivals.empty:
            out.append(StageCheck(*row, *mine, "", None, np.nan, np.nan, tied, threshold, trials=int(me["good"])))
            continue
        b = rivals.iloc[0]
        ratio = stats.ratio_interval(np.asarray(me["times"]), np.asarray(b["times"]))
        out.append(
            StageCheck(
                *row,
                *mine,
                b["tool"],
                float(b["seconds"]),
                b["lo"],
                b["hi"],
                tied,
                threshold,
                ratio_lo=ratio.low,
                ratio_hi=ratio.high,
                trials=int(me["good"]),
                best_trials=int(b["good"]),
            )
        )
    order = {"upload": 0, "download": 1}
    return sorted(out, key=lambda c: (order.get(c.direction, 2), c.concurrency, c.test))


def _pair(summary: pd.DataFrame, c: StageCheck) -> tuple[pd.Series, pd.Series] | None:
    """The summary rows of stage and of the fastest other tool on a judged row; None when either
    has no verified time there."""
    if c.seconds is None or c.best_seconds is None:
        return None
    g = summary[
        (summary["direction"] == c.direction) & (summary["test"] == c.test) & (summary["concurrency"] == c.concurrency)
    ]
    return g[g["tool"] == SELF].iloc[0], g[g["tool"] == c.best_tool].iloc[0]


def _spent(row: pd.Series) -> Spent:
    return Spent(float(row["seconds"]), float(row["client-cpu-s"]), float(row["server-cpu-s"]))


def _cpu_reading(summary: pd.DataFrame, c: StageCheck, cores: Cores | None) -> CpuReading | None:
    """What the machine's CPU says of a judged row's ratio (shotbench.transfer.cpubound)."""
    pair = _pair(summary, c)
    return None if pair is None or cores is None else reading(_spent(pair[0]), _spent(pair[1]), cores)


def cpu_table(cases: pd.DataFrame, cores: Cores | None = None) -> pd.DataFrame:
    """Per row of the matrix stage ran: stage and the fastest other tool, with the median CPU each
    used on this side and on the server's while timed. Where the embedded server shares the cores,
    the server's work for a tool's check lands on that tool's clock; against S3 it would run on S3's
    machines. With the run's `cores`, also how busy the cores were during the other tool's cases
    and stage's CPU ÷ its CPU (both sides; with the server's cores apart, the busier side's, named
    in the column): where the cores were full, the time ratio follows that one. Empty when the run
    counted no CPU (runs from before it did)."""
    s = summarize(loopback(cases))
    if s.empty or s["client-cpu-s"].isna().all():
        return pd.DataFrame()
    rows = []
    for c in _stage_checks(s, THRESHOLD):
        pair = _pair(s, c)
        if pair is None:
            continue
        me, best = pair
        rows.append(
            {
                "direction": c.direction,
                "row": c.test,
                "in flight": c.concurrency,
                "fastest other": c.best_tool,
                "time ÷": round(c.ratio or float("nan"), 2),
                "stage s": round(float(me["seconds"]), 3),
                "other s": round(float(best["seconds"]), 3),
                "stage client CPU s": round(me["client-cpu-s"], 3),
                "other client CPU s": round(best["client-cpu-s"], 3),
                "stage server CPU s": round(me["server-cpu-s"], 3),
                "other server CPU s": round(best["server-cpu-s"], 3),
            }
        )
        if cores is not None:
            cr = reading(_spent(me), _spent(best), cores)
            side = "" if cr is None or cr.side == "both" else f" ({cr.side})"
            rows[-1]["cores busy"] = f"{cr.busy * 100:.0f} %{side}" if cr else "–"
            rows[-1]["CPU ÷"] = round(cr.cpu_ratio, 2) if cr else float("nan")
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Stolen:
    """How much CPU time the hypervisor took from the machine during a run's timed cases, as a
    share of the machine's (wall time × CPUs), and how far that follows the spread of identical
    cases: the correlation of a case's share with its time ÷ its cell's median (None when fewer
    than three cells have three good trials, or when no case lost any)."""

    cases: int
    median: float
    most: float
    over: int
    r: float | None


def stolen(cases: pd.DataFrame, cpus: int) -> Stolen | None:
    """The run's stolen CPU time; None for runs that did not read it (before it was, or a kernel
    that does not count it)."""
    good = cases[(cases["error"] == "") & cases["seconds"].notna() & cases["stolen-cpu-s"].notna()]
    if good.empty or cpus < 1:
        return None
    share = good["stolen-cpu-s"] / (good["seconds"] * cpus)
    cell = good.groupby(list(CELL), sort=False)["seconds"]
    spread = good["seconds"] / cell.transform("median")
    paired = cell.transform("size") >= 3
    r = None
    if cell.size().ge(3).sum() >= 3 and share[paired].std() > 0 and spread[paired].std() > 0:
        r = float(np.corrcoef(share[paired], spread[paired])[0, 1])
    return Stolen(len(good), float(share.median()), float(share.max()), int((share > STOLEN_NOTABLE).sum()), r)


def _percent(share: float, digits: int = 1) -> str:
    return f"{share * 100:.{digits}f} %"


def server_storage_text(meta: dict) -> str:
    """Where the run's embedded server kept its objects, in a sentence ('' for a user's S3)."""
    data = meta.get("data") or {}
    if not data.get("embedded"):
        return ""
    server = data.get("server") or {}
    kind = server.get("storage")
    if not kind:
        return "The embedded server kept its objects on this machine's disk (runs from before the choice was recorded)."
    where = "in memory (tmpfs)" if kind == "memory" else "on this machine's disk"
    return f"The embedded server kept its objects {where}: {server.get('storage_why') or 'no reason recorded'}."


def machine_cpus(meta: dict) -> int:
    """The CPUs of the machine a run was made on, as run.json records them (0 when it does not)."""
    return int((meta.get("machine") or {}).get("cpus") or 0)


def machine_cores(meta: dict) -> Cores | None:
    """The tools' CPUs and the embedded server's own, as run.json records them: the server's
    apart when the run split them (shotbench.transfer.cores), else every CPU shared; None when
    run.json names no CPUs."""
    server = ((meta.get("data") or {}).get("server")) or {}
    if server.get("server_cpus"):
        return Cores(len(server.get("client_cpus") or ()), len(server["server_cpus"]))
    cpus = machine_cpus(meta)
    return Cores(cpus) if cpus else None


def server_cpus_text(meta: dict) -> str:
    """Which CPUs the run's embedded server had, in a sentence ('' for a user's S3)."""
    data = meta.get("data") or {}
    if not data.get("embedded"):
        return ""
    server = data.get("server") or {}
    if "server_cpus" not in server:
        return "The embedded server shared every CPU with the tools (runs from before the choice was recorded)."
    if not server["server_cpus"]:
        return f"The embedded server shared every CPU with the tools: {server.get('cpus_why') or 'no reason recorded'}."
    return (
        f"The embedded server ran on CPU {', '.join(map(str, server['server_cpus']))} and the tools on CPU "
        f"{', '.join(map(str, server.get('client_cpus') or ()))}: {server.get('cpus_why') or 'no reason recorded'}."
    )


def stolen_text(cases: pd.DataFrame, meta: dict) -> str:
    """The run's stolen CPU time in two sentences, or what is known of it."""
    cpus = machine_cpus(meta)
    st = stolen(cases, cpus)
    if st is None:
        return (
            "This run did not read the CPU time the hypervisor took from the machine (runs from before it was read, "
            "or a kernel that does not count it)."
        )
    said = (
        f"The hypervisor took {_percent(st.median)} of this machine's CPU time during the median timed case, and at "
        f"most {_percent(st.most)}; {st.over} of {st.cases} cases lost more than {_percent(STOLEN_NOTABLE, 0)} of it."
    )
    if st.r is None:
        return said
    why = (
        "stolen time is one reason identical cases differ in this run"
        if st.r >= STOLEN_EXPLAINS
        else "stolen time explains little of how identical cases differ in this run"
    )
    return (
        f"{said} A case's share of stolen time and its time ÷ the median of its tool and row correlate at "
        f"r = {st.r:.2f}: {why}."
    )


def more_trials_text(meta: dict) -> str:
    """What run.json says of the trials added where the threshold was undecided, in a sentence
    ('' for a run that planned none)."""
    more = meta.get("more_trials") or {}
    cap = int(more.get("cap") or 0)
    planned = int((meta.get("plan") or {}).get("trials") or 0)
    if cap <= planned:
        return ""
    added = more.get("added") or []
    said = (
        f"{len(added)} more trial(s) of stage and its contenders on the rows whose threshold was undecided "
        f"({sum(int(a.get('cases') or 0) for a in added)} cases)"
        if added
        else "no trial added: every row was decided"
    )
    stopped = {"decided": "every row decided", "trial cap": f"stopped at the cap of {cap} trials"}.get(
        str(more.get("stopped")), "not finished"
    )
    return f"Then {said}; {stopped}."


def threshold_text(run_dir: Path, threshold: float = THRESHOLD) -> str:
    """The pass/fail block `make bench-transfer` prints."""
    summary = summarize(loopback(load_cases(run_dir)))  # one bootstrap per cell, for both blocks
    checks = _stage_checks(summary, threshold)
    if not checks:
        return "stage threshold: not checked (shotbench was not in this run)"
    passed = sum(c.passed for c in checks)
    verdict = "PASS" if passed == len(checks) else "FAIL"
    head = (
        f"stage threshold: shotbench ≤ {threshold:.2f}× the fastest other tool's median time on every row "
        f"(median of verified trials, {int(stats.LEVEL * 100)} % BCa bootstrap interval; raw-get excluded as the ceiling): "
        f"{verdict} ({passed} of {len(checks)} rows pass)"
    )
    told = Counter(c.verdict for c in checks)
    head += (
        f"\n  what the trials tell of each ratio's {int(stats.LEVEL * 100)} % interval against {threshold:.2f}: "
        f"{told[WITHIN]} within, {told[SLOWER]} slower, {told[UNDECIDED]} undecided"
    )
    cores = machine_cores(load_meta(run_dir))
    lines = [head]
    for c in checks:
        lines.append("  " + c.line())
        cr = None if c.passed else _cpu_reading(summary, c, cores)
        if cr is not None:
            lines.append(f"    CPU: stage {cr.client_extra:+.3f} s on this side; {cr.phrase()}")
    same = _stage_checks(summary, threshold, SAME_CHECK)
    if same:
        passed = sum(c.passed for c in same)
        lines.append(
            f"like for like, beside the verdict above: shotbench ≤ {threshold:.2f}× the fastest tool that checks each "
            f"transfer as stage does ({', '.join(SAME_CHECK)}: {SAME_CHECK_HOW}): "
            f"{'PASS' if passed == len(same) else 'FAIL'} ({passed} of {len(same)} rows pass)"
        )
        lines += ["  " + c.line() for c in same]
    return "\n".join(lines)


# ---------------------------------------------------------------- sync vs async under latency

PAIRS = (("s3fs", "s3fs-async"), ("obstore", "obstore-async"))


def latency_summary(cases: pd.DataFrame) -> pd.DataFrame:
    """summarize() of the tools that have a sync and an async form, every network."""
    tools = {t for pair in PAIRS for t in pair}
    s = summarize(cases)
    return s[s["tool"].isin(tools) & (s["good"] > 0)]


def latency_table(cases: pd.DataFrame, direction: str) -> pd.DataFrame:
    """MB/s, rows = network · test · tool, columns = concurrency (only networks with a sweep)."""
    s = latency_summary(cases)
    s = s[s["direction"] == direction]
    swept = s.groupby(["network", "test"])["concurrency"].nunique()
    keep = [k for k, n in swept.items() if n > 1 or k[0] != LOOPBACK]  # a one-file row has one level
    s = s[s.set_index(["network", "test"]).index.isin(keep)]
    if s.empty:
        return pd.DataFrame()
    s = s.assign(row=s["network"] + " · " + s["test"] + " · " + s["tool"], cell=[f"{v:.1f}" for v in s["mb-per-s"]])
    table = s.pivot(index="row", columns="concurrency", values="cell").fillna("")
    table = table.reindex(sorted(table.index), columns=sorted(table.columns))
    table.columns = [f"{c} in flight" for c in table.columns]
    table.index.name = "Network · test · tool (MB/s)"
    return table


@dataclass
class AsyncGain:
    """Async over sync throughput for one library, network, direction, test and concurrency."""

    network: str
    direction: str
    library: str
    test: str
    concurrency: int
    ratio: float  # async MB/s / sync MB/s


def async_gain_table(cases: pd.DataFrame) -> pd.DataFrame:
    """async_gains as a table, one row per cell (empty when no pair was swept)."""
    return pd.DataFrame([asdict(g) for g in async_gains(cases)], columns=[f.name for f in fields(AsyncGain)])


def async_gains(cases: pd.DataFrame) -> list[AsyncGain]:
    s = latency_summary(cases)
    out = []
    for (net, direction, test, conc), g in s.groupby(["network", "direction", "test", "concurrency"]):
        by = g.set_index("tool")["mb-per-s"]
        for sync, asy in PAIRS:
            if sync in by and asy in by and by[sync] > 0:
                out.append(AsyncGain(net, direction, sync, test, int(conc), float(by[asy] / by[sync])))
    return out


def async_finding(cases: pd.DataFrame, pays: float = 1.10) -> str:
    """One sentence: per network, the lowest concurrency at which an async form moves ≥ `pays`×
    its sync form's MB/s, and the largest such gain; or that it never does."""
    gains = async_gains(cases)
    if not gains:
        return "sync vs async: not measured in this run."
    parts = []
    for net in sorted({g.network for g in gains}, key=lambda n: (n != LOOPBACK, n)):
        mine = [g for g in gains if g.network == net]
        paying = [g for g in mine if g.ratio >= pays]
        top = max(mine, key=lambda g: g.ratio)
        if not paying:
            parts.append(
                f"on {net} async never pays ≥ {pays:.2f}× (best {top.ratio:.2f}×, {top.library} "
                f"{top.direction} {top.test} at {top.concurrency})"
            )
            continue
        first = min(g.concurrency for g in paying)
        at_first = max((g for g in paying if g.concurrency == first), key=lambda g: g.ratio)
        parts.append(
            f"on {net} async pays from {first} in flight ({at_first.library} {at_first.direction} "
            f"{at_first.test} {at_first.ratio:.2f}×; best {top.ratio:.2f}×, {top.library} {top.direction} "
            f"{top.test} at {top.concurrency}; {len(paying)} of {len(mine)} cells ≥ {pays:.2f}×)"
        )
    return "sync vs async (async MB/s ÷ sync MB/s, same library): " + "; ".join(parts) + "."


def latency_text(cases: pd.DataFrame) -> str:
    parts = []
    for direction in ("upload", "download"):
        t = latency_table(cases, direction)
        if not t.empty:
            parts.append(
                f"\n{direction.capitalize()} sync vs async sweep (MB/s, median of verified trials)\n{markdown(t)}"
            )
    parts.append("\n" + async_finding(cases))
    return "\n".join(parts)


# ---------------------------------------------------------------- the answer, first on the page


@dataclass(frozen=True)
class Leader:
    """The fastest tool on one row of the main matrix, and the tools its interval cannot tell apart."""

    direction: str
    test: str
    concurrency: int
    tool: str
    seconds: float
    tied: tuple[str, ...]  # intervals overlapping the leader's
    size: int = 0  # bytes per file, for ordering rows


def leaders(cases: pd.DataFrame) -> list[Leader]:
    """Per row of the loopback matrix, the tool with the smallest median time among those that
    write files (raw-get, the in-memory ceiling, is not a contender), with its ties."""
    return _leaders(summarize(loopback(cases)))


def _leaders(s: pd.DataFrame) -> list[Leader]:
    """leaders of a loopback summary already made."""
    s = s[(s["good"] > 0) & (s["tool"] != BASELINE)]
    out = []
    for (direction, test, conc), g in s.groupby(["direction", "test", "concurrency"], sort=False):
        g = g.sort_values("seconds")
        top = g.iloc[0]
        tied = tuple(r["tool"] for _, r in g.iloc[1:].iterrows() if _overlap(top, r))
        out.append(Leader(direction, test, int(conc), top["tool"], float(top["seconds"]), tied, int(top["file-size"])))
    order = {"upload": 0, "download": 1}
    return sorted(out, key=lambda r: (order.get(r.direction, 2), r.size, r.concurrency))


@dataclass(frozen=True)
class AsyncVerdict:
    """How one library's async form compares with its blocking form over every swept cell."""

    library: str
    cells: int
    median: float  # async MB/s ÷ sync MB/s, median over cells
    low: float
    high: float
    pays: bool  # the median cell gains at least the stated factor


def async_verdicts(cases: pd.DataFrame, pays: float = 1.10) -> list[AsyncVerdict]:
    """Per library, over every network, direction, file size and number in flight."""
    gains = async_gain_table(cases)
    if gains.empty:
        return []
    out = []
    for lib, g in gains.groupby("library", sort=True):
        r = g["ratio"]
        out.append(
            AsyncVerdict(str(lib), len(r), float(r.median()), float(r.min()), float(r.max()), r.median() >= pays)
        )
    return out


def _cpu_differences(summary: pd.DataFrame, checks: list[StageCheck], cores: Cores | None = None) -> list[str]:
    """For each check with both tools' CPU counted: stage's CPU minus the fastest other tool's, on
    this side and on the server's, and (with the run's `cores`) what the cores' load makes of
    the ratio, in a phrase."""
    out = []
    for c in checks:
        pair = _pair(summary, c)
        if pair is None:
            continue
        me, best = pair
        client = float(me["client-cpu-s"] - best["client-cpu-s"])
        server = float(me["server-cpu-s"] - best["server-cpu-s"])
        if np.isnan(client):
            continue
        where = f"{client:+.3f} s here" + ("" if np.isnan(server) else f", {server:+.3f} s on the server")
        cr = None if cores is None else reading(_spent(me), _spent(best), cores)
        if cr is not None:
            where += f" ({cr.phrase()})"
        out.append(f"{c.direction} {c.test} at {c.concurrency} against {c.best_tool}: {where}")
    return out


def answer(cases: pd.DataFrame, threshold: float = THRESHOLD, cores: Cores | None = None) -> str:
    """The report's first section, in markdown: the fastest tool per row with its ties, whether
    `shotbench stage` met its threshold (and, with the run's `cores`, what the cores' load
    makes of a miss), and whether async pays."""
    summary = summarize(loopback(cases))  # one bootstrap per cell, shared by the rows and the checks
    rows = _leaders(summary)
    if not rows:
        return "No tool finished a case in this run; see the failures at the end."
    checks = {(c.direction, c.test, c.concurrency): c for c in _stage_checks(summary, threshold)}
    lines = [
        "| direction | row | in flight | fastest (median) | as fast, within the intervals "
        "| shotbench ÷ fastest other (its interval against the threshold: within, slower or undecided) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        c = checks.get((r.direction, r.test, r.concurrency))
        mine = f"{c.ratio:.2f}× ({c.verdict})" if c is not None and c.ratio is not None else "–"
        lines.append(
            f"| {r.direction} | {r.test} | {r.concurrency} | **{r.tool}** {r.seconds:.2f} s | "
            f"{', '.join(r.tied) or 'none'} | {mine} |"
        )
    parts = ["\n".join(lines)]
    if checks:
        passed = [c for c in checks.values() if c.passed]
        missed = sorted((c for c in checks.values() if not c.passed), key=lambda c: c.ratio or np.inf)
        text = (
            f"**`shotbench stage` and its download** are within {threshold:.2f}× of the fastest other tool "
            f"on {len(passed)} of {len(checks)} rows"
        )
        misses = [f"{c.direction} {c.test} at {c.concurrency} ({c.ratio:.2f}×, {c.verdict})" for c in missed if c.ratio]
        if misses:
            text += f"; not on {'; '.join(misses)}"
        told = Counter(c.verdict for c in checks.values())
        text += (
            f". The trials put the ratio's {int(stats.LEVEL * 100)} % interval within {threshold:.2f}× on "
            f"{told[WITHIN]} rows, above it on {told[SLOWER]}, and across it (undecided) on {told[UNDECIDED]}"
        )
        parts.append(text + ".")
        spent = _cpu_differences(summary, missed, cores)
        if spent:
            full = f"{FULL * 100:.0f} % busy"
            if cores is not None and cores.server:
                how = f"the server ran on cores of its own, as S3 does). Where one side's cores were at least {full}, time follows the CPU that side spends"
            else:
                how = f"on one machine the server's CPU is on the clock too; against S3 it is S3's). Where the cores were at least {full}, time follows the CPU both sides spend"
            parts.append(
                f"**Where the misses' time went**, as CPU used while timed, stage's minus the fastest other tool's ({how}:\n\n"
                + "\n".join(f"- {line}." for line in spent)
            )
    same = _stage_checks(summary, threshold, SAME_CHECK)
    ratios = [c.ratio for c in same if c.ratio is not None]
    if ratios:
        parts.append(
            f"**Against the same check** ({', '.join(SAME_CHECK)}: {SAME_CHECK_HOW}, as `stage` does), "
            f"stage takes {min(ratios):.2f}–{max(ratios):.2f}× its time, "
            f"within {threshold:.2f}× on {sum(c.passed for c in same)} of {len(same)} rows"
            + (": what keeps them from the fastest tool is that check." if all(c.passed for c in same) else ".")
        )
    verdicts = async_verdicts(cases)
    if verdicts:
        said = [
            f"for **{v.library}** it {'pays' if v.pays else 'does not pay'}: its async form moves a median "
            f"{v.median:.2f}× what its blocking form moves ({v.low:.2f}–{v.high:.2f}× over {v.cells} cells)"
            for v in verdicts
        ]
        parts.append("**Sync or async:** " + "; ".join(said) + ".")
    return "\n\n".join(parts)

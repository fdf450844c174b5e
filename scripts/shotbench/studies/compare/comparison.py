"""The statistics of `shotbench compare A B`: did B get slower than A, case by case (in the spirit of `asv compare`).

A and B are two run folders (matching cases: backend, mode, workers, page buffer; each side may be
several runs, comma-separated, pooled: made in turn, A, B, A, B, …, a busy machine's drift falls
on both sides alike), or two backends of one run (`--run DIR`; matching: mode, workers, page buffer). Tasks are the unit: every task
row's read time of every trial is a sample (in `signals` mode a row per worker and signal), not
one runtime per trial.
Per case: median task time ratio B ÷ A with a bootstrap 95 % interval (BCa; where a side pools
several runs, a percentile interval that resamples the runs, then their tasks:
stats.clustered_ratio_interval) and a two-sided
Mann-Whitney p-value, adjusted over the cases (Holm, or Benjamini-Hochberg with
`--correction fdr`); stats.py computes all three. A case is SLOWER when its ratio is at least
`--threshold` (default 1.10), its interval lies above 1 and its adjusted p is below 0.05.
`--limit-ratio K` fails cases of B slower than K × the raw-GET time of the same bytes.

Each case also gets the decision table's verdict (slower, faster, equivalent within the margin,
undecided: stats.verdict_of). Two backends of one run are paired by round, as the decision table
pairs them (stats.paired_ratios over the per-trial runtime ratios, the spread pooled per mode and
workers); two sets of runs share no round, so their verdict reads the task-time bootstrap
95 % interval, for slower or faster and for equivalence alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from shotbench import stats
from shotbench.analyse import analysis, decision
from shotbench.analyse.gate import ALPHA, THRESHOLD
from shotbench.errors import UserError

CASE_KEYS = ["backend", "obj-type", "num-workers", "pb-size"]
TASK_TIME = "open+read-data-time"
RUN = "run"  # the run folder a task came from: a side pooled from several runs is resampled run by run
COLUMNS = [
    "case",
    "unit",
    "n-a",
    "n-b",
    "median-a",
    "median-b",
    "ratio",
    "ci-low",
    "ci-high",
    "p-value",
    "p-adjusted",
    "runtime-ratio",
    "copy-baseline",
    "vs-copy",
    "slower",
    "over-limit",
    "verdict",
]


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its usable cases (trial runtimes, copy baseline) and their tasks."""

    cases: pd.DataFrame
    tasks: pd.DataFrame  # one row per task of a usable case: the case keys, TASK_TIME and (optional) RUN

    def where(self, backend: str) -> Side:
        return Side(self.cases[self.cases["backend"] == backend], self.tasks[self.tasks["backend"] == backend])


def load(path: Path) -> Side:
    ds = analysis.load([f"{path.name}={path}"])
    c = decision.usable_cases(ds.cases).copy()
    c["total-runtime"] = pd.to_numeric(c["total-runtime"], errors="coerce")
    raw = (
        pd.to_numeric(c["raw-get-runtime"], errors="coerce")
        if "raw-get-runtime" in c
        else pd.Series(np.nan, index=c.index)
    )
    by_backend = c[c["backend"] == analysis.RAW_GET].groupby(["obj-type", "num-workers"])["total-runtime"].median()
    fallback = pd.Series(
        by_backend.reindex(pd.MultiIndex.from_frame(c[["obj-type", "num-workers"]])).to_numpy(), index=c.index
    )
    c["copy"] = raw.fillna(fallback)
    w = ds.workers
    if "status" in w.columns:  # a failed task's time is not a read time
        w = w[w["status"].fillna("ok").replace("", "ok") == "ok"]
    tasks = w[CASE_KEYS + [TASK_TIME]].copy()
    tasks[TASK_TIME] = pd.to_numeric(tasks[TASK_TIME], errors="coerce")
    tasks[RUN] = path.name
    return Side(c, tasks.dropna(subset=[TASK_TIME]))


def _name(key: tuple, keys: list[str]) -> str:
    parts = dict(zip(keys, key))
    w = int(parts["num-workers"])
    head = f"{parts['backend']} " if "backend" in parts else ""
    return f"{head}{parts['obj-type']} w{w} pb {analysis.pb_label(parts['pb-size'])}"


def _key(key: object) -> tuple:
    return key if isinstance(key, tuple) else (key,)


def compare(
    a: Side,
    b: Side,
    keys: list[str],
    threshold: float | None = THRESHOLD,
    limit: float | None = None,
    correction: str = "holm",
    n_boot: int = stats.RESAMPLES,
    seed: int = stats.SEED,
    paired: bool = False,
    margin: float = stats.MARGIN,
) -> pd.DataFrame:
    """One row per case both sides ran; `slower` and `over-limit` say which fail the gates, `verdict`
    what the decision table would say of B against A (`paired`: the two were measured in the same
    rounds, so per-trial runtime ratios are paired).

    The samples are task read times where both sides have them (`unit` "task"), else trial runtimes."""
    ca = {_key(k): g for k, g in a.cases.groupby(keys, sort=False)}
    ta, tb = _by_run(a.tasks, keys), _by_run(b.tasks, keys)
    rows = []
    per_round: list[np.ndarray] = []
    groups: list[tuple[str, int]] = []
    for key, gb in b.cases.groupby(keys, sort=False):
        key = _key(key)
        if key not in ca:
            continue
        runs_a, runs_b = ca[key]["total-runtime"].to_numpy(float), gb["total-runtime"].to_numpy(float)
        if ta.get(key) and tb.get(key):
            unit, xa, xb = "task", np.concatenate(ta[key]), np.concatenate(tb[key])
            ci = stats.clustered_ratio_interval(tb[key], ta[key], n_resamples=n_boot, seed=seed)
        else:
            unit, xa, xb = "trial", runs_a, runs_b
            ci = stats.ratio_interval(xb, xa, n_resamples=n_boot, seed=seed)
        if paired:
            per_round.append(_per_round(gb, ca[key]))
            parts = dict(zip(keys, key))
            groups.append((str(parts["obj-type"]), int(parts["num-workers"])))
            unpaired = ""
        else:
            unpaired = stats.verdict_of(ci, ci, margin) if ci.known else stats.UNDECIDED
        copy = float(gb["copy"].median()) if gb["copy"].notna().any() else float("nan")
        vs_copy = float(np.median(runs_b)) / copy if copy > 0 else float("nan")
        rows.append(
            {
                "case": _name(key, keys),
                "unit": unit,
                "n-a": len(xa),
                "n-b": len(xb),
                "median-a": float(np.median(xa)),
                "median-b": float(np.median(xb)),
                "ratio": ci.estimate,
                "ci-low": ci.low,
                "ci-high": ci.high,
                "p-value": stats.mann_whitney(xb, xa).p,
                "runtime-ratio": float(np.median(runs_b) / np.median(runs_a)),
                "copy-baseline": copy,
                "vs-copy": vs_copy,
                "over-limit": bool(limit is not None and vs_copy > limit),
                "verdict": unpaired,
            }
        )
    if not rows:
        raise UserError(
            "the two sides share no case (backend, mode, workers, page buffer); compare runs of the same matrix."
        )
    table = pd.DataFrame(rows)
    if paired:
        table["verdict"] = [p.verdict for p in stats.paired_ratios(per_round, groups, margin=margin)]
    table["p-adjusted"] = stats.ADJUSTMENTS[correction](table["p-value"].to_numpy(float))
    table["slower"] = [
        bool(threshold is not None and r >= threshold and lo > 1 and p < ALPHA)
        for r, lo, p in table[["ratio", "ci-low", "p-adjusted"]].to_numpy()
    ]
    return table[COLUMNS]


def _by_run(tasks: pd.DataFrame, keys: list[str]) -> dict[tuple, list[np.ndarray]]:
    """Each case's task times, one array per run it came from (one array when runs are not told)."""
    out: dict[tuple, list[np.ndarray]] = {}
    for k, g in tasks.groupby(keys, sort=False):
        runs = [r for _, r in g.groupby(RUN, sort=False, dropna=False)] if RUN in g.columns else [g]
        out[_key(k)] = [a for a in (r[TASK_TIME].to_numpy(float) for r in runs) if len(a)]
    return out


def _per_round(b: pd.DataFrame, a: pd.DataFrame) -> np.ndarray:
    """B's case runtime ÷ A's in each trial (interleaved round) both measured."""
    x = b.groupby("trial")["total-runtime"].median()
    y = a.groupby("trial")["total-runtime"].median()
    both = pd.concat([x.rename("x"), y.rename("y")], axis=1, join="inner").dropna()
    both = both[both["y"] > 0]
    return (both["x"] / both["y"]).to_numpy(float)


def flags(table: pd.DataFrame) -> list[str]:
    """SLOWER / OVER LIMIT / "" per row: what the text and the page show."""
    return ["SLOWER" if s else "OVER LIMIT" if o else "" for s, o in table[["slower", "over-limit"]].to_numpy()]


def pooled(paths: list[Path]) -> Side:
    """Several runs of one side as one: their cases and tasks pooled (runs made in turn with the
    other side's, so drift of the machine falls on both sides alike)."""
    sides = [load(p) for p in paths]
    return Side(
        pd.concat([s.cases for s in sides], ignore_index=True), pd.concat([s.tasks for s in sides], ignore_index=True)
    )

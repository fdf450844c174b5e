"""The statistics of `shotbench repeat`: does a run's answer repeat? The same matrix N times back to back.

Per run and case (mode, workers, page buffer, backend) the ratio is the backend's case runtime,
the number the report ranks on (`--unit task`: its median task read time), ÷ the baseline
backend's (default `local`) in the same trial, averaged geometrically over the run's trials, with
the 95 % prediction interval of stats.paired_ratios (the decision table's one paired statistic). Across the runs it reports how far each
case's ratio moves (largest ÷ smallest − 1) and how often one run's stated interval covers another
run's ratio: an interval that is honest about the noise covers the others' ratios about 95 % of
the time. `--runs A B C` scores runs already made instead of making new ones.

Whether the answer repeats is asked of the decision table of each run: per mode the answer is the
leader plus its equivalents at the answer's worker count (decision.answer_records); `answer_agree`
is the share of modes whose answer is identical in every run, `decided_share` the share of pairs
in the answer's group (leader against each other configuration) whose verdict is slower or
equivalent, over every run.

`--baseline others` divides each case by the geometric mean of every other configuration of the
same mode, workers and trial instead of by one backend: one baseline brings its own noise into
every ratio (local's 0.04 s cases move 12-26 % between runs), the mean of the others much less
of it, and the case itself is left out so it cannot pull its own baseline along.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from shotbench import stats
from shotbench.analyse import analysis, decision
from shotbench.errors import UserError

TASK_TIME = "open+read-data-time"
KEYS = ["obj-type", "num-workers", "pb-size", "backend"]
ROUND = ["obj-type", "num-workers", "trial"]  # the cases measured side by side
OTHERS = "others"  # the baseline that is every other configuration of the round


@dataclass(frozen=True)
class Summary:
    """The figures the README quotes: how far ratios move between runs, how often intervals cover."""

    runs: int
    cases: int
    move_median: float  # the median case's largest ÷ smallest ratio − 1 (0.05: 5 %)
    move_p90: float
    coverage: float  # share of (case, run i, run j ≠ i) where run i's interval holds run j's ratio
    tight_share: float  # share of (case, run) intervals within ±5 %
    fastest_agree: float  # share of (mode, workers) whose fastest backend is the same in every run
    answer_agree: float = float("nan")  # share of modes whose answer (leader + equivalents, workers) repeats
    decided_share: float = float("nan")  # share of the answer groups' pairs decided (slower or equivalent)


@dataclass(frozen=True)
class RunAnswer:
    """One run's answer for one mode, as `answer_agree` compares it: who, with how many workers."""

    run: str
    mode: str
    workers: int
    names: tuple[str, ...]  # the leader and its equivalents, sorted: the leader may swap with one
    decided: int
    pairs: int


def run_answers(run: Path) -> list[RunAnswer]:
    """The answer per mode of one run, from its decision table (its own margin)."""
    ds = analysis.load([f"{run.name}={run}"])
    table = decision.decision_table(ds)
    return [
        RunAnswer(run.name, a.mode, a.workers, tuple(sorted(a.names)), a.decided, a.pairs)
        for a in decision.answer_records(table, margin=decision.margin_of(ds))
    ]


def run_seconds(run: Path) -> float | None:
    """A run's wall time, started to finished in its run.json (None while unfinished or unreadable):
    the default run's budget is checked against it."""
    import json
    from datetime import datetime

    try:
        meta = json.loads((run / "run.json").read_text())
        start, end = datetime.fromisoformat(meta["started"]), datetime.fromisoformat(meta["finished"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (end - start).total_seconds()


def agreement(answers: list[RunAnswer]) -> tuple[float, float]:
    """(answer_agree, decided_share) over runs' answers: modes every run answered identically ÷
    modes any run answered; decided pairs ÷ pairs, over every run and mode (NaN: no pairs)."""
    runs = {a.run for a in answers}
    by_mode: dict[str, set[tuple[int, tuple[str, ...]]]] = {}
    seen: dict[str, int] = {}
    for a in answers:
        by_mode.setdefault(a.mode, set()).add((a.workers, a.names))
        seen[a.mode] = seen.get(a.mode, 0) + 1
    agree = [len(v) == 1 and seen[m] == len(runs) for m, v in by_mode.items()]
    pairs = sum(a.pairs for a in answers)
    return (
        float(np.mean(agree)) if agree else float("nan"),
        sum(a.decided for a in answers) / pairs if pairs else float("nan"),
    )


def check_first_trials(n: int | None) -> None:
    if n is not None and n < 2:
        raise UserError("--first-trials must be at least 2: the interval needs the spread between two trials.")


def case_times(run: Path, unit: str = "case", first_trials: int | None = None) -> pd.Series:
    """A run's times per (mode, workers, page buffer, backend, trial), read once: its median task
    read time (`task`) or its case runtime (`case`), ok cases only. `first_trials` keeps the first
    rounds only, to score a run as if it had stopped there: what fewer trials would have said."""
    check_first_trials(first_trials)
    ds = analysis.load([f"{run.name}={run}"])
    w = (
        ds.workers
        if unit == "task"
        else decision.usable_cases(ds.cases).assign(**{TASK_TIME: lambda c: c["total-runtime"]})
    )
    if "status" in w.columns:
        w = w[w["status"].fillna("ok").replace("", "ok") == "ok"]
    ok_ids = set(decision.usable_cases(ds.cases).get("case-id", pd.Series(dtype=str)))
    if "case-id" in w.columns and ok_ids:
        w = w[w["case-id"].isin(ok_ids)]
    w = w.assign(t=pd.to_numeric(w[TASK_TIME], errors="coerce")).dropna(subset=["t"])
    if first_trials is not None:
        w = w[pd.to_numeric(w["trial"], errors="coerce") <= first_trials]
    return w.groupby([*KEYS, "trial"], sort=True)["t"].median().rename(run.name)


def ratios(run: Path, baseline: str, unit: str = "case", first_trials: int | None = None) -> pd.DataFrame:
    """One row per case of a run: backend ÷ baseline, with the interval that should hold the next
    run's ratio (`versus` on the run's `case_times`)."""
    return versus(case_times(run, unit, first_trials), baseline)


def versus(per: pd.Series, baseline: str) -> pd.DataFrame:
    """One row per case of the run whose `case_times` these are: backend ÷ baseline, with the
    interval that should hold the next run's ratio (stats.paired_ratios).

    Per trial the ratio is the case's time ÷ the baseline's in the same trial, an interleaved
    round (with `others`: ÷ the geometric mean of the round's other configurations); the case's
    ratio is the geometric mean over its trials. The spread between trials is pooled over the cases
    of one mode (shots, signals), which differ in how much they move."""
    name = str(per.name)
    if baseline != OTHERS and baseline not in set(per.index.get_level_values("backend")):
        raise UserError(
            f"run {name} has no {baseline!r} backend to compare with; pass --baseline with one it ran, or {OTHERS}."
        )
    cases, per_trial = _versus_others(per) if baseline == OTHERS else _versus_backend(per, baseline)
    intervals = [p.next_run for p in stats.paired_ratios(per_trial, [k[:2] for k in cases])]
    rows = [
        {
            "run": name,
            **dict(zip(KEYS, key)),
            "ratio": ci.estimate,
            "ci-low": ci.low,
            "ci-high": ci.high,
            "half-width": ci.half_width,
            "trials": len(r),
        }
        for key, r, ci in zip(cases, per_trial, intervals)
    ]
    return pd.DataFrame(rows)


def _versus_backend(per: pd.Series, baseline: str) -> tuple[list[tuple[Any, ...]], list[np.ndarray]]:
    """Per case, its time ÷ the baseline backend's in the same round (the same page buffer, or the
    baseline's fastest when the case's backend has none)."""
    base = per.xs(baseline, level="backend")
    cases, per_trial = [], []
    for key, g in per.drop(baseline, level="backend").groupby(level=KEYS, sort=True):
        trials = g.droplevel(KEYS)
        ref = base.xs(key[:3], drop_level=True) if key[:3] in base.index.droplevel("trial") else None
        if ref is None:  # a backend without page buffers: the baseline's fastest page buffer
            near = base[base.index.droplevel(["pb-size", "trial"]).isin([key[:2]])]
            ref = near.groupby(level="trial").min() if len(near) else None
        if ref is None:
            continue
        both = pd.concat([trials.rename("x"), ref.rename("y")], axis=1, join="inner")
        cases.append(key)
        per_trial.append((both["x"] / both["y"]).to_numpy(float))
    return cases, per_trial


def _versus_others(per: pd.Series) -> tuple[list[tuple[Any, ...]], list[np.ndarray]]:
    """Per case, its time ÷ the geometric mean of the other configurations' in the same round."""
    logs = np.log(per)
    rounds = logs.groupby(level=ROUND)
    n = rounds.transform("count")
    others = (rounds.transform("sum") - logs) / (n - 1)
    ratio = np.exp(logs - others)[n > 1]
    cases, per_trial = [], []
    for key, g in ratio.groupby(level=KEYS, sort=True):
        cases.append(key)
        per_trial.append(g.to_numpy(float))
    return cases, per_trial


def _fastest(t: pd.DataFrame) -> pd.Series:
    """Per run, mode and workers: the backend with the smallest ratio (the same baseline throughout),
    among those the answer ranks (local disk and raw GETs are its limits, not candidates)."""
    t = t[~t["backend"].isin(decision.REFERENCES)]
    best = t.loc[t.groupby(["run", "obj-type", "num-workers"])["ratio"].idxmin()]
    return best.set_index(["run", "obj-type", "num-workers"])["backend"]


def score(table: pd.DataFrame, answers: list[RunAnswer] | None = None) -> tuple[pd.DataFrame, Summary]:
    """Per case across runs: the ratios, how far they move, how often intervals cover the others;
    with the runs' `answers`, whether the answer repeated (`agreement`)."""
    runs = list(dict.fromkeys(table["run"]))
    per_case = []
    for key, g in table.groupby(KEYS, sort=True):
        g = g.set_index("run").reindex(runs)
        r = g["ratio"].to_numpy(float)
        if np.isnan(r).any():
            continue  # a case not every run measured
        pairs = [(i, j) for i, j in permutations(range(len(runs)), 2)]
        covered = [bool(g["ci-low"].iloc[i] <= r[j] <= g["ci-high"].iloc[i]) for i, j in pairs]
        per_case.append(
            {
                **dict(zip(KEYS, key)),
                **{f"ratio {n}": v for n, v in zip(runs, r)},
                "move": float(r.max() / r.min() - 1),
                "covered": sum(covered),
                "pairs": len(pairs),
                "tight": int((g["half-width"] <= 0.05).sum()),
            }
        )
    cases = pd.DataFrame(per_case)
    if cases.empty:
        raise UserError("the runs share no case; repeat the same matrix (same backends, modes, workers, page buffers).")
    fastest = _fastest(table).unstack("run") if len(runs) > 1 else None
    agree = float((fastest.nunique(axis=1) == 1).mean()) if fastest is not None else 1.0
    answer_agree, decided_share = agreement(answers) if answers else (float("nan"), float("nan"))
    summary = Summary(
        runs=len(runs),
        cases=len(cases),
        move_median=float(cases["move"].median()),
        move_p90=float(cases["move"].quantile(0.9)),
        coverage=float(cases["covered"].sum() / cases["pairs"].sum()),
        tight_share=float(cases["tight"].sum() / (len(cases) * len(runs))),
        fastest_agree=agree,
        answer_agree=answer_agree,
        decided_share=decided_share,
    )
    return cases, summary


def report(cases: pd.DataFrame, s: Summary, baseline: str, unit: str = "case") -> str:
    shown = cases.assign(
        **{
            "pb-size": cases["pb-size"].map(analysis.pb_label),
            "move": cases["move"].map(lambda v: f"{v:.1%}"),
            "covered": [f"{c}/{p}" for c, p in zip(cases["covered"], cases["pairs"])],
        }
    )
    what = "median task read time" if unit == "task" else "case runtime"
    versus = (
        "the geometric mean of the other configurations' (same mode and workers)"
        if baseline == OTHERS
        else f"{baseline}'s"
    )
    lines = [
        f"Ratio = {what} ÷ {versus} in the same trial, geometric mean over a run's trials; interval: "
        "95 % prediction interval for the next run (the spread between trials pooled over each mode's cases)",
        shown.drop(columns=["pairs", "tight"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"),
        "",
        f"{s.runs} runs, {s.cases} cases: {_moves(s, int(cases['pairs'].sum()))}; {s.tight_share:.0%} of "
        "intervals are within ±5 %; the fastest backend per mode and worker count is the same in every run "
        f"for {s.fastest_agree:.0%} of them.",
    ]
    if s.answer_agree == s.answer_agree:  # not NaN: the runs' answers were compared
        lines.append(
            f"The answer (leader and its equivalents per mode) is the same in every run for {s.answer_agree:.0%} "
            f"of modes; {s.decided_share:.0%} of the pairs in the answers' groups were decided (slower or "
            "equivalent)."
        )
    return "\n".join(lines)


def _moves(s: Summary, pairs: int | None = None) -> str:
    """How far the median case's ratio moves between runs and how often one run's interval covers."""
    of = f"of {pairs} pairs" if pairs is not None else "of pairs"
    return (
        f"the median case's ratio moves {s.move_median:.1%} between runs (p90 {s.move_p90:.1%}); "
        f"a run's 95 % interval covers another run's ratio in {s.coverage:.0%} {of}"
    )


def summary_line(s: Summary, against: str) -> str:
    """One sentence for a second baseline under the report: `_moves` against `against`."""
    return f"Against {against}: {_moves(s)}."

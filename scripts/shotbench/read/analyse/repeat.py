"""`shotbench repeat`: does a run's answer repeat? The same matrix N times back to back.

Per run and case (mode, workers, page buffer, backend) the ratio is the backend's median task
read time ÷ the baseline backend's (default `local`) in the same run, with its BCa 95 % interval
(read/analyse/stats.py, every task of every trial a sample; `--unit case`: each trial's case runtime). Across the runs it reports how far each
case's ratio moves (largest ÷ smallest − 1) and how often one run's stated interval covers another
run's ratio: an interval that is honest about the noise covers the others' ratios about 95 % of
the time. `--runs A B C` scores runs already made instead of making new ones.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import asdict, dataclass
from itertools import permutations
from pathlib import Path

import numpy as np
import pandas as pd

from shotbench.errors import UserError
from shotbench.read.analyse import analysis, decision, stats
from shotbench.runs import kind_of

TASK_TIME = "open+read-data-time"
KEYS = ["obj-type", "num-workers", "pb-size", "backend"]


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


def ratios(run: Path, baseline: str, unit: str = "task") -> pd.DataFrame:
    """One row per case of a run: backend ÷ baseline median time with its 95 % interval; the
    samples are task read times (`task`) or the trials' case runtimes (`case`)."""
    ds = analysis.load([f"{run.name}={run}"])
    w = ds.workers if unit == "task" else decision.usable_cases(ds.cases).assign(**{TASK_TIME: lambda c: c["total-runtime"]})
    if "status" in w.columns:
        w = w[w["status"].fillna("ok").replace("", "ok") == "ok"]
    ok_ids = set(decision.usable_cases(ds.cases).get("case-id", pd.Series(dtype=str)))
    if "case-id" in w.columns and ok_ids:
        w = w[w["case-id"].isin(ok_ids)]
    w = w.assign(t=pd.to_numeric(w[TASK_TIME], errors="coerce")).dropna(subset=["t"])
    if baseline not in set(w["backend"]):
        raise UserError(f"run {run.name} has no {baseline!r} backend to compare with; pass --baseline with one it ran.")
    base = {k: g["t"].to_numpy(float) for k, g in w[w["backend"] == baseline].groupby(KEYS[:3])}
    rows = []
    for key, g in w[w["backend"] != baseline].groupby(KEYS, sort=True):
        ref = base.get(key[:3])
        if ref is None:
            ref = next((v for k, v in base.items() if k[:2] == key[:2]), None)  # a backend without page buffers
        if ref is None:
            continue
        ci = stats.ratio_interval(g["t"].to_numpy(float), ref)
        rows.append({"run": run.name, **dict(zip(KEYS, key)), "ratio": ci.estimate, "ci-low": ci.low,
                     "ci-high": ci.high, "half-width": ci.half_width, "samples": len(g)})
    return pd.DataFrame(rows)


def _fastest(t: pd.DataFrame) -> pd.Series:
    """Per run, mode and workers: the backend with the smallest ratio (the same baseline throughout)."""
    best = t.loc[t.groupby(["run", "obj-type", "num-workers"])["ratio"].idxmin()]
    return best.set_index(["run", "obj-type", "num-workers"])["backend"]


def score(table: pd.DataFrame) -> tuple[pd.DataFrame, Summary]:
    """Per case across runs: the ratios, how far they move, how often intervals cover the others."""
    runs = list(dict.fromkeys(table["run"]))
    per_case = []
    for key, g in table.groupby(KEYS, sort=True):
        g = g.set_index("run").reindex(runs)
        r = g["ratio"].to_numpy(float)
        if np.isnan(r).any():
            continue  # a case not every run measured
        pairs = [(i, j) for i, j in permutations(range(len(runs)), 2)]
        covered = [bool(g["ci-low"].iloc[i] <= r[j] <= g["ci-high"].iloc[i]) for i, j in pairs]
        per_case.append({**dict(zip(KEYS, key)), **{f"ratio {n}": v for n, v in zip(runs, r)},
                         "move": float(r.max() / r.min() - 1), "covered": sum(covered), "pairs": len(pairs),
                         "tight": int((g["half-width"] <= 0.05).sum())})
    cases = pd.DataFrame(per_case)
    if cases.empty:
        raise UserError("the runs share no case; repeat the same matrix (same backends, modes, workers, page buffers).")
    fastest = _fastest(table).unstack("run") if len(runs) > 1 else None
    agree = float((fastest.nunique(axis=1) == 1).mean()) if fastest is not None else 1.0
    summary = Summary(
        runs=len(runs), cases=len(cases), move_median=float(cases["move"].median()),
        move_p90=float(cases["move"].quantile(0.9)), coverage=float(cases["covered"].sum() / cases["pairs"].sum()),
        tight_share=float(cases["tight"].sum() / (len(cases) * len(runs))), fastest_agree=agree)
    return cases, summary


def report(cases: pd.DataFrame, s: Summary, baseline: str, unit: str = "task") -> str:
    shown = cases.assign(**{"pb-size": cases["pb-size"].map(analysis.pb_label),
                            "move": cases["move"].map(lambda v: f"{v:.1%}"),
                            "covered": [f"{c}/{p}" for c, p in zip(cases["covered"], cases["pairs"])]})
    what = "task read time" if unit == "task" else "case runtime"
    over = "every task of every trial" if unit == "task" else "the trials"
    lines = [f"Ratio = median {what} ÷ {baseline}'s, per run (BCa 95 % interval over {over})",
             shown.drop(columns=["pairs", "tight"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"), "",
             f"{s.runs} runs, {s.cases} cases: the median case's ratio moves {s.move_median:.1%} between runs "
             f"(p90 {s.move_p90:.1%}); a run's 95 % interval covers another run's ratio in {s.coverage:.0%} of "
             f"{int(cases['pairs'].sum())} pairs; {s.tight_share:.0%} of intervals are within ±5 %; the fastest "
             f"backend per mode and worker count is the same in every run for {s.fastest_agree:.0%} of them."]
    return "\n".join(lines)


def _new_run(runs_dir: Path, before: set[Path]) -> Path:
    made = sorted(set(p for p in runs_dir.iterdir() if p.is_dir()) - before)
    if not made:
        raise UserError(f"a bench run made no run folder in {runs_dir}; see its output above.")
    return made[-1]


def cmd_repeat(args: argparse.Namespace) -> int:
    from shotbench.paths import reports_dir, runs_dir

    if args.runs:
        folders = [Path(p) for p in args.runs]
        bad = [p for p in folders if kind_of(p) != "read"]
        if bad:
            raise UserError(f"{bad[0]} is not a run folder; pass read runs such as data/runs/<run-id>.")
        if len(folders) < 2:
            raise UserError("repeatability needs at least two runs; pass two or more with --runs.")
    else:
        if args.times < 2:
            raise UserError("--times must be at least 2: repeatability compares runs with each other.")
        rest = [a for a in args.bench_args if a != "--"]
        where = Path(rest[rest.index("--runs-dir") + 1]) if "--runs-dir" in rest else runs_dir()
        where.mkdir(parents=True, exist_ok=True)
        folders = []
        for i in range(args.times):
            print(f"repeat: run {i + 1} of {args.times}: shotbench bench {' '.join(rest)}", flush=True)
            before = set(p for p in where.iterdir() if p.is_dir())
            done = subprocess.run([sys.executable, "-m", "shotbench.cli", "bench", *rest])
            if done.returncode != 0:
                raise UserError(f"run {i + 1} of {args.times} failed (exit {done.returncode}); the runs so far are in {where}.",
                                exit_code=done.returncode)
            folders.append(_new_run(where, before))
    table = pd.concat([ratios(f, args.baseline, args.unit) for f in folders], ignore_index=True)
    cases, summary = score(table)
    text = report(cases, summary, args.baseline, args.unit)
    out = Path(args.output) if args.output else reports_dir() / "repeat" / folders[-1].name
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "ratios.csv", index=False)
    cases.to_csv(out / "repeat.csv", index=False)
    (out / "repeat.json").write_text(json.dumps({"runs": [str(f) for f in folders], "baseline": args.baseline,
                                                 **asdict(summary)}, indent=2) + "\n")
    print(text)
    print(f"Wrote {out / 'repeat.csv'}, {out / 'ratios.csv'} and {out / 'repeat.json'}.")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "repeat", help="run the bench matrix N times back to back and say how far its ratios move",
        description="Runs `shotbench bench` with the given arguments N times (or scores --runs), then per case: each "
                    "backend ÷ baseline ratio per run, how far it moves between runs, and how often one run's "
                    "95 %% interval covers the other runs' ratios.",
    )
    p.add_argument("--times", type=int, default=3, metavar="N", help="runs to make (default 3)")
    p.add_argument("--baseline", default="local", help="the backend every ratio divides by (default local)")
    p.add_argument("--unit", choices=["task", "case"], default="task",
                   help="samples of a ratio: every task's read time (default) or each trial's case runtime")
    p.add_argument("--runs", nargs="+", metavar="RUN_DIR", help="score these runs instead of making new ones")
    p.add_argument("--output", metavar="DIR", help="where repeat.csv, ratios.csv and repeat.json go (default reports/repeat/<last run>/)")
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="after --: arguments for each `shotbench bench`")
    p.set_defaults(func=cmd_repeat)

"""`shotbench compare A B`: did B get slower than A, case by case (in the spirit of `asv compare`).

A and B are two run folders (matching cases: backend, mode, workers, page buffer; each side may be
several runs, comma-separated, pooled: made in turn, A, B, A, B, …, a busy machine's drift falls
on both sides alike), or two backends of one run (`--run DIR`; matching: mode, workers, page buffer). Tasks are the unit: every task
row's read time of every trial is a sample (in `signals` mode a row per worker and signal), not
one runtime per trial.
Per case: median task time ratio B ÷ A with a BCa bootstrap 95 % interval and a two-sided
Mann-Whitney p-value, adjusted over the cases (Holm, or Benjamini-Hochberg with
`--correction fdr`); read/analyse/stats.py computes all three. A case is SLOWER when its ratio is at least
`--threshold` (default 1.10), its interval lies above 1 and its adjusted p is below 0.05.
`--limit-ratio K` fails cases of B slower than K × the raw-GET time of the same bytes.
"""

from __future__ import annotations

import argparse
import html
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from shotbench.read.analyse import analysis, decision, stats
from shotbench.errors import UserError
from shotbench.runs import kind_of

ALPHA = 0.05
THRESHOLD = 1.10  # the regression a gate fails on: 10 % slower
CASE_KEYS = ["backend", "obj-type", "num-workers", "pb-size"]
TASK_TIME = "open+read-data-time"
COLUMNS = ["case", "unit", "n-a", "n-b", "median-a", "median-b", "ratio", "ci-low", "ci-high", "p-value", "p-adjusted",
           "runtime-ratio", "copy-baseline", "vs-copy", "slower", "over-limit"]


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its usable cases (trial runtimes, copy baseline) and their tasks."""

    cases: pd.DataFrame
    tasks: pd.DataFrame  # one row per task of a usable case: the case keys and TASK_TIME

    def where(self, backend: str) -> "Side":
        return Side(self.cases[self.cases["backend"] == backend], self.tasks[self.tasks["backend"] == backend])


def _load(path: Path) -> Side:
    ds = analysis.load([f"{path.name}={path}"])
    c = decision.usable_cases(ds.cases).copy()
    c["total-runtime"] = pd.to_numeric(c["total-runtime"], errors="coerce")
    raw = pd.to_numeric(c["raw-get-runtime"], errors="coerce") if "raw-get-runtime" in c else pd.Series(np.nan, index=c.index)
    by_backend = c[c["backend"] == analysis.RAW_GET].groupby(["obj-type", "num-workers"])["total-runtime"].median()
    fallback = pd.Series(by_backend.reindex(pd.MultiIndex.from_frame(c[["obj-type", "num-workers"]])).to_numpy(), index=c.index)
    c["copy"] = raw.fillna(fallback)
    w = ds.workers
    if "status" in w.columns:  # a failed task's time is not a read time
        w = w[w["status"].fillna("ok").replace("", "ok") == "ok"]
    tasks = w[CASE_KEYS + [TASK_TIME]].copy()
    tasks[TASK_TIME] = pd.to_numeric(tasks[TASK_TIME], errors="coerce")
    return Side(c, tasks.dropna(subset=[TASK_TIME]))


def _name(key: tuple, keys: list[str]) -> str:
    parts = dict(zip(keys, key))
    w = int(parts["num-workers"])
    head = f"{parts['backend']} " if "backend" in parts else ""
    return f"{head}{parts['obj-type']} w{w} pb {analysis.pb_label(parts['pb-size'])}"


def _key(key: object) -> tuple:
    return key if isinstance(key, tuple) else (key,)


def compare(a: Side, b: Side, keys: list[str], threshold: float | None = THRESHOLD, limit: float | None = None,
            correction: str = "holm", n_boot: int = stats.RESAMPLES, seed: int = stats.SEED) -> pd.DataFrame:
    """One row per case both sides ran; `slower` and `over-limit` say which fail the gates.

    The samples are task read times where both sides have them (`unit` "task"), else trial runtimes."""
    ca = {_key(k): g for k, g in a.cases.groupby(keys, sort=False)}
    ta = {_key(k): g[TASK_TIME].to_numpy(float) for k, g in a.tasks.groupby(keys, sort=False)}
    tb = {_key(k): g[TASK_TIME].to_numpy(float) for k, g in b.tasks.groupby(keys, sort=False)}
    rows = []
    for key, gb in b.cases.groupby(keys, sort=False):
        key = _key(key)
        if key not in ca:
            continue
        runs_a, runs_b = ca[key]["total-runtime"].to_numpy(float), gb["total-runtime"].to_numpy(float)
        if len(ta.get(key, ())) and len(tb.get(key, ())):
            unit, xa, xb = "task", ta[key], tb[key]
        else:
            unit, xa, xb = "trial", runs_a, runs_b
        ci = stats.ratio_interval(xb, xa, n_resamples=n_boot, seed=seed)
        copy = float(gb["copy"].median()) if gb["copy"].notna().any() else float("nan")
        vs_copy = float(np.median(runs_b)) / copy if copy > 0 else float("nan")
        rows.append({
            "case": _name(key, keys), "unit": unit, "n-a": len(xa), "n-b": len(xb), "median-a": float(np.median(xa)),
            "median-b": float(np.median(xb)), "ratio": ci.estimate, "ci-low": ci.low, "ci-high": ci.high,
            "p-value": stats.mann_whitney(xb, xa).p, "runtime-ratio": float(np.median(runs_b) / np.median(runs_a)),
            "copy-baseline": copy, "vs-copy": vs_copy, "over-limit": bool(limit is not None and vs_copy > limit),
        })
    if not rows:
        raise UserError("The two sides share no case (backend, mode, workers, page buffer); compare runs of the same matrix.")
    table = pd.DataFrame(rows)
    table["p-adjusted"] = stats.ADJUSTMENTS[correction](table["p-value"].to_numpy(float))
    table["slower"] = [bool(threshold is not None and r >= threshold and lo > 1 and p < ALPHA)
                       for r, lo, p in table[["ratio", "ci-low", "p-adjusted"]].to_numpy()]
    return table[COLUMNS]


def _flag(table: pd.DataFrame) -> list[str]:
    return ["SLOWER" if s else "OVER LIMIT" if o else "" for s, o in table[["slower", "over-limit"]].to_numpy()]


def _text(table: pd.DataFrame) -> str:
    t = table.assign(
        ratio=[f"{r:.3f} [{lo:.3f}, {hi:.3f}]" if not np.isnan(lo) else f"{r:.3f}" for r, lo, hi in table[["ratio", "ci-low", "ci-high"]].to_numpy()],
        **{"p-adjusted": table["p-adjusted"].map(lambda p: f"{p:.3g}"), "vs-copy": table["vs-copy"].map(lambda v: "—" if np.isnan(v) else f"{v:.2f}×"),
           "flag": _flag(table)},
    )
    return t[["case", "unit", "n-a", "n-b", "median-a", "median-b", "ratio", "p-adjusted", "vs-copy", "flag"]].to_string(
        index=False, float_format=lambda v: f"{v:.4g}")


def write_html(table: pd.DataFrame, title: str, path: Path, gates: str = "", correction: str = "holm") -> Path:
    """A small offline page: the table and one plot of the ratios with their CIs."""
    import holoviews as hv

    from shotbench.read.figures import plots
    from shotbench import display as figures

    setup = figures.setup().text
    df = table.assign(neg=(table["ratio"] - table["ci-low"]).fillna(0), pos=(table["ci-high"] - table["ratio"]).fillna(0))
    case = hv.Dimension("case", label="Case (backend, mode, workers, page buffer)")
    ratio = hv.Dimension("ratio", label="Median task time B ÷ A (>1: B slower)")
    fig = (hv.HLine(1).opts(color="grey") * hv.Scatter(df, case, [ratio, "p-adjusted"]).opts(size=8, color=plots.PALETTE[0], tools=["hover"])
           * hv.ErrorBars(df, case, ["ratio", "neg", "pos"]).opts(color=plots.PALETTE[0])).opts(
        hv.opts.Overlay(title="Median ratio per case, 95 % BCa bootstrap interval", xlabel=case.label, ylabel=ratio.label,
                        width=max(600, 60 * len(df)), height=420, xrotation=30, show_legend=False, show_grid=True))
    shown = table.assign(flag=_flag(table))
    body = shown.drop(columns=["slower", "over-limit"]).to_html(index=False, float_format=lambda v: f"{v:.4g}", border=0)
    how = "Holm" if correction == "holm" else "Benjamini-Hochberg"
    intro = (f"<p>{html.escape(title)}. Per case: median task read time of B ÷ A over every task of every trial "
             f"(<code>unit</code> says where only trial runtimes were there), BCa bootstrap 95 % interval, two-sided "
             f"Mann-Whitney p, adjusted over the cases ({how}); <code>runtime-ratio</code> is the ratio of median "
             f"case runtimes; <code>vs-copy</code> = B's runtime ÷ the raw-GET time of the same bytes. "
             f"{html.escape(gates)}</p>")
    path.write_text(
        f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>{setup}"
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;white-space:nowrap}</style></head>"
        f"<body><h1>shotbench compare</h1>{intro}{body}{figures.show(fig).text}</body></html>\n", encoding="utf-8")
    return path


def _pooled(paths: list[Path]) -> Side:
    """Several runs of one side as one: their cases and tasks pooled (runs made in turn with the
    other side's, so drift of the machine falls on both sides alike)."""
    sides = [_load(p) for p in paths]
    return Side(pd.concat([s.cases for s in sides], ignore_index=True),
                pd.concat([s.tasks for s in sides], ignore_index=True))


def _sides(args: argparse.Namespace) -> tuple[Side, Side, list[str], str]:
    if args.run:
        run = Path(args.run)
        if kind_of(run) != "read":
            raise UserError(f"{run} is not a run folder; pass --run data/runs/<run-id>.")
        side = _load(run)
        known = sorted(set(side.cases["backend"]))
        for name in (args.a, args.b):
            if name not in known:
                raise UserError(f"Backend {name!r} is not in {run.name}; choose from {', '.join(known)}.")
        keys = CASE_KEYS[1:]
        return side.where(args.a), side.where(args.b), keys, f"{args.b} vs {args.a} ({run.name})"
    groups = [[Path(p) for p in arg.split(",") if p] for arg in (args.a, args.b)]
    for p in groups[0] + groups[1]:
        if kind_of(p) != "read":
            raise UserError(f"{p} is not a run folder; pass two run folders (or comma-separated lists of them), "
                            "or two backends with --run DIR.")
    names = ["+".join(p.name for p in g) for g in groups]
    return _pooled(groups[0]), _pooled(groups[1]), CASE_KEYS, f"{names[1]} vs {names[0]}"


def cmd_compare(args: argparse.Namespace) -> int:
    if args.threshold <= 0 or args.limit_ratio is not None and args.limit_ratio <= 0:
        raise UserError("--threshold and --limit-ratio are ratios above 0, e.g. --threshold 1.10.")
    a, b, keys, title = _sides(args)
    table = compare(a, b, keys, args.threshold, args.limit_ratio, args.correction)
    from shotbench.paths import reports_dir

    out = Path(args.output) if args.output else reports_dir() / "compare" / title.split(" (")[0].replace(" ", "-")
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "compare.csv", index=False)
    how = "Holm" if args.correction == "holm" else "FDR"
    gates = " ".join(g for g in (
        f"Gate: SLOWER when the ratio is at least {args.threshold} with its interval above 1 and {how}-adjusted p < {ALPHA}.",
        f"Gate: OVER LIMIT when B takes more than {args.limit_ratio} × its copy baseline." if args.limit_ratio else "") if g)
    write_html(table, f"B = {title.split(' vs ')[0]} against A = {title.split(' vs ')[1]}", out / "compare.html", gates,
               args.correction)
    print(f"{title}: median task time ratio B ÷ A per case (95 % BCa interval), Mann-Whitney p ({how}-adjusted over "
          f"{len(table)} cases)")
    print(_text(table))
    print(gates)
    print(f"Wrote {out / 'compare.csv'} and {out / 'compare.html'}.")
    bad = table[table["slower"] | table["over-limit"]]
    if bad.empty:
        return 0
    for _, r in bad.iterrows():
        why = (f"{r['ratio']:.2f}× slower (95 % interval {r['ci-low']:.2f}–{r['ci-high']:.2f}, adjusted p={r['p-adjusted']:.3g})"
               if r["slower"] else f"{r['vs-copy']:.2f}× its copy baseline, above {args.limit_ratio}×")
        print(f"FAIL {r['case']}: {why}")
    return 1


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare", help="compare two runs (or two backends of one run) case by case; exit 1 on a regression",
        description="Median task time ratio B ÷ A per matching case over every task of every trial, BCa bootstrap "
                    "interval and Mann-Whitney p-value adjusted over the cases.",
    )
    p.add_argument("a", metavar="A", help="the baseline: a run folder (or several, comma-separated, pooled), or a backend with --run")
    p.add_argument("b", metavar="B", help="the candidate: a run folder (or several, comma-separated, pooled), or a backend with --run")
    p.add_argument("--run", metavar="DIR", help="compare two backends of this run folder")
    p.add_argument("--threshold", type=float, metavar="RATIO", default=THRESHOLD,
                   help=f"exit 1 when a case of B is at least RATIO × slower with its interval above 1 and adjusted "
                        f"p < {ALPHA} (default {THRESHOLD})")
    p.add_argument("--correction", choices=sorted(stats.ADJUSTMENTS), default="holm",
                   help="how p-values are adjusted for many cases: holm (family-wise, default) or fdr (Benjamini-Hochberg)")
    p.add_argument("--limit-ratio", type=float, metavar="K", help="exit 1 when a case of B takes more than K × its copy (raw-GET) baseline")
    p.add_argument("--output", metavar="DIR", help="where compare.csv and compare.html go (default: reports/compare/<B>-vs-<A>/)")
    p.set_defaults(func=cmd_compare)

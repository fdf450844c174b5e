"""`shotbench compare A B`: did B get slower than A, case by case (in the spirit of `asv compare`).

A and B are two run folders (matching cases: backend, mode, workers, page buffer), or two backends
of one run (`--run DIR`; matching: mode, workers, page buffer). Per case: median runtime ratio
B ÷ A with a bootstrap 95 % CI and a two-sided Mann-Whitney p-value over trials. `--threshold`
fails cases significantly slower than that ratio; `--limit-ratio K` fails cases of B slower than
K × the raw-GET time of the same bytes (the copy baseline).
"""

from __future__ import annotations

import argparse
import html
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from shotbench.read.analyse import analysis, decision
from shotbench.errors import UserError
from shotbench.runs import kind_of

ALPHA = 0.05
EXACT_MAX = 400  # n1 × n2 up to which the exact null distribution of U is counted
CASE_KEYS = ["backend", "obj-type", "num-workers", "pb-size"]
COLUMNS = ["case", "n-a", "n-b", "median-a", "median-b", "ratio", "ci-low", "ci-high", "p-value", "copy-baseline",
           "vs-copy", "slower", "over-limit"]


@lru_cache(maxsize=None)
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """Number of rank arrangements giving each U = 0..n1*n2 (no ties): the exact null distribution."""
    if n1 == 0 or n2 == 0:
        return (1,)
    a, b = _u_counts(n1 - 1, n2), _u_counts(n1, n2 - 1)
    out = [0] * (n1 * n2 + 1)
    for u, c in enumerate(a):  # the largest value belongs to x: it beats all n2 ys
        out[u + n2] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


def mann_whitney(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test of x against y: (U of x, p-value).

    Exact for small samples without ties; otherwise the normal approximation with tie and
    continuity corrections (what scipy.stats.mannwhitneyu does with method="auto").
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        return float("nan"), float("nan")
    both = np.concatenate([x, y])
    ranks = pd.Series(both).rank(method="average").to_numpy()
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    ties = len(np.unique(both)) < len(both)
    if not ties and n1 * n2 <= EXACT_MAX:
        counts = np.array(_u_counts(n1, n2), float)
        total = counts.sum()
        k = int(round(u))
        p = 2 * min(counts[: k + 1].sum(), counts[k:].sum()) / total
        return u, float(min(1.0, p))
    n = n1 + n2
    _, t = np.unique(both, return_counts=True)
    var = n1 * n2 / 12 * ((n + 1) - (t**3 - t).sum() / (n * (n - 1)))
    if var <= 0:
        return u, 1.0
    z = (abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(var)
    return u, float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


def _cases(path: Path) -> pd.DataFrame:
    ds = analysis.load([f"{path.name}={path}"])
    c = decision.usable_cases(ds.cases).copy()
    c["total-runtime"] = pd.to_numeric(c["total-runtime"], errors="coerce")
    raw = pd.to_numeric(c["raw-get-runtime"], errors="coerce") if "raw-get-runtime" in c else pd.Series(np.nan, index=c.index)
    by_backend = c[c["backend"] == analysis.RAW_GET].groupby(["obj-type", "num-workers"])["total-runtime"].median()
    fallback = pd.Series(by_backend.reindex(pd.MultiIndex.from_frame(c[["obj-type", "num-workers"]])).to_numpy(), index=c.index)
    c["copy"] = raw.fillna(fallback)
    return c


def _name(key: tuple, keys: list[str]) -> str:
    parts = dict(zip(keys, key))
    w = int(parts["num-workers"])
    head = f"{parts['backend']} " if "backend" in parts else ""
    return f"{head}{parts['obj-type']} w{w} pb {analysis.pb_label(parts['pb-size'])}"


def compare(a: pd.DataFrame, b: pd.DataFrame, keys: list[str], threshold: float | None, limit: float | None,
            n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One row per case both sides ran; `slower` and `over-limit` say which fail the gates."""
    rng = np.random.default_rng(seed)
    ga = {k: g for k, g in a.groupby(keys, sort=False)}
    rows = []
    for key, gb in b.groupby(keys, sort=False):
        if key not in ga:
            continue
        ta, tb = ga[key]["total-runtime"].to_numpy(float), gb["total-runtime"].to_numpy(float)
        ratio = float(np.median(tb) / np.median(ta))
        lo, hi = analysis.bootstrap_ratio(tb, ta, n_boot, 0.95, rng)
        _, p = mann_whitney(tb, ta)
        copy = float(gb["copy"].median()) if gb["copy"].notna().any() else float("nan")
        vs_copy = float(np.median(tb)) / copy if copy > 0 else float("nan")
        slower = bool(threshold is not None and ratio >= threshold and lo > 1 and p < ALPHA)
        rows.append({
            "case": _name(key, keys), "n-a": len(ta), "n-b": len(tb), "median-a": float(np.median(ta)),
            "median-b": float(np.median(tb)), "ratio": ratio, "ci-low": lo, "ci-high": hi, "p-value": p,
            "copy-baseline": copy, "vs-copy": vs_copy, "slower": slower,
            "over-limit": bool(limit is not None and vs_copy > limit),
        })
    if not rows:
        raise UserError("The two sides share no case (backend, mode, workers, page buffer); compare runs of the same matrix.")
    return pd.DataFrame(rows, columns=COLUMNS)


def _text(table: pd.DataFrame) -> str:
    t = table.assign(
        ratio=[f"{r:.3f} [{lo:.3f}, {hi:.3f}]" if not np.isnan(lo) else f"{r:.3f}" for r, lo, hi in table[["ratio", "ci-low", "ci-high"]].to_numpy()],
        **{"p-value": table["p-value"].map(lambda p: f"{p:.3g}"), "vs-copy": table["vs-copy"].map(lambda v: "—" if np.isnan(v) else f"{v:.2f}×"),
           "flag": ["SLOWER" if s else "OVER LIMIT" if o else "" for s, o in table[["slower", "over-limit"]].to_numpy()]},
    )
    return t[["case", "n-a", "n-b", "median-a", "median-b", "ratio", "p-value", "vs-copy", "flag"]].to_string(index=False, float_format=lambda v: f"{v:.4g}")


def write_html(table: pd.DataFrame, title: str, path: Path, gates: str = "") -> Path:
    """A small offline page: the table and one plot of the ratios with their CIs."""
    import holoviews as hv

    from shotbench.read.figures import plots
    from shotbench import display as figures

    setup = figures.setup().text
    df = table.assign(neg=(table["ratio"] - table["ci-low"]).fillna(0), pos=(table["ci-high"] - table["ratio"]).fillna(0))
    case = hv.Dimension("case", label="Case (backend, mode, workers, page buffer)")
    ratio = hv.Dimension("ratio", label="Runtime B ÷ A (>1: B slower)")
    fig = (hv.HLine(1).opts(color="grey") * hv.Scatter(df, case, [ratio, "p-value"]).opts(size=8, color=plots.PALETTE[0], tools=["hover"])
           * hv.ErrorBars(df, case, ["ratio", "neg", "pos"]).opts(color=plots.PALETTE[0])).opts(
        hv.opts.Overlay(title="Median runtime ratio per case, 95 % bootstrap CI", xlabel=case.label, ylabel=ratio.label,
                        width=max(600, 60 * len(df)), height=420, xrotation=30, show_legend=False, show_grid=True))
    shown = table.assign(flag=["SLOWER" if s else "OVER LIMIT" if o else "" for s, o in table[["slower", "over-limit"]].to_numpy()])
    body = shown.drop(columns=["slower", "over-limit"]).to_html(index=False, float_format=lambda v: f"{v:.4g}", border=0)
    intro = (f"<p>{html.escape(title)}. Per case: median runtime of B ÷ A over trials, percentile-bootstrap 95 % CI, "
             f"two-sided Mann-Whitney p; <code>vs-copy</code> = B's runtime ÷ the raw-GET time of the same bytes. "
             f"{html.escape(gates)}</p>")
    path.write_text(
        f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>{setup}"
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;white-space:nowrap}</style></head>"
        f"<body><h1>shotbench compare</h1>{intro}{body}{figures.show(fig).text}</body></html>\n", encoding="utf-8")
    return path


def _sides(args: argparse.Namespace) -> tuple[pd.DataFrame, pd.DataFrame, list[str], str]:
    if args.run:
        run = Path(args.run)
        if kind_of(run) != "read":
            raise UserError(f"{run} is not a run folder; pass --run data/runs/<run-id>.")
        c = _cases(run)
        known = sorted(set(c["backend"]))
        for name in (args.a, args.b):
            if name not in known:
                raise UserError(f"Backend {name!r} is not in {run.name}; choose from {', '.join(known)}.")
        keys = CASE_KEYS[1:]
        return c[c["backend"] == args.a], c[c["backend"] == args.b], keys, f"{args.b} vs {args.a} ({run.name})"
    paths = [Path(args.a), Path(args.b)]
    for p in paths:
        if kind_of(p) != "read":
            raise UserError(f"{p} is not a run folder; pass two run folders, or two backends with --run DIR.")
    return _cases(paths[0]), _cases(paths[1]), CASE_KEYS, f"{paths[1].name} vs {paths[0].name}"


def cmd_compare(args: argparse.Namespace) -> int:
    if args.threshold is not None and args.threshold <= 0 or args.limit_ratio is not None and args.limit_ratio <= 0:
        raise UserError("--threshold and --limit-ratio are ratios above 0, e.g. --threshold 1.10.")
    a, b, keys, title = _sides(args)
    table = compare(a, b, keys, args.threshold, args.limit_ratio)
    from shotbench.paths import reports_dir

    out = Path(args.output) if args.output else reports_dir() / "compare" / title.split(" (")[0].replace(" ", "-")
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "compare.csv", index=False)
    gates = " ".join(g for g in (
        f"Gate: SLOWER when the ratio is at least {args.threshold} with CI above 1 and p < {ALPHA}." if args.threshold else "",
        f"Gate: OVER LIMIT when B takes more than {args.limit_ratio} × its copy baseline." if args.limit_ratio else "") if g)
    write_html(table, f"B = {title.split(' vs ')[0]} against A = {title.split(' vs ')[1]}", out / "compare.html", gates)
    print(f"{title}: runtime ratio B ÷ A per case (95 % CI), Mann-Whitney p over trials")
    print(_text(table))
    print(f"Wrote {out / 'compare.csv'} and {out / 'compare.html'}.")
    bad = table[table["slower"] | table["over-limit"]]
    if bad.empty:
        return 0
    for _, r in bad.iterrows():
        why = (f"{r['ratio']:.2f}× slower (CI {r['ci-low']:.2f}–{r['ci-high']:.2f}, p={r['p-value']:.3g})" if r["slower"]
               else f"{r['vs-copy']:.2f}× its copy baseline, above {args.limit_ratio}×")
        print(f"FAIL {r['case']}: {why}")
    return 1


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare", help="compare two runs (or two backends of one run) case by case; exit 1 on a regression",
        description="Median runtime ratio B ÷ A per matching case, bootstrap CI and Mann-Whitney p-value.",
    )
    p.add_argument("a", metavar="A", help="the baseline: a run folder, or a backend with --run")
    p.add_argument("b", metavar="B", help="the candidate: a run folder, or a backend with --run")
    p.add_argument("--run", metavar="DIR", help="compare two backends of this run folder")
    p.add_argument("--threshold", type=float, metavar="RATIO",
                   help=f"exit 1 when a case of B is at least RATIO × slower with CI above 1 and p < {ALPHA} (e.g. 1.10)")
    p.add_argument("--limit-ratio", type=float, metavar="K", help="exit 1 when a case of B takes more than K × its copy (raw-GET) baseline")
    p.add_argument("--output", metavar="DIR", help="where compare.csv and compare.html go (default: reports/compare/<B>-vs-<A>/)")
    p.set_defaults(func=cmd_compare)

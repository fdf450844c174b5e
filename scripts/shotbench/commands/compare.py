"""`shotbench compare A B`: two runs case by case; exit 1 on a significant slowdown.

The statistics are `studies/compare/comparison.py`, the page `studies/compare/compare_page.py`.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shotbench.diskspace import atomic_write, output_folder
from shotbench.errors import UserError, refuse_repeats
from shotbench.runs import refuse_copies, require_cases, require_read_run, run_id

if TYPE_CHECKING:
    import pandas as pd

    from shotbench.studies.compare.comparison import Side


def _compare_text(table: pd.DataFrame) -> str:
    import numpy as np

    from shotbench.studies.compare import comparison as stats

    t = table.assign(
        ratio=[
            f"{r:.3f} [{lo:.3f}, {hi:.3f}]" if not np.isnan(lo) else f"{r:.3f}"
            for r, lo, hi in table[["ratio", "ci-low", "ci-high"]].to_numpy()
        ],
        **{
            "p-adjusted": table["p-adjusted"].map(lambda p: f"{p:.3g}"),
            "vs-copy": table["vs-copy"].map(lambda v: "—" if np.isnan(v) else f"{v:.2f}×"),
            "flag": stats.flags(table),
        },
    )
    return t[
        ["case", "unit", "n-a", "n-b", "median-a", "median-b", "ratio", "p-adjusted", "vs-copy", "verdict", "flag"]
    ].to_string(index=False, float_format=lambda v: f"{v:.4g}")


NOT_A_RUN = "pass two run folders (or comma-separated lists of them), or two backends with --run DIR"


def _sides(args: argparse.Namespace) -> tuple[Side, Side, list[str], str]:
    from shotbench.studies.compare import comparison as stats

    if args.run:
        run = Path(args.run)
        require_read_run(run, "pass --run data/runs/<run-id>")
        require_cases(run)
        side = stats.load(run)
        known = sorted(set(side.cases["backend"]))
        if args.a == args.b:
            raise UserError(f"{args.a} is given as both A and B; with --run, name two different backends of the run.")
        for name in (args.a, args.b):
            if name not in known:
                raise UserError(f"backend {name!r} is not in {run.name}; choose from {', '.join(known)}.")
        keys = stats.CASE_KEYS[1:]
        return side.where(args.a), side.where(args.b), keys, f"{args.b} vs {args.a} ({run.name})"
    groups = _checked_groups(args.a, args.b)
    names = ["+".join(p.name for p in g) for g in groups]
    return stats.pooled(groups[0]), stats.pooled(groups[1]), stats.CASE_KEYS, f"{names[1]} vs {names[0]}"


def _checked_groups(a: str, b: str) -> list[list[Path]]:
    """The run folders of each side, each a read run with cases, no run twice in a pool (its tasks
    would count twice) and none on both sides, even as a copy (a run compared with itself decides nothing)."""
    for label, arg in (("A", a), ("B", b)):
        if not [p for p in arg.split(",") if p.strip()]:
            raise UserError(f"side {label} names no run folder; {NOT_A_RUN}.")
        refuse_repeats([p for p in arg.split(",") if p], f"side {label}", lambda p: Path(p).resolve())
    groups = [[Path(p) for p in arg.split(",") if p] for arg in (a, b)]
    if both := {p.resolve() for p in groups[0]} & {p.resolve() for p in groups[1]}:
        raise UserError(f"{min(both)} is on both sides; a run compared with itself decides nothing, give B other runs.")
    for p in groups[0] + groups[1]:
        require_read_run(p, NOT_A_RUN)
        require_cases(p)
    for label, group in zip("AB", groups):
        refuse_copies(group, f"side {label}")
    ids = {run_id(p): p for p in groups[0]}
    for p in groups[1]:
        if (found := run_id(p)) is not None and found in ids:
            raise UserError(
                f"{ids[found]} and {p} are one run ({found}, a copy keeps its run id) on both sides; "
                "a run compared with itself decides nothing, give B other runs."
            )
    return groups


def _unfinished(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """Sentences on runs that did not measure all they planned: B's fail the gate (a case B planned
    and did not measure would otherwise pass unseen), A's only narrow what is compared."""
    from shotbench.analyse.unfinished import summary, unfinished
    from shotbench.runs import resume_hint

    def found(arg: str) -> list:
        return [u for u in (unfinished(Path(p)) for p in arg.split(",") if p) if u is not None]

    fails = [
        f"FAIL unfinished: {summary(u)}; a case it did not measure cannot pass. "
        f"{hint[:1].upper()}{hint[1:]}, then compare again."
        for u in found(args.run or args.b)
        for hint in [resume_hint(u.run, u.kind)]
    ]
    notes = [] if args.run else [
        f"note: A's run {summary(u)}; only the cases both sides measured are compared." for u in found(args.a)
    ]  # fmt: skip
    return fails, notes


def cmd_compare(args: argparse.Namespace) -> int:
    from shotbench.studies.compare import compare_page as compare_page
    from shotbench.studies.compare import comparison as stats

    for flag, ratio, e_g in (("--threshold", args.threshold, "1.10"), ("--limit-ratio", args.limit_ratio, "12")):
        if ratio is not None and not (math.isfinite(ratio) and ratio > 0):  # NaN would turn its gate off
            raise UserError(f"{flag} is a finite ratio above 0, e.g. {flag} {e_g}; {ratio} is not one.")
    a, b, keys, title = _sides(args)
    from shotbench.paths import reports_dir

    out = Path(args.output) if args.output else reports_dir() / "compare" / title.split(" (")[0].replace(" ", "-")
    how = "Holm" if args.correction == "holm" else "FDR"
    gates = " ".join(
        g
        for g in (
            f"Gate: SLOWER when the ratio is at least {args.threshold} with its interval above 1 and {how}-adjusted p < {stats.ALPHA}.",
            f"Gate: OVER LIMIT when B takes more than {args.limit_ratio} × its copy baseline."
            if args.limit_ratio
            else "",
        )
        if g
    )
    with output_folder(out, "output folder"):  # refused before the bootstrap; taken back if the sides share no case
        table = stats.compare(a, b, keys, args.threshold, args.limit_ratio, args.correction, paired=bool(args.run))
        atomic_write(out / "compare.csv", table.to_csv(index=False))
        compare_page.write_html(
            table,
            f"B = {title.split(' vs ')[0]} against A = {title.split(' vs ')[1]}",
            out / "compare.html",
            gates,
            args.correction,
        )
    print(
        f"{title}: median task time ratio B ÷ A per case (95 % bootstrap interval), Mann-Whitney p ({how}-adjusted over "
        f"{len(table)} cases)"
    )
    print(_compare_text(table))
    print(gates)
    print(f"Wrote {out / 'compare.csv'} and {out / 'compare.html'}.")
    fails, notes = _unfinished(args)
    for line in notes + fails:
        print(line)
    bad = table[table["slower"] | table["over-limit"]]
    if bad.empty:
        return 1 if fails else 0
    for _, r in bad.iterrows():
        why = (
            f"{r['ratio']:.2f}× slower (95 % interval {r['ci-low']:.2f}–{r['ci-high']:.2f}, adjusted p={r['p-adjusted']:.3g})"
            if r["slower"]
            else f"{r['vs-copy']:.2f}× its copy baseline, above {args.limit_ratio}×"
        )
        print(f"FAIL {r['case']}: {why}")
    return 1


def register(subparsers: Any) -> None:
    from shotbench.analyse.gate import ADJUSTMENT_NAMES, ALPHA, THRESHOLD

    p = subparsers.add_parser(
        "compare",
        help="compare two runs (or two backends of one run) case by case; exit 1 on a regression",
        description="Median task time ratio B ÷ A per matching case over every task of every trial, bootstrap "
        "interval (runs pooled on a side are resampled run by run) and Mann-Whitney p-value adjusted over the cases.",
    )
    p.add_argument(
        "a",
        metavar="A",
        help="the baseline: a run folder (or several, comma-separated, pooled), or a backend with --run",
    )
    p.add_argument(
        "b",
        metavar="B",
        help="the candidate: a run folder (or several, comma-separated, pooled), or a backend with --run",
    )
    p.add_argument("--run", metavar="DIR", help="compare two backends of this run folder")
    p.add_argument(
        "--threshold",
        type=float,
        metavar="RATIO",
        default=THRESHOLD,
        help=f"exit 1 when a case of B is at least RATIO × slower with its interval above 1 and adjusted "
        f"p < {ALPHA} (default {THRESHOLD})",
    )
    p.add_argument(
        "--correction",
        choices=list(ADJUSTMENT_NAMES),
        default="holm",
        help="how p-values are adjusted for many cases: holm (family-wise, default) or fdr (Benjamini-Hochberg)",
    )
    p.add_argument(
        "--limit-ratio",
        type=float,
        metavar="K",
        help="exit 1 when a case of B takes more than K × its copy (raw-GET) baseline",
    )
    p.add_argument(
        "--output", metavar="DIR", help="where compare.csv and compare.html go (default: reports/compare/<B>-vs-<A>/)"
    )
    p.set_defaults(func=cmd_compare)

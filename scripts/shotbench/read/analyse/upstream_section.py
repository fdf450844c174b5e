"""How a run compares with the upstream MDSplusBench study, as Markdown for the report.

A minimal version: per access pattern, the median over matching cases of the libhdf5 2.x ROS3
runtime ÷ the 1.14 runtime, in the study's CSVs and in this run, and which way each points.
"""

from __future__ import annotations

import pathlib

import pandas as pd

from shotbench.paths import data_dir

KEYS = ["obj-type", "pb-size", "num-workers"]
MODES = ("shots", "signals")


def _study_ratios() -> dict[str, float]:
    """Median of new ÷ old total runtime per mode over the (page buffer, workers) both ran."""
    base = data_dir() / "fixtures" / "mdsplusbench"
    try:
        old = pd.read_csv(base / "single-shot-ec2-s3.csv.gz").groupby(KEYS)["total-runtime"].median()
        new = pd.read_csv(base / "single-shot-ec2-s3-libaws.csv.gz").groupby(KEYS)["total-runtime"].median()
    except OSError:  # a checkout without the fixtures: nothing to compare with
        return {}
    ratio = (new / old).dropna()
    return {m: float(ratio.xs(m).median()) for m in MODES if m in ratio.index.get_level_values(0)}


def _run_ratios(run_dir: pathlib.Path) -> dict[str, dict[str, float]]:
    """Per 2.x backend of the run, median of its runtime ÷ ros3-1.14's per mode (ok cases only)."""
    try:
        cases = pd.read_csv(run_dir / "cases.csv")
    except (OSError, pd.errors.EmptyDataError):
        return {}
    if "status" in cases.columns:
        cases = cases[cases["status"].fillna("ok").isin(["", "ok"])]
    medians = cases.groupby(["backend"] + KEYS)["total-runtime"].median()
    if "ros3-1.14" not in medians.index.get_level_values(0):
        return {}
    old = medians.xs("ros3-1.14")
    out: dict[str, dict[str, float]] = {}
    for backend in sorted(b for b in medians.index.get_level_values(0).unique() if str(b).startswith("ros3-2")):
        ratio = (medians.xs(backend) / old).dropna()
        out[backend] = {m: float(ratio.xs(m).median()) for m in MODES if m in ratio.index.get_level_values(0)}
    return out


def _direction(ratio: float) -> str:
    return "2.x faster" if ratio < 1 else "2.x slower" if ratio > 1 else "no difference"


def upstream_section(run_dir: pathlib.Path) -> str:
    """Markdown: the study's 2.x ÷ 1.14 median runtime ratio per mode beside this run's, with directions."""
    study = _study_ratios()
    if not study:
        return "The upstream study's CSVs (data/fixtures/mdsplusbench) are not in this checkout; restore them from git to compare."
    here = _run_ratios(pathlib.Path(run_dir))
    lines = [
        "| access pattern (median 2.x ÷ 1.14 runtime) | upstream study (2.0-dev ÷ 1.14, EC2) | "
        + " | ".join(f"this run ({b} ÷ ros3-1.14)" for b in here)
        + " |",
        "|---|---|" + "---|" * len(here),
    ]
    for mode in MODES:
        if mode not in study:
            continue
        cells = [f"{study[mode]:.2f}× ({_direction(study[mode])})"]
        cells += [f"{r[mode]:.2f}× ({_direction(r[mode])})" if mode in r else "—" for r in here.values()]
        lines.append(f"| `{mode}` | " + " | ".join(cells) + " |")
    if not here:
        lines.append("\nThis run has no ros3-1.14 and ros3-2.x cases to set beside the study.")
    return "\n".join(lines)

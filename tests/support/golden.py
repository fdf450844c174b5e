"""The numbers tests check reports against, written once: the upstream study's published
figures, the fixtures they come from, and how many figures each report draws.

The upstream values are those of MIT-PSFC/MDSplusBench's CSVs (bundled under
data/fixtures/mdsplusbench) as its notebooks print them: six decimals for per-task times,
two for a case's total runtime. A test imports what it checks (`from golden import ...`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "data" / "fixtures" / "mdsplusbench"
SINGLE_OLD = REF / "single-shot-ec2-s3.csv.gz"  # libhdf5 1.14 ROS3
SINGLE_NEW = REF / "single-shot-ec2-s3-libaws.csv.gz"  # the 2.0 development ROS3 on aws-c-s3
MULTI_OLD = REF / "multi-shot-ec2-s3.csv.gz"
MULTI_NEW = REF / "multi-shot-ec2-s3-libaws.csv.gz"
RUN_FIXTURE = ROOT / "tests" / "data" / "run-fixture"

TASK_TIME = 5e-7  # per-task seconds are published to six decimals
TOTAL_TIME = 0.005  # a case's total runtime to two

# (series, obj-type, num-workers, summary column, published value, tolerance): the single-shot
# study's describe() rows and total runtimes, as every summary of the two CSVs must show them.
PUBLISHED: list[tuple[str, str, int, str, float, float]] = [
    ("new", "signals", 8, "pb-size", 268435456, 0),
    ("new", "signals", 8, "count", 488, 0),
    ("new", "signals", 8, "mean", 0.251735, TASK_TIME),
    ("new", "signals", 8, "std", 0.031577, TASK_TIME),
    ("new", "signals", 8, "50%", 0.245573, TASK_TIME),
    ("new", "signals", 8, "max", 0.513524, TASK_TIME),
    ("new", "signals", 8, "total-runtime", 945.75, TOTAL_TIME),
    ("old", "signals", 8, "total-runtime", 1117.43, TOTAL_TIME),
    ("new", "signals", 16, "std", 0.011587, TASK_TIME),
    ("new", "signals", 24, "min", 0.241442, TASK_TIME),
    ("new", "signals", 32, "count", 1947, 0),
    ("new", "signals", 32, "mean", 0.420436, TASK_TIME),
    ("new", "signals", 48, "25%", 0.546357, TASK_TIME),
    ("new", "signals", 64, "count", 3815, 0),
    ("new", "signals", 64, "mean", 0.841275, TASK_TIME),
    ("new", "signals", 64, "75%", 0.960420, TASK_TIME),
    ("new", "shots", 1, "total-runtime", 0.638936, TASK_TIME),
]
# Total runtimes to the CSVs' full precision, for ratios between cases.
OLD_SIGNALS_TOTAL = {8: 1117.433721, 24: 597.378760}
NEW_SIGNALS_TOTAL = {8: 945.749953}
OLD_SHOTS_TOTAL = {8: 0.414694}
NEW_SHOTS_TOTAL = {1: 0.638936}
SIGNALS_RATIO_RANGE = [1.18, 2.53]  # old ÷ new total runtime over signals-mode worker counts

# The many-shot study: 1.14 on S3, one worker, 264 MB page buffer, seconds per (layout, order).
MANY_SHOT_HEADLINE = {
    ("shot", "shots"): 261,
    ("shot", "signals"): 2535,
    ("signal", "shots"): 1947,
    ("signal", "signals"): 750,
}
MANY_SHOT_GROUPS = 80  # (file, order, page buffer, workers) groups across old and new

# Figures each rendered report draws (what `htmlcheck.figure_count` finds in its HTML).
REFERENCE_REPORT_FIGURES = (
    6  # single-shot reference, per mode: decision (runtime + CI), speed vs old, runtime vs workers
)
RUN_REPORT_FIGURES = 10  # run fixture, per mode: decision, speed vs ros3-1.14, × limit, MB fetched, runtime vs workers
MANY_SHOT_REPORT_FIGURES = 8


def assert_published(value: Callable[[str, str, int, str], float], series: dict[str, str] | None = None) -> None:
    """Every PUBLISHED value, read through `value(series, obj-type, workers, column)`; `series`
    maps the upstream names old/new to the labels the report under test gave them."""
    names = series or {}
    for label, mode, workers, column, expected, tolerance in PUBLISHED:
        got = value(names.get(label, label), mode, workers, column)
        assert got == pytest.approx(expected, abs=tolerance), (label, mode, workers, column)

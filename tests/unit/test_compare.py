"""`shotbench compare`: the statistics are right, and a slowed run fails the gate by name."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shotbench import stats
from shotbench.studies.compare.comparison import CASE_KEYS, RUN, TASK_TIME, Side, compare
from support.incli import one_line
from support.runfolder import copy_run


def _side(times: dict[str, list[float]], copy: float = 0.1, tasks: dict[str, list[float]] | None = None) -> Side:
    keys = {"obj-type": "shots", "num-workers": 1, "pb-size": 0}
    cases = pd.DataFrame(
        [{"backend": b, **keys, "total-runtime": t, "copy": copy} for b, ts in times.items() for t in ts]
    )
    rows = [{"backend": b, **keys, TASK_TIME: t} for b, ts in (tasks or {}).items() for t in ts]
    return Side(cases, pd.DataFrame(rows, columns=CASE_KEYS + [TASK_TIME]))


def test_only_significant_slowdowns_fail() -> None:
    a = _side({"x": [1.0, 1.1, 0.9, 1.05, 0.95, 1.02], "y": [1.0, 1.2, 0.8, 1.1, 0.9, 1.0]})
    b = _side({"x": [1.5, 1.6, 1.4, 1.55, 1.45, 1.52], "y": [1.3, 0.8, 1.0, 1.25, 0.9, 1.1]})
    t = compare(a, b, CASE_KEYS, threshold=1.10, limit=12.0).set_index("case")
    assert t.loc["x shots w1 pb off", "slower"] and not t.loc["y shots w1 pb off", "slower"]
    assert (t["unit"] == "trial").all()  # no task rows: the trial runtimes are the samples
    assert t.loc["x shots w1 pb off", "p-value"] == pytest.approx(2 / 924)  # exact: fully separated, 6 v 6
    assert t.loc["x shots w1 pb off", "p-adjusted"] == pytest.approx(2 * 2 / 924)  # Holm over 2 cases
    assert t.loc["x shots w1 pb off", "over-limit"]  # 1.5 s against a 0.1 s copy: 15× > 12×
    assert not t.loc["y shots w1 pb off", "over-limit"]


def test_tasks_are_the_unit_so_two_trials_can_fire() -> None:
    """Two trials a side can never give p < 0.05 on trial runtimes (the smallest is 1/3); the 24
    task times of those trials can, and a 15 % slowdown of one backend is named alone."""
    rng = np.random.default_rng(5)
    task = {"x": list(rng.normal(1.0, 0.05, 24)), "y": list(rng.normal(1.0, 0.05, 24))}
    slowed = {"x": list(rng.normal(1.15, 0.05, 24)), "y": list(rng.normal(1.0, 0.05, 24))}
    a = _side({"x": [10.0, 10.1], "y": [10.0, 10.1]}, tasks=task)
    b = _side({"x": [11.5, 11.6], "y": [10.0, 10.1]}, tasks=slowed)
    t = compare(a, b, CASE_KEYS).set_index("case")  # the default gate: 10 %
    assert (t["unit"] == "task").all() and (t["n-a"] == 24).all()
    assert list(t.index[t["slower"]]) == ["x shots w1 pb off"]
    assert t.loc["x shots w1 pb off", "ci-low"] > 1.1
    assert t.loc["y shots w1 pb off", "ci-low"] < 1 < t.loc["y shots w1 pb off", "ci-high"]
    assert not compare(a, a, CASE_KEYS)["slower"].any()


def test_a_side_pooled_from_several_runs_is_resampled_run_by_run() -> None:
    """Tasks of one run share its minute of the machine: when a side pools runs, the interval
    resamples the runs, then their tasks (stats.clustered_ratio_interval), so two runs that fell in
    a slow minute widen it instead of passing for 24 independent slow tasks."""
    rng = np.random.default_rng(7)
    keys = {"backend": "x", "obj-type": "signals", "num-workers": 1, "pb-size": 0}

    def side(levels: list[float]) -> tuple[Side, list[np.ndarray]]:
        runs = [level * np.exp(rng.normal(0, 0.3, 12)) for level in levels]
        cases = pd.DataFrame([{**keys, "total-runtime": level, "copy": 0.1} for level in levels])
        tasks = pd.DataFrame([{**keys, TASK_TIME: t, RUN: f"r{i}"} for i, r in enumerate(runs) for t in r])
        return Side(cases, tasks), runs

    (a, ra), (b, rb) = side([1.0, 1.1, 0.95]), side([1.4, 1.45, 1.0])
    row = compare(a, b, CASE_KEYS).iloc[0]
    want = stats.clustered_ratio_interval(rb, ra)
    assert (row["ci-low"], row["ci-high"]) == (want.low, want.high) and row["n-a"] == 36
    flat = compare(Side(a.cases, a.tasks.drop(columns=RUN)), Side(b.cases, b.tasks.drop(columns=RUN)), CASE_KEYS)
    assert flat.iloc[0]["ci-high"] - flat.iloc[0]["ci-low"] < row["ci-high"] - row["ci-low"]


def test_two_backends_of_one_run_are_paired_by_round() -> None:
    """Rounds that move everyone (1 s, then 2 s, …) divide out when both backends ran in them: a
    backend 10 % slower in every round is slower, one within 1 % is equivalent; unpaired, the same
    numbers overlap and decide nothing."""
    rounds = [1.0, 2.0, 1.0, 2.0]

    def run(factors: dict[str, list[float]]) -> Side:
        cases = pd.DataFrame(
            [
                {
                    "backend": b,
                    "obj-type": "shots",
                    "num-workers": 1,
                    "pb-size": 0,
                    "trial": i + 1,
                    "total-runtime": r * f,
                    "copy": 0.1,
                }
                for b, fs in factors.items()
                for i, (r, f) in enumerate(zip(rounds, fs))
            ]
        )
        return Side(cases, pd.DataFrame(columns=CASE_KEYS + [TASK_TIME]))

    a = run({"x": [1.0] * 4, "y": [1.0] * 4})
    b = run({"x": [1.10, 1.11, 1.09, 1.10], "y": [1.01, 0.99, 1.0, 1.005]})
    paired = compare(a, b, CASE_KEYS, paired=True).set_index("case")["verdict"]
    assert (paired["x shots w1 pb off"], paired["y shots w1 pb off"]) == ("slower", "equivalent")
    unpaired = compare(a, b, CASE_KEYS).set_index("case")["verdict"]
    assert (unpaired == "undecided").all()


def test_a_slowdown_below_the_threshold_is_not_a_regression() -> None:
    rng = np.random.default_rng(6)
    a = _side({"x": [1.0, 1.0]}, tasks={"x": list(rng.normal(1.0, 0.01, 50))})
    b = _side({"x": [1.0, 1.0]}, tasks={"x": list(rng.normal(1.05, 0.01, 50))})
    t = compare(a, b, CASE_KEYS)
    assert t.loc[0, "p-adjusted"] < 1e-6 and t.loc[0, "ci-low"] > 1  # significant, but 5 % < 10 %
    assert not t.loc[0, "slower"]
    assert compare(a, b, CASE_KEYS, threshold=1.03).loc[0, "slower"]


# --- real runs: the embedded S3 server, Dask workers, toxiproxy for the slowed one ------------


# --- what `shotbench compare` refuses, in one sentence, before any bootstrap -------------------
FIXTURE_RUN = Path(__file__).parents[1] / "data" / "run-fixture"


def _compare(argv: list[str]) -> tuple[int, str]:
    """`shotbench compare ARGV` in-process: its exit status and its one line on stderr."""
    return one_line(["compare", *argv])


@pytest.mark.parametrize("output", ["afile", "/proc/nope"])
def test_an_output_that_cannot_be_a_folder_is_one_sentence(output: str, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("mine\n")
    other = copy_run(FIXTURE_RUN, tmp_path / "other", run_id="other")
    out = output if output.startswith("/") else str(tmp_path / output)
    code, err = _compare([str(FIXTURE_RUN), str(other), "--output", out])
    assert code == 2 and "output folder" in err and "choose a" in err
    assert (tmp_path / "afile").read_text() == "mine\n"


@pytest.mark.parametrize("side", ["", ",", " , "])
def test_a_side_that_names_no_run_folder_is_one_sentence(side: str, tmp_path: Path) -> None:
    code, err = _compare([side, str(FIXTURE_RUN), "--output", str(tmp_path / "out")])
    assert code == 2 and "side A names no run folder" in err
    code, err = _compare([str(FIXTURE_RUN), side, "--output", str(tmp_path / "out")])
    assert code == 2 and "side B names no run folder" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--threshold", "nan"), ("--threshold", "inf"), ("--limit-ratio", "nan"), ("--limit-ratio", "0")],
)
def test_a_gate_that_is_not_a_finite_ratio_is_refused(flag: str, value: str, tmp_path: Path) -> None:
    """NaN compared false with every ratio: `--threshold nan` passed every case and exited 0."""
    other = copy_run(FIXTURE_RUN, tmp_path / "other", run_id="other")
    code, err = _compare([str(FIXTURE_RUN), str(other), flag, value, "--output", str(tmp_path / "out")])
    assert code == 2 and f"{flag} is a finite ratio above 0" in err and value in err
    assert not (tmp_path / "out").exists()


def test_a_copied_run_is_the_same_run(tmp_path: Path) -> None:
    """A copied folder keeps its run id: against the original every ratio was 1.000, and pooled
    with it its tasks counted twice."""
    copy = copy_run(FIXTURE_RUN, tmp_path / "copy")
    other = copy_run(FIXTURE_RUN, tmp_path / "other", run_id="other")
    out = str(tmp_path / "out")
    code, err = _compare([str(FIXTURE_RUN), str(copy), "--output", out])
    assert code == 2 and "on both sides" in err and str(copy) in err and str(FIXTURE_RUN) in err
    code, err = _compare([f"{FIXTURE_RUN},{copy}", str(other), "--output", out])
    assert code == 2 and "side A names run" in err and "twice" in err and str(copy) in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("kind", "table", "words"),
    [
        (
            "transfer",
            "transfers.csv",
            ["is a transfer run", "shotbench transfer --check", "shotbench report --transfer"],
        ),
        ("direction", "cells.csv", ["is an ablation run", "shotbench report --direction", "settings/"]),
    ],
)
def test_a_run_of_another_kind_is_named_with_the_command_that_reads_it(
    kind: str, table: str, words: list[str], tmp_path: Path
) -> None:
    run = tmp_path / kind
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": kind, "kind": kind, "schema": 1}))
    (run / table).write_text("x\n")
    code, err = _compare([str(run), str(FIXTURE_RUN), "--output", str(tmp_path / "out")])
    assert code == 2 and all(w in err for w in words), err
    code, err = _compare(["a", "b", "--run", str(run), "--output", str(tmp_path / "out")])
    assert code == 2 and all(w in err for w in words), err


@pytest.mark.parametrize("cases", ["", "case-id,trial,backend\n"], ids=["0 bytes", "header only"])
def test_a_run_without_cases_is_refused(cases: str, tmp_path: Path) -> None:
    """The case row is the commit mark: a run whose cases.csv holds none measured nothing, whatever
    its workers.csv holds (compare read those rows as cases)."""
    empty = copy_run(FIXTURE_RUN, tmp_path / "empty", run_id="empty")
    (empty / "cases.csv").write_text(cases)
    for argv in ([str(FIXTURE_RUN), str(empty)], [str(empty), str(FIXTURE_RUN)], ["a", "b", "--run", str(empty)]):
        code, err = _compare([*argv, "--output", str(tmp_path / "out")])
        assert code == 2 and f"{empty} has no cases" in err
    assert not (tmp_path / "out").exists()


def test_a_refused_compare_leaves_no_output_folder(tmp_path: Path) -> None:
    """Two runs that share no case are refused after the output folder was made: the folders this
    compare made go again, the folder that was there stays."""
    other = copy_run(FIXTURE_RUN, tmp_path / "other", run_id="other")
    lines = (other / "cases.csv").read_text().splitlines(keepends=True)
    column = lines[0].strip().split(",").index("num-workers")
    moved = [
        ",".join(v if i != column else "64" for i, v in enumerate(ln.rstrip("\n").split(","))) + "\n"
        for ln in lines[1:]
    ]
    (other / "cases.csv").write_text(lines[0] + "".join(moved))  # every case at 64 workers: none in common
    out = tmp_path / "new" / "deeper" / "out"
    code, err = _compare([str(FIXTURE_RUN), str(other), "--output", str(out)])
    assert code == 2 and "share no case" in err
    assert not (tmp_path / "new").exists() and other.is_dir()

"""The last mile of reliability: each row of what a hostile user found, reproduced and held.

Real bench processes on real (local) shot files; nothing of the system under test is mocked.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from tests.test_bench_cli import assert_one_sentence, run_bench

TINY = ["--backends", "local", "--modes", "shots", "--page-buffers", "0", "--trials", "1"]


def _cases(run: Path) -> list[dict[str, str]]:
    with open(run / "cases.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def _only_run(tmp_path: Path) -> Path:
    (run,) = sorted((tmp_path / "runs").iterdir())
    return run


def _strict(text: str) -> object:
    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_duplicate_selections_are_measured_once(shot_dir: Path, tmp_path: Path) -> None:
    """`--workers 1 1 --backends local local` gave 4 rows with one case id ("cases 4")."""
    proc = run_bench(["--data", str(shot_dir), *TINY, "--workers", "1", "1", "--backends", "local", "local"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "workers: 1 given more than once" in proc.stdout and "backends: local given more than once" in proc.stdout
    ids = [r["case-id"] for r in _cases(_only_run(tmp_path))]
    assert len(ids) == 1 == len(set(ids))


def test_zero_and_off_are_one_page_buffer() -> None:
    from shotbench.read import profiles

    notes: list[str] = []
    cfg = profiles.load("quick", None, {"page_buffers": ["0", "off", "default"], "workers": [2, 1, 2]}, notes)
    assert cfg.page_buffers == ["0", "default"] and cfg.workers == [2, 1] and len(notes) == 2


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "+inf"])
def test_non_finite_settings_are_refused(value: str, tmp_path: Path) -> None:
    """TOML `task_timeout = inf` was a traceback and a run folder with 0 cases; `nan` was accepted
    and run.json then held NaN."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"task_timeout = {value}\n")
    assert_one_sentence(run_bench(["--config", str(cfg), "--backends", "local"], tmp_path), tmp_path,
                        "task-timeout", "finite")


def test_run_json_is_strict_json(tmp_path: Path) -> None:
    """A NaN or infinity anywhere in the metadata is written as null, never as NaN."""
    from shotbench.read.results import RUN_KIND
    from shotbench.runs import RunFolder

    folder = RunFolder.create(tmp_path / "run", RUN_KIND, {"a": math.nan, "b": [math.inf, 1.5], "c": {"d": -math.inf}})
    meta = _strict((folder.path / "run.json").read_text())
    assert meta["a"] is None and meta["b"] == [None, 1.5] and meta["c"] == {"d": None}


def test_a_real_run_json_is_strict_json(shot_dir: Path, tmp_path: Path) -> None:
    proc = run_bench(["--data", str(shot_dir), *TINY, "--workers", "1"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    _strict((_only_run(tmp_path) / "run.json").read_text())


@pytest.mark.parametrize("kind", ["folder", "binary", "missing in a folder with spaces é"])
def test_config_that_is_not_a_file(kind: str, tmp_path: Path) -> None:
    """`--config some/dir` was a traceback (IsADirectoryError)."""
    path = tmp_path / "some dir ü"
    path.mkdir()
    if kind == "binary":
        path = path / "c.toml"
        path.write_bytes(b"\xff\xfe\x00bad")
    elif kind.startswith("missing"):
        path = path / "nope.toml"
    assert_one_sentence(run_bench(["--config", str(path)], tmp_path), tmp_path, "config")


def test_a_torn_row_in_the_middle_is_set_aside_and_measured_again(shot_dir: Path, tmp_path: Path) -> None:
    """A line of cases.csv cut in half (newline kept) was a traceback in the report, and `--resume`
    said "already complete", so the torn row counted as measured."""
    args = ["--data", str(shot_dir), "--backends", "local", "--modes", "shots", "--page-buffers", "0",
            "--workers", "1", "2", "--trials", "2"]
    proc = run_bench(args, tmp_path)
    assert proc.returncode == 0, proc.stderr
    run = _only_run(tmp_path)
    lines = (run / "cases.csv").read_text().splitlines(keepends=True)
    assert len(lines) == 5
    torn_id = next(csv.reader([lines[2]]))[1]
    lines[2] = lines[2][: len(lines[2]) // 2] + "\n"
    (run / "cases.csv").write_text("".join(lines))

    from shotbench.read import analysis
    from shotbench.read.results import RUN_KIND
    from shotbench.runs import RunFolder

    assert len(RunFolder(run, RUN_KIND).cases()) == 3  # the torn row is never counted
    ds = analysis.load([str(run)])
    assert len(ds.cases) == 3 and any("set aside" in n for n in ds.notes)
    from shotbench.read import decision

    decision.decision_table(ds)  # what the report computes from it

    resumed = run_bench(["--resume", str(run)], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "set aside 1 torn or invalid row" in resumed.stdout and "already complete" not in resumed.stdout
    rows = _cases(run)
    assert len(rows) == 4 and len({r["case-id"] for r in rows}) == 4
    assert {r["status"] for r in rows} == {"ok"} and torn_id in {r["case-id"] for r in rows}
    assert (run / "cases.set-aside.csv").read_text().count("\n") == 1

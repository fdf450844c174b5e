"""`shotbench report` refuses what it cannot render before a notebook kernel starts, hands the
notebook paths it can open, and leaves no output behind when it is refused."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from shotbench.diskspace import output_folder
from shotbench.errors import UserError
from shotbench.reports import render
from support.incli import one_line
from support.runfolder import copy_run

FIXTURE_RUN = Path(__file__).parents[1] / "data" / "run-fixture"


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """The notebook run, replaced: each call's parameters are recorded, and it is refused as a
    notebook's own UserError is (unit tests start no kernel)."""
    calls: list[dict] = []

    def refused(notebook: Path, params: dict, out_ipynb: Path) -> None:
        calls.append(params)
        (out_ipynb.parent / "summary.csv").write_text("half,of,it\n")  # what a cell wrote before it failed
        raise UserError("the notebook refused its inputs; fix them.")

    monkeypatch.setattr(render, "execute", refused)
    return calls


def _report(argv: list[str]) -> tuple[int, str]:
    """`shotbench report ARGV` in-process: its exit status and its one line on stderr."""
    t0 = time.monotonic()
    done = one_line(["report", *argv])
    assert time.monotonic() - t0 < 1  # refused up front, not after a kernel started
    return done


@pytest.mark.parametrize("cases", ["", "case-id,trial,backend\n"], ids=["0 bytes", "header only"])
def test_a_run_without_cases_is_refused_before_the_kernel(cases: str, kernel: list[dict], tmp_path: Path) -> None:
    """A run whose cases.csv holds no case row ended in ~100 lines of notebook traceback (EmptyDataError)
    and left partial CSVs in the output folder."""
    empty = copy_run(FIXTURE_RUN, tmp_path / "empty", run_id="empty")
    (empty / "cases.csv").write_text(cases)
    for argv in (["--run", str(empty)], ["--input", f"x={empty}"], ["--input", str(empty)]):
        code, err = _report([*argv, "--output", str(tmp_path / "out")])
        assert code == 2 and f"{empty} has no cases" in err and "measured nothing" in err
    assert kernel == [] and not (tmp_path / "out").exists()


def test_relative_inputs_reach_the_notebook_as_absolute_paths(
    kernel: list[dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The notebook runs in the repository root: `--input runs/good` passed the check here, then
    the notebook said it did not exist."""
    copy_run(FIXTURE_RUN, tmp_path / "runs" / "good")
    monkeypatch.chdir(tmp_path)
    code, _ = _report(["--input", "x=runs/good", "--input", "runs/good", "--output", "out/i"])
    assert code == 2 and len(kernel) == 1
    inputs = kernel[0]["inputs"]
    assert inputs == [f"x={tmp_path / 'runs' / 'good'}", f"good={tmp_path / 'runs' / 'good'}"]
    assert all(Path(i.split("=", 1)[1]).is_absolute() for i in inputs)


def test_a_report_refused_by_its_notebook_leaves_no_output_folder(kernel: list[dict], tmp_path: Path) -> None:
    out = tmp_path / "new" / "out"
    code, err = _report(["--input", f"x={FIXTURE_RUN}", "--output", str(out)])
    assert code == 2 and "the notebook refused" in err and len(kernel) == 1
    assert not (tmp_path / "new").exists()  # made by this report, so taken back with its half-written table
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "mine.txt").write_text("mine\n")
    code, _ = _report(["--run", str(FIXTURE_RUN), "--output", str(tmp_path / "kept" / "r")])
    assert code == 2 and sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["mine.txt"]


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", ".", "x\0y"])
def test_a_name_that_is_a_path_is_refused(name: str, kernel: list[dict], tmp_path: Path) -> None:
    """`--name ../escape` wrote escape.html beside --output, outside it."""
    out = tmp_path / "o" / "out"
    code, err = _report(["--input", f"x={FIXTURE_RUN}", "--output", str(out), "--name", name])
    assert code == 2 and "--name" in err and "not a plain file name" in err
    assert kernel == [] and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--output", "{tmp}/afile"], "is a file"),
        (["--output", "/proc/nope"], "cannot create the report folder"),
    ],
)
def test_an_output_that_cannot_be_a_folder_is_one_sentence(
    argv: list[str], words: str, kernel: list[dict], tmp_path: Path
) -> None:
    (tmp_path / "afile").write_text("mine\n")
    argv = [a.format(tmp=tmp_path) for a in argv]
    for given in (["--run", str(FIXTURE_RUN)], ["--input", f"x={FIXTURE_RUN}"]):
        code, err = _report([*given, *argv])
        assert code == 2 and words in err
    assert kernel == [] and (tmp_path / "afile").read_text() == "mine\n"


def test_a_transfer_run_given_as_a_read_run_is_named(kernel: list[dict], tmp_path: Path) -> None:
    run = tmp_path / "t"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "t", "kind": "transfer", "schema": 1}))
    (run / "transfers.csv").write_text("x\n")
    code, err = _report(["--run", str(run), "--output", str(tmp_path / "out")])
    assert code == 2 and "is a transfer run" in err and "shotbench report --transfer" in err


def test_output_folder_takes_back_only_the_folders_it_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`new/../out` makes `new` and `out`: both go on a refusal, the folder that holds them stays."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "there").mkdir()
    with pytest.raises(UserError), output_folder(Path("new/../out"), "report folder"):
        assert (tmp_path / "out").is_dir()
        raise UserError("refused.")
    assert sorted(os.listdir(tmp_path)) == ["there"]
    with pytest.raises(UserError), output_folder(tmp_path / "there", "report folder"):
        (tmp_path / "there" / "x.csv").write_text("x\n")
        raise UserError("refused.")
    assert (tmp_path / "there").is_dir()  # it was there before: kept

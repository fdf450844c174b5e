"""`shotbench transfer` and `report --transfer` refuse what a careless user gives them in one
sentence, before a server, a credentials check or a notebook kernel (commands/transfer.py,
transfer/runfolder.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shotbench.cli import main
from shotbench.transfer.rows import CASE_COLUMNS
from support.golden import RUN_FIXTURE  # a bench run folder: run.json, cases.csv, workers.csv

ROW = {
    "run-id": "20261128T000000Z-abcdef",
    "case-id": "upload-shotbench-c16-4x1MiB",
    "trial": "0",
    "order": "0",
    "direction": "upload",
    "tool": "shotbench",
    "mode": "sync",
    "network": "loopback",
    "concurrency": "16",
    "test": "4 File/1 MiB ea",
    "file-count": "4",
    "file-size": "1048576",
    "total-bytes": "4194304",
    "seconds": "0.5000",
    "mb-per-s": "8.39",
    "files-ok": "4",
}


def _transfer_run(tmp_path: Path, cases: str | None = None, meta: str | None = None) -> Path:
    """A transfer run folder with one case; `cases`/`meta` replace its cases.csv/run.json text.
    No transfers.csv: without the up-front check `report --transfer` stops at render_run's own
    check for it, never at a notebook kernel."""
    run = tmp_path / "20261128T000000Z-abcdef"
    run.mkdir()
    good = ",".join(CASE_COLUMNS) + "\n" + ",".join(ROW.get(c, "") for c in CASE_COLUMNS) + "\n"
    (run / "cases.csv").write_text(good if cases is None else cases)
    (run / "run.json").write_text(json.dumps({"kind": "transfer", "schema": 1}) if meta is None else meta)
    return run


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("shotbench: ") and "\n" not in err and "Traceback" not in err
    return err


def test_check_reads_a_whole_transfer_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["transfer", "--check", str(_transfer_run(tmp_path))]) == 1  # shotbench alone: no rival to pass
    assert "stage threshold" in capsys.readouterr().out


@pytest.mark.parametrize("flag", [["transfer", "--check"], ["transfer", "--resume"], ["report", "--transfer"]])
def test_a_bench_run_folder_is_named_as_such_with_what_reads_it(
    flag: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused(
        [*flag, str(RUN_FIXTURE), *(["--output", str(tmp_path / "out")] if flag[0] == "report" else [])], capsys
    )
    assert "is a bench run folder, not a transfer run" in err and f"data/transfer/<run-id> folder to {flag[1]}" in err
    if flag[1] == "--resume":
        assert "`shotbench bench --resume" in err and "damaged" not in err
    else:
        assert f"`shotbench report --run {RUN_FIXTURE}` or `shotbench compare`" in err
    assert not (tmp_path / "out").exists()


DAMAGED_CASES = [
    ("", "is empty"),
    ('a,b,c\n1,2\n"unterminated\n', "not a readable CSV"),
    ("a,b,c\n1,2,3\n", "lacks the columns direction, tool, test, error"),
    (",".join(CASE_COLUMNS) + "\n" + ",".join("abc" if c == "seconds" else ROW.get(c, "") for c in CASE_COLUMNS) + "\n",
     "column seconds holds 'abc', not a number"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "why"), DAMAGED_CASES)
@pytest.mark.parametrize("flag", [["transfer", "--check"], ["report", "--transfer"]])
def test_a_damaged_cases_csv_is_named(
    flag: list[str], text: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _transfer_run(tmp_path, cases=text)
    out = tmp_path / "out"
    err = _refused([*flag, str(run), *(["--output", str(out)] if flag[0] == "report" else [])], capsys)
    assert (
        f"{run / 'cases.csv'} is damaged (" in err and why in err and "start a new run with `shotbench transfer`" in err
    )
    assert not out.exists()


def test_report_refuses_a_damaged_run_json_before_the_notebook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _transfer_run(tmp_path, meta='{"kind": "transfer", ')
    out = tmp_path / "out"
    err = _refused(["report", "--transfer", str(run), "--output", str(out)], capsys)
    assert f"{run / 'run.json'} is damaged" in err and "restore it from a copy, or delete it" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--tools", ","], "--tools is empty; give at least one tool from: aws-s3-sync,"),
        (["--rows", "1x0MiB"], "the row '1x0MiB' has files of 0 bytes; write rows like 1000x1MiB"),
        (["--rows", "10x1MiB,1x0.4b"], "the row '1x0.4b' has files of 0 bytes"),
    ],
)
def test_an_empty_tool_list_and_a_zero_size_row_are_refused_with_the_arguments(
    args: list[str], said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # With no credentials for --data, a value that got past argument checking stops at the
    # credentials check (as it did before the fix), never at the embedded server.
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    out = tmp_path / "runs"
    out.mkdir()
    err = _refused(["transfer", *args, "--data", "s3://bucket/prefix", "--networks", "none", "--out", str(out)], capsys)
    assert said in err
    assert not any(out.iterdir())


@pytest.mark.parametrize(
    ("flag", "said"),
    [
        (["--server-storage", "memory"], "--server-storage places the embedded server's objects; drop it with --data."),
        (["--server-cpus", "split"], "--server-cpus places the embedded server's processes; drop it with --data."),
    ],
)
def test_placing_the_server_with_a_users_s3_is_refused_naming_the_fix(
    flag: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "runs"
    out.mkdir()
    args = [*flag, "--data", "s3://bucket/prefix", "--networks", "none", "--out", str(out)]
    err = _refused(["transfer", *args], capsys)
    assert said in err
    assert not any(out.iterdir())

"""The run core both benchmarks write through (shotbench.runs): appends, resume, run.json, lookups.

No server, no subprocess: run folders in tmp_path, written and read back.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

from shotbench.errors import UserError
from shotbench.plan.matrix import Matrix, plan_cases
from shotbench.runs import SCHEMA, RunFolder, RunKind, interleave, kind_of, latest_run, read_meta, run_folders
from shotbench.studies.direction.ablation_run import DirectionRun
from shotbench.transfer import execute as transfer
from shotbench.transfer.cases import MiB, Row
from shotbench.transfer.rows import case_trial

REPO = Path(__file__).resolve().parents[2]
CASES, DETAILS = ["run-id", "case-id", "trial", "total"], ["case-id", "trial", "bytes"]
READ = RunKind("read", CASES, DETAILS)
TRANSFER = RunKind("transfer", CASES, DETAILS, key=case_trial)


def case(cid: str, trial: int = 1, total: float = 1.0) -> tuple[list[dict], dict]:
    return (
        [{"case-id": cid, "trial": trial, "bytes": 10}, {"case-id": cid, "trial": trial, "bytes": 20}],
        {"run-id": "r", "case-id": cid, "trial": trial, "total": total},
    )


def test_appended_cases_read_back_in_order(tmp_path: Path) -> None:
    folder = RunFolder.create(tmp_path / "r", READ, {"run_id": "r"})
    folder.append_case(*case("t1-a"))
    folder.append_case(*case("t1-b", total=2.5))
    assert [(r["case-id"], r["total"]) for r in folder.cases()] == [("t1-a", "1.0"), ("t1-b", "2.5")]
    assert [r["bytes"] for r in folder.details()] == ["10", "20", "10", "20"]
    assert folder.details_csv.name == "workers.csv"
    assert folder.cases_csv.read_text().splitlines()[0] == ",".join(CASES)
    with pytest.raises(FileExistsError):  # a run id is never reused
        RunFolder.create(tmp_path / "r", READ, {"run_id": "r"})


def test_a_torn_last_line_is_ignored_and_cut_before_the_next_append(tmp_path: Path) -> None:
    folder = RunFolder.create(tmp_path / "r", READ, {"run_id": "r"})
    folder.append_case(*case("t1-a"))
    with open(folder.cases_csv, "a") as fh:
        fh.write("r,t1-b,1,0.")  # killed mid-row: no newline
    assert [r["case-id"] for r in folder.cases()] == ["t1-a"]
    folder.append_case(*case("t1-c"))
    assert [r["case-id"] for r in folder.cases()] == ["t1-a", "t1-c"]
    assert "t1-b" not in folder.cases_csv.read_text()


def test_repair_keeps_committed_cases_and_drops_the_rest(tmp_path: Path) -> None:
    folder = RunFolder.create(tmp_path / "r", READ, {"run_id": "r"})
    folder.append_case(*case("t1-a"))
    folder.append_case(*case("t1-bad", total=-1))
    folder.append_case(*case("t1-open"))
    lines = folder.cases_csv.read_text().splitlines(keepends=True)
    folder.cases_csv.write_text("".join(lines[:-1]))  # stopped after its details, before its case row
    done = folder.repair(keep=lambda row: float(row["total"]) >= 0)
    assert done == {"t1-a"}
    assert [r["case-id"] for r in folder.cases()] == ["t1-a"]
    assert {r["case-id"] for r in folder.details()} == {"t1-a"}


def test_transfer_cases_are_keyed_by_case_and_trial(tmp_path: Path) -> None:
    folder = RunFolder.create(tmp_path / "x", TRANSFER, {"run_id": "x"})
    folder.append_case(*case("upload-a", trial=0))
    folder.append_case(*case("upload-a", trial=1))
    assert folder.repair() == {("upload-a", 0), ("upload-a", 1)}
    assert len(folder.details()) == 4 and folder.details_csv.name == "transfers.csv"


def test_repair_gives_an_older_folder_the_new_columns(tmp_path: Path) -> None:
    old = RunFolder.create(tmp_path / "r", RunKind("read", CASES[:-1], DETAILS), {"run_id": "r"})
    old.append_case(*case("t1-a"))
    folder = RunFolder(old.path, READ)
    assert folder.repair() == {"t1-a"}
    folder.append_case(*case("t1-b", total=3.0))
    assert [(r["case-id"], r["total"]) for r in folder.cases()] == [("t1-a", ""), ("t1-b", "3.0")]


def test_run_json_is_replaced_whole_with_schema_and_kind(tmp_path: Path) -> None:
    folder = RunFolder.create(tmp_path / "r", READ, {"run_id": "r", "status": "running"})
    folder.write_meta({"run_id": "r", "status": "complete"})
    meta = read_meta(folder.path)
    assert meta == {"run_id": "r", "status": "complete", "schema": SCHEMA, "kind": "read"}
    assert [p.name for p in folder.path.iterdir() if p.suffix == ".tmp"] == []


def test_an_old_run_json_without_schema_loads_and_a_newer_one_is_refused(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "run.json").write_text('{"run_id": "old"}')
    assert read_meta(tmp_path / "old") == {"run_id": "old"}
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "run.json").write_text(json.dumps({"run_id": "new", "schema": SCHEMA + 1}))
    with pytest.raises(UserError, match="newer than this shotbench reads"):
        read_meta(tmp_path / "new")
    (tmp_path / "list").mkdir()
    (tmp_path / "list" / "run.json").write_text("[1, 2]")
    with pytest.raises(ValueError):
        read_meta(tmp_path / "list")


def test_latest_run_of_each_kind(tmp_path: Path) -> None:
    assert latest_run(tmp_path / "none", "read") is None
    RunFolder.create(tmp_path / "20260101T000000Z-aaaaaa", READ, {"run_id": "a"})
    RunFolder.create(tmp_path / "20260102T000000Z-bbbbbb", TRANSFER, {"run_id": "b"})
    RunFolder.create(tmp_path / "20260103T000000Z-cccccc", READ, {"run_id": "c"})
    (tmp_path / "20260104T000000Z-notes").mkdir()  # not a run folder
    assert latest_run(tmp_path, "direction") is None
    ablation = tmp_path / "20260105T000000Z-dddddd"  # as `shotbench direction` writes it, a read run inside
    RunFolder.create(ablation / "settings" / "base" / "20260105T000001Z-eeeeee", READ, {"run_id": "e"})
    meta = DirectionRun(run_id=ablation.name, started="", trials=3, signals_files=1, signals_names=1)
    (ablation / "run.json").write_text(json.dumps(asdict(meta)))
    assert latest_run(tmp_path, "read").name == "20260103T000000Z-cccccc"
    assert latest_run(tmp_path, "transfer").name == "20260102T000000Z-bbbbbb"
    assert latest_run(tmp_path, "direction") == ablation and kind_of(ablation) == "direction"
    assert [p.name[-6:] for p in run_folders(tmp_path, "read")] == ["aaaaaa", "cccccc"]


def test_published_folders_written_before_kind_existed_are_told_apart_by_their_files(tmp_path: Path) -> None:
    published = {  # data/runs also holds an ablation folder (kind "direction")
        k: sorted(p for p in (REPO / "data" / d).iterdir() if p.is_dir() and kind_of(p) == k)
        for k, d in (("read", "runs"), ("transfer", "transfer"), ("direction", "runs"))
    }
    old = [p for p in published["read"] if "kind" not in json.loads((p / "run.json").read_text())]
    assert old, "data/runs holds runs written before run.json had a kind"
    assert {kind_of(p) for p in old} == {"read"}
    assert latest_run(REPO / "data" / "runs", "read") == published["read"][-1]
    assert latest_run(REPO / "data" / "runs", "transfer") is None
    assert latest_run(REPO / "data" / "runs", "direction") == published["direction"][-1]
    assert json.loads((published["direction"][-1] / "run.json").read_text())["kind"] == "direction"
    assert latest_run(REPO / "data" / "transfer", "transfer") == published["transfer"][-1]
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "transfers.csv").write_text("run-id\n")
    assert kind_of(tmp_path / "bare") == "transfer"


def test_interleave_shuffles_each_trial_on_its_own() -> None:
    order = interleave("abcdef", range(1, 4), lambda t: random.Random(t))
    assert [t for t, _ in order] == [1] * 6 + [2] * 6 + [3] * 6
    assert all(sorted(x for t, x in order if t == trial) == list("abcdef") for trial in (1, 2, 3))
    assert order == interleave("abcdef", range(1, 4), lambda t: random.Random(t))
    assert [x for _, x in order[:6]] != [x for _, x in order[6:12]]


def test_both_benchmarks_keep_their_case_order_for_a_seed() -> None:
    """Pinned from the orders before the run core was shared: a seed means the same order."""
    m = Matrix(backends=["ros3-2.0", "raw-get"], modes=["shots"], workers=[1, 2], page_buffers=[0], trials=2)
    assert [c.case_id for c in plan_cases(m, 7, {"ros3-2.0": True, "raw-get": False})] == [
        "t1-ros3-2.0-shots-w1-pb0-cc1048576",
        "t1-raw-get-shots-w2-pb0-cc0",
        "t1-raw-get-shots-w1-pb0-cc0",
        "t1-ros3-2.0-shots-w2-pb0-cc1048576",
        "t2-raw-get-shots-w2-pb0-cc0",
        "t2-raw-get-shots-w1-pb0-cc0",
        "t2-ros3-2.0-shots-w1-pb0-cc1048576",
        "t2-ros3-2.0-shots-w2-pb0-cc1048576",
    ]
    cases = [transfer.Case("upload", t, 4, Row(1, MiB)) for t in "abcd"]
    assert [(t, c.tool) for t, c in transfer.case_order(cases, trials=2, seed=7)] == [
        (0, "d"),
        (0, "b"),
        (0, "a"),
        (0, "c"),
        (1, "d"),
        (1, "b"),
        (1, "c"),
        (1, "a"),
    ]


def test_commands_refuse_a_run_from_a_newer_shotbench_in_one_sentence(tmp_path: Path, capsys) -> None:
    from shotbench.cli import main

    published = run_folders(REPO / "data" / "runs", "read")[-1]
    for name in ("a", "b"):
        shutil.copytree(published, tmp_path / name)
    meta = json.loads((tmp_path / "b" / "run.json").read_text())
    (tmp_path / "b" / "run.json").write_text(json.dumps({**meta, "schema": SCHEMA + 1}))
    for argv in (
        ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--output", str(tmp_path / "out")],
        ["bench", "--resume", str(tmp_path / "b")],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "newer than this shotbench reads" in err and "update shotbench" in err


@pytest.mark.parametrize("schema", [0, -1, "1", True, None])
def test_run_format_no_shotbench_wrote_is_one_sentence(tmp_path: Path, schema: object) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"run_id": "odd", "schema": schema}))
    with pytest.raises(UserError, match=r"which no shotbench wrote \(formats start at 1\); fix its `schema` field"):
        read_meta(tmp_path)

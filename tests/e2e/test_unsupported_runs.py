"""Unsupported is not failed: a reader that cannot read a file shape is a finding, one that
crashes or returns wrong bytes is a failure.

The run tests are real `shotbench bench` runs (embedded server, Dask workers, the readers in
their own environment). Wrong bytes come from a real mechanism: kerchunk reading through a
deliberately corrupted index (two chunk references of one signal swapped), as a stale index
would after its file was rewritten.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from shotbench.analyse import byteverdict, capability
from shotbench.commands.bench import finish_message
from shotbench.records.status import (
    COMPLETE,
    FAILED,
    OK,
    PARTIAL,
    UNSUPPORTED,
    case_status,
    is_failure,
    run_status,
    task_status,
)
from shotbench.store.s3 import without_s3_settings

PYFIVE_V4 = "unsupported: pyfive: Pyfive cannot yet read HDF5 files with layout class 4 (layouts/single-16MB/1.h5)"


def test_unsupported_is_a_status_of_its_own_that_never_sinks_a_run() -> None:
    assert task_status(PYFIVE_V4) == UNSUPPORTED and task_status("k: OSError: boom") == FAILED
    assert case_status([OK, UNSUPPORTED], False) == UNSUPPORTED  # a partial read is no measurement
    assert case_status([UNSUPPORTED, UNSUPPORTED], False) == UNSUPPORTED
    assert case_status([UNSUPPORTED, FAILED], False) == FAILED
    assert case_status([OK, FAILED], False) == PARTIAL
    assert case_status([OK, UNSUPPORTED], True) == PARTIAL  # the case itself broke: not a finding
    assert run_status([OK, UNSUPPORTED, UNSUPPORTED]) == COMPLETE
    assert run_status([OK, UNSUPPORTED, FAILED]) == PARTIAL
    assert [is_failure(s) for s in (OK, UNSUPPORTED, FAILED, PARTIAL, "timeout")] == [False, False, True, True, True]
    rows = [{"status": OK}, {"status": UNSUPPORTED, "first-error": PYFIVE_V4}]
    assert finish_message(rows, Path("cases.csv")) == (0, "")
    n, text = finish_message([*rows, {"status": FAILED, "first-error": "k: crashed"}], Path("cases.csv"))
    assert n == 1 and "crashed" in text


def test_byte_verdicts_tell_unsupported_from_wrong_bytes() -> None:
    from shotbench.plan.matrix import ShotFile

    f = ShotFile("a.h5", 1, "1", ("x", "y"))
    want = {"a.h5/x": "0" * 64, "a.h5/y": "1" * 64}
    assert byteverdict.verdict("r", "fam", f, dict(want), want, True).status == OK
    assert (
        byteverdict.verdict("r", "fam", f, {**want, "a.h5/y": "unsupported: r: no"}, want, True).status == UNSUPPORTED
    )
    wrong = byteverdict.verdict("r", "fam", f, {**want, "a.h5/y": "2" * 64}, want, True)
    assert wrong.status == byteverdict.WRONG and wrong.is_failure and "a.h5/y" in wrong.reason
    crash = byteverdict.verdict("r", "fam", f, {**want, "a.h5/x": "a.h5: KeyError: 'x'"}, want, True)
    assert crash.status == FAILED and crash.is_failure
    assert "r on fam: wrong bytes" in byteverdict.failure_message([wrong])


def test_capability_matrix_marks_each_reader_and_family_with_its_reason() -> None:
    verdicts = [
        byteverdict.Verdict("pyfive", "compat", "k", OK, 61),
        byteverdict.Verdict("pyfive", "single-16MB", "k", UNSUPPORTED, 61, PYFIVE_V4),
        byteverdict.Verdict("h5coro", "compat", "k", OK, 61, scales=False),
        byteverdict.Verdict(
            "kerchunk", "compat", "k", byteverdict.WRONG, 61, "k/x: bytes differ from h5py's on the local copy"
        ),
    ]
    cases = pd.DataFrame(
        [
            {
                "backend": "h5coro",
                "file-family": "single-16MB",
                "status": UNSUPPORTED,
                "first-error": "unsupported: h5coro: unsupported superblock version: 3 (layouts/single-16MB/1.h5)",
            },
            {"backend": "pyfive", "file-family": "compat", "status": OK, "first-error": ""},
        ]
    )
    table = capability.matrix(capability.capabilities(verdicts, cases))
    assert table.loc["pyfive", "compat"] == "✓"
    assert table.loc["pyfive", "single-16MB"] == "✗ Pyfive cannot yet read HDF5 files with layout class 4"
    assert table.loc["h5coro", "single-16MB"] == "✗ unsupported superblock version: 3"
    assert table.loc["h5coro", "compat"].startswith("✓ signal data only")
    assert table.loc["kerchunk", "compat"].startswith("✗ wrong bytes")
    assert table.loc["kerchunk", "single-16MB"] == "not run"


TINY = """
shots = 4
signals = 12
file_size = 2000000
page_size = 1000000
signals_files = 2
signals_names = 4
page_buffers = [0]
workers = [1]
trials = 1
modes = ["shots"]
backends = {backends}
[options.kerchunk]
index_dir = "{index}"
"""


def bench(
    tmp_path: Path, shot_dir: Path, backends: list[str], state: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """A run of `backends` on the tiny files; its config, index and runs under `tmp_path`, its
    embedded server's state there too unless `state` names another run's (its server and objects)."""
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY.format(backends=json.dumps(backends), index=tmp_path / "index"))
    env = without_s3_settings()
    env["SHOTBENCH_STATE"] = str(state or tmp_path / "state")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "shotbench.cli",
            "bench",
            "--config",
            str(cfg),
            "--shots-dir",
            str(shot_dir),
            "--runs-dir",
            str(tmp_path / "runs"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def cases(tmp_path: Path) -> list[dict[str, str]]:
    runs = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    with open(sorted(runs)[-1] / "cases.csv", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def mixed_run(
    tmp_path_factory: pytest.TempPathFactory, shot_dir: Path
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One run of fsspec, pyfive and h5coro (unsupported on the default v110 paged files) and
    kerchunk, which builds its indexes in it: the first test reads the run, the second corrupts a
    copy of the indexes. One run instead of two: each is a server, a driver and Dask workers."""
    tmp = tmp_path_factory.mktemp("mixed")
    return tmp, bench(tmp, shot_dir, ["fsspec", "pyfive", "h5coro", "kerchunk"])


@pytest.mark.slow
def test_a_run_whose_only_problems_are_unsupported_cases_exits_0(mixed_run) -> None:
    """pyfive and h5coro on the default (v110 paged) files: unsupported, not failed; exit 0."""
    tmp_path, proc = mixed_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    by_backend = {r["backend"]: r for r in cases(tmp_path)}
    assert by_backend["fsspec"]["status"] == by_backend["kerchunk"]["status"] == OK
    assert by_backend["pyfive"]["status"] == by_backend["h5coro"]["status"] == UNSUPPORTED
    assert "layout class 4" in by_backend["pyfive"]["first-error"]
    run = sorted(p for p in (tmp_path / "runs").iterdir() if p.is_dir())[-1]
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == COMPLETE and meta["errors"] == 0 and meta["unsupported"] == 2
    checked = {(v["backend"], v["status"]) for v in meta["readcheck"]}
    assert checked == {("fsspec", OK), ("pyfive", UNSUPPORTED), ("h5coro", UNSUPPORTED), ("kerchunk", OK)}
    assert capability.run_matrix(run).loc["pyfive"].iloc[0].startswith("✗ Pyfive cannot yet read")


def swap_two_chunks(index: Path) -> int:
    """In every kerchunk index: swap the references of the first signal with two stored chunks."""
    done = 0
    for path in index.glob("*.json"):
        if path.name.endswith(".meta.json"):
            continue
        doc = json.loads(path.read_text())
        refs = doc.get("refs", doc)
        for key, value in refs.items():
            if "/signals/" in key and key.endswith("/0") and isinstance(value, list):
                other = key[:-1] + "1"
                if isinstance(refs.get(other), list) and refs[other][2] != value[2]:
                    refs[key], refs[other] = refs[other], value
                    done += 1
                    break
        path.write_text(json.dumps(doc))
    return done


@pytest.mark.slow
def test_a_reader_returning_wrong_bytes_fails_the_run_and_is_named(mixed_run, tmp_path: Path, shot_dir: Path) -> None:
    """kerchunk through an index whose chunk references were swapped: exit 1, kerchunk named."""
    import shutil

    first, proc = mixed_run  # built the indexes; kerchunk's bytes there were h5py's
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {r["backend"]: r["status"] for r in cases(first)}["kerchunk"] == OK
    shutil.copytree(first / "index", tmp_path / "index")
    assert swap_two_chunks(tmp_path / "index") >= 1
    proc = bench(tmp_path, shot_dir, ["kerchunk"], state=first / "state")
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = [ln for ln in proc.stderr.splitlines() if ln.startswith("shotbench: ")][-1]
    assert "kerchunk" in last and "wrong bytes" in last and "Traceback" not in proc.stderr

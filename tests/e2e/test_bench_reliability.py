"""The last mile of reliability: each row of what a hostile user found, reproduced and held.

Real bench processes on real (local) shot files; nothing of the system under test is mocked.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from support.bench import assert_one_sentence, refuse, run_bench
from support.proxies import OneStall, silent_port
from support.runfolder import case_rows, only_run

TINY = ["--backends", "local", "--modes", "shots", "--page-buffers", "0", "--trials", "1"]


def _strict(text: str) -> object:
    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory, shot_dir: Path) -> tuple[Path, str]:
    """One finished run of `local` with 1 and 2 workers and two trials, its selections given twice
    (the folder and its stdout): the tests below read it, or a copy they damage, instead of making
    a run each (a driver and Dask workers per run)."""
    tmp = tmp_path_factory.mktemp("local-run")
    args = ["--data", str(shot_dir), "--modes", "shots", "--page-buffers", "0", "--trials", "2"]
    proc = run_bench([*args, "--workers", "1", "1", "2", "--backends", "local", "local"], tmp)
    assert proc.returncode == 0, proc.stderr
    return only_run(tmp / "runs"), proc.stdout


@pytest.mark.slow
def test_duplicate_selections_are_measured_once(local_run: tuple[Path, str]) -> None:
    """`--workers 1 1 --backends local local` gave 4 rows with one case id ("cases 4")."""
    run, stdout = local_run
    assert "workers: 1 given more than once" in stdout and "backends: local given more than once" in stdout
    ids = [r["case-id"] for r in case_rows(run)]
    assert len(ids) == 4 == len(set(ids))  # 2 worker counts x 2 trials, each once


def test_zero_and_off_are_one_page_buffer() -> None:
    from shotbench.plan import profiles

    notes: list[str] = []
    cfg = profiles.load("quick", None, {"page_buffers": ["0", "off", "default"], "workers": [2, 1, 2]}, notes)
    assert cfg.page_buffers == ["0", "default"] and cfg.workers == [2, 1] and len(notes) == 2


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "+inf"])
def test_non_finite_settings_are_refused(value: str, tmp_path: Path) -> None:
    """TOML `task_timeout = inf` was a traceback and a run folder with 0 cases; `nan` was accepted
    and run.json then held NaN."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"task_timeout = {value}\n")
    assert_one_sentence(
        refuse(["--config", str(cfg), "--backends", "local"], tmp_path), tmp_path, "task_timeout", "finite"
    )


def test_run_json_is_strict_json(tmp_path: Path) -> None:
    """A NaN or infinity anywhere in the metadata is written as null, never as NaN."""
    from shotbench.records.schema import RUN_KIND
    from shotbench.runs import RunFolder

    folder = RunFolder.create(tmp_path / "run", RUN_KIND, {"a": math.nan, "b": [math.inf, 1.5], "c": {"d": -math.inf}})
    meta = _strict((folder.path / "run.json").read_text())
    assert meta["a"] is None and meta["b"] == [None, 1.5] and meta["c"] == {"d": None}


@pytest.mark.slow
def test_a_real_run_json_is_strict_json(local_run: tuple[Path, str]) -> None:
    _strict((local_run[0] / "run.json").read_text())


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
    assert_one_sentence(refuse(["--config", str(path)], tmp_path), tmp_path, "config")


@pytest.mark.slow
def test_a_torn_row_in_the_middle_is_set_aside_and_measured_again(local_run: tuple[Path, str], tmp_path: Path) -> None:
    """A line of cases.csv cut in half (newline kept) was a traceback in the report, and `--resume`
    said "already complete", so the torn row counted as measured."""
    import shutil

    run = tmp_path / "runs" / local_run[0].name  # a copy of the finished run: this test damages it
    shutil.copytree(local_run[0], run)
    lines = (run / "cases.csv").read_text().splitlines(keepends=True)
    assert len(lines) == 5
    torn_id = next(csv.reader([lines[2]]))[1]
    lines[2] = lines[2][: len(lines[2]) // 2] + "\n"
    (run / "cases.csv").write_text("".join(lines))

    from shotbench.analyse import analysis
    from shotbench.records.schema import RUN_KIND
    from shotbench.runs import RunFolder

    assert len(RunFolder(run, RUN_KIND).cases()) == 3  # the torn row is never counted
    ds = analysis.load([str(run)])
    assert len(ds.cases) == 3 and any("set aside" in n for n in ds.notes)
    from shotbench.analyse import decision

    decision.decision_table(ds)  # what the report computes from it

    resumed = run_bench(["--resume", str(run)], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "set aside 1 torn or invalid row" in resumed.stdout and "already complete" not in resumed.stdout
    rows = case_rows(run)
    assert len(rows) == 4 and len({r["case-id"] for r in rows}) == 4
    assert {r["status"] for r in rows} == {"ok"} and torn_id in {r["case-id"] for r in rows}
    assert (run / "cases.set-aside.csv").read_text().count("\n") == 1


# ------------------------------------------------------------------ a dead dependency stops the run


def test_the_watchdog_needs_several_failed_checks() -> None:
    """One failed check is a fault (a reset under a fault profile); three in a row are a dead server."""
    import socket

    from shotbench.bench.watchdog import ServerGone, Watchdog

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens here: connection refused
    dog = Watchdog(f"http://127.0.0.1:{port}", interval=0.0, failures=3)
    dog()
    dog()
    with pytest.raises(ServerGone, match="stopped answering.*server gone.*--resume"):
        dog()
    with silent_port() as sport:
        dog = Watchdog(None, scheduler=f"tcp://127.0.0.1:{sport}", interval=0.0, failures=2, timeout=0.5)
        dog()
        with pytest.raises(ServerGone, match="Dask scheduler"):
            dog()


@pytest.mark.slow  # real Dask processes, and a wait that is the point of the test
def test_a_silent_scheduler_is_refused_within_30_s(tmp_path: Path) -> None:
    """`--scheduler` on a port that accepts and never answers waited the 300 s prepare timeout per case."""
    import time

    t0 = time.time()
    with silent_port() as port:
        proc = run_bench(
            ["--scheduler", f"tcp://127.0.0.1:{port}", "--backends", "local", "--data", str(tmp_path)], tmp_path
        )
    assert time.time() - t0 < 30
    assert_one_sentence(proc, tmp_path, f"127.0.0.1:{port}", "sent nothing")


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["ros3-2.0", "ros3-1.14"])
def test_kill_9_of_the_server_mid_case_ends_the_run_within_a_minute(backend: str, tmp_path: Path) -> None:
    """`kill -9` of the S3 server while a ros3-2.0 case reads: the run was still running, silent,
    after 120 s (ROS3 has no per-request timeout). Now it ends within 60 s: exit 1, one sentence,
    run.json failed, the case failed with its reason, and a resume once the server is back
    finishes the run."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from shotbench.backends import registry
    from shotbench.hdf5.synthesis import make_dataset
    from shotbench.store import embedded as server
    from shotbench.store.s3 import parse_location, without_s3_settings
    from shotbench.store.staging import stage

    if not Path(registry.get(backend).python()).exists():
        pytest.fail(f"the {backend} environment is missing: run `make envs` before the slow tests")
    shots = tmp_path / "shots"
    make_dataset(shots, shots=2, signals=61, file_size=16_000_000, page_size=8_000_000, seed=0)
    # a trial opens 2 files once per signal (122 opens) and lasts seconds, so the kill lands
    # mid-case; 4 files (244 opens a trial) cost most of a minute of suite time. One trial: the
    # resume measures the killed one again, which is the whole case (a second trial doubled it)
    (tmp_path / "c.toml").write_text(
        f'backends = ["{backend}"]\nmodes = ["signals"]\nworkers = [1]\npage_buffers = [0]\ntrials = 1\n'
        "signals_files = 0\nsignals_names = 0\n"
    )
    base = {**without_s3_settings(), "SHOTBENCH_STATE": str(tmp_path / "state")}
    cmd = [
        sys.executable,
        "-m",
        "shotbench.cli",
        "bench",
        "--runs-dir",
        str(tmp_path / "runs"),
        "--data",
        "s3://gone/shots/",
        "--config",
        str(tmp_path / "c.toml"),
    ]
    state = tmp_path / "server"
    with server.embedded_server(state) as info:
        cfg = info.s3config()
        cfg.boto3_client().create_bucket(Bucket="gone")
        stage(shots, parse_location("s3://gone/shots/"), cfg, jobs=4, progress=False)
        proc = subprocess.Popen(
            cmd, env={**base, **cfg.env_vars()}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            deadline = time.time() + 300
            while not list((tmp_path / "runs").glob("*/run.json")) and time.time() < deadline and proc.poll() is None:
                time.sleep(0.2)
            log = Path(info.access_log)
            mark = log.stat().st_size
            while log.stat().st_size == mark and time.time() < deadline and proc.poll() is None:
                time.sleep(0.1)  # the case's first GETs: a ROS3 read is in flight
            time.sleep(0.5)
            assert proc.poll() is None, proc.communicate()
            os.kill(info.pid, signal.SIGKILL)
            killed = time.time()
            _, err = proc.communicate(timeout=120)
            took = time.time() - killed
        finally:
            if proc.poll() is None:
                proc.kill()
    print(f"{backend}: the run ended {took:.1f} s after kill -9 of the server")
    assert took < 60, f"the run took {took:.0f} s to end after the kill"
    assert proc.returncode == 1, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "stopped answering" in lines[0] and "--resume" in lines[0], err
    run = only_run(tmp_path / "runs")
    assert json.loads((run / "run.json").read_text())["status"] == "failed"
    rows = case_rows(run)
    assert rows and rows[-1]["status"] == "failed" and "server gone" in rows[-1]["first-error"], rows[-1]

    with server.embedded_server(state) as info:  # the server is back, with its data
        resumed = subprocess.run(
            [*cmd[:4], "--runs-dir", str(tmp_path / "runs"), "--resume", str(run)],
            env={**base, **info.s3config().env_vars()},
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert resumed.returncode == 0, resumed.stderr
    rows = case_rows(run)
    assert len(rows) == 1 and rows[0]["status"] == "ok"  # measured again, once, not beside the failed row
    assert json.loads((run / "run.json").read_text())["status"] == "complete"


# ------------------------------------------------------------------ stalls are not measurements


def test_stalled_times_are_told_from_ordinary_spread() -> None:
    from shotbench.records.status import stalled

    assert stalled([1.0, 1.2, 0.9, 134.0]) == [False, False, False, True]
    assert stalled([0.01, 0.02, 3.0]) == [False, False, False]  # 150x, but under 5 s beyond: noise
    assert stalled([2.5, 134.0]) == [False, True]
    assert stalled([1.0]) == [False]  # no peer, no verdict
    # a task that read 100x the bytes is slow, not stalled
    assert stalled([0.5, 0.6, 60.0], [1e6, 1e6, 1e8]) == [False, False, False]
    assert stalled([0.5, 0.6, 60.0], [1e6, 1e6, 1e6]) == [False, False, True]


def _case_rows(case_id: str, total: float, n: int = 1) -> tuple[list[dict[str, object]], dict[str, object]]:
    details = [
        {"case-id": case_id, "worker#": i + 1, "open+read-data-time": total / n, "status": "ok", "backend": "b"}
        for i in range(n)
    ]
    row = {
        "case-id": case_id,
        "backend": "b",
        "trial": case_id[1],
        "num-workers": 1,
        "pb-size": 0,
        "n-tasks": n,
        "total-runtime": total,
        "status": "ok",
        "errors": 0,
    }
    return details, row


def test_a_case_far_slower_than_its_other_trials_is_set_apart(tmp_path: Path) -> None:
    """A one-task case has no peer within it: 134 s against 2.5 s in its other trial was `ok`."""
    from shotbench.bench.runner import flag_stalled_trials
    from shotbench.records.schema import RUN_KIND
    from shotbench.runs import RunFolder

    folder = RunFolder.create(tmp_path / "run", RUN_KIND, {})
    for cid, total in (
        ("t1-b-shots-w1-pb0-cc0", 2.5),
        ("t2-b-shots-w1-pb0-cc0", 134.0),
        ("t3-b-shots-w1-pb0-cc0", 2.4),
        ("t1-b-signals-w1-pb0-cc0", 9.0),
    ):
        folder.append_case(*_case_rows(cid, total))
    assert flag_stalled_trials(folder) == 1
    by_id = {r["case-id"]: r for r in folder.cases()}
    assert by_id["t2-b-shots-w1-pb0-cc0"]["status"] != "ok" and by_id["t2-b-shots-w1-pb0-cc0"]["stalls"] == "1"
    assert "stall" in by_id["t2-b-shots-w1-pb0-cc0"]["first-error"]
    assert {r["status"] for cid, r in by_id.items() if cid != "t2-b-shots-w1-pb0-cc0"} == {"ok"}
    assert [w["status"] for w in folder.details() if w["case-id"] == "t2-b-shots-w1-pb0-cc0"] == ["stall"]
    assert flag_stalled_trials(folder) == 0  # idempotent: the others stay measurements

    from shotbench.analyse import reliability

    (row,) = reliability.table(folder.path)
    assert row["stalls"] == 1 and row["failed"] == 0


@pytest.mark.slow
def test_a_stalled_get_is_never_a_clean_measurement(shot_dir: Path, s3_server, tmp_path: Path) -> None:
    """One object GET held 8 s in the middle of a case (as `--faults stalls-2pc` holds 2 % of
    connections 120 s): the task that waited is `stall`, its case is not `ok`, and the run says so."""
    import subprocess
    import sys
    import time

    from shotbench.store.s3 import parse_location, without_s3_settings
    from shotbench.store.staging import stage

    cfg = s3_server.s3config()
    cfg.boto3_client().create_bucket(Bucket="stall-once")
    stage(shot_dir, parse_location("s3://stall-once/shots/"), cfg, jobs=4, progress=False)
    proxy = OneStall(int(s3_server.endpoint_url.rsplit(":", 1)[1]), 8.0)
    via = f"http://127.0.0.1:{proxy.port}"
    env = {
        **without_s3_settings(),
        "SHOTBENCH_STATE": str(tmp_path / "state"),
        **cfg.env_vars(),
        "AWS_ENDPOINT_URL_S3": via,
        "AWS_ENDPOINT_URL": via,
    }
    (tmp_path / "c.toml").write_text(
        'backends = ["fsspec"]\nmodes = ["signals"]\nworkers = [1]\npage_buffers = [0]\n'
        "trials = 2\nsignals_files = 0\nsignals_names = 0\n"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "shotbench.cli",
            "bench",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--data",
            "s3://stall-once/shots/",
            "--config",
            str(tmp_path / "c.toml"),
            "--keep-going",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 300
        while not list((tmp_path / "runs").glob("*/run.json")) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.1)
        time.sleep(0.5)  # inside the first case (prepare, then the tasks' GETs)
        proxy.armed.set()
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert proxy.fired.is_set()
    run = only_run(tmp_path / "runs")
    with open(run / "workers.csv", newline="") as fh:
        workers = list(csv.DictReader(fh))
    slow = [w for w in workers if float(w["open+read-data-time"]) > 7.0]
    assert slow, "the held GET did not land inside a task"
    assert all(w["status"] != "ok" for w in slow), slow  # never a clean measurement
    cases = {r["case-id"]: r for r in case_rows(run)}
    assert all(cases[w["case-id"]]["status"] != "ok" for w in slow)
    assert sum(int(r["stalls"] or 0) for r in cases.values()) >= 1

    from shotbench.analyse import analysis

    ds = analysis.load([str(run)])
    assert not set(ds.cases["case-id"]) & {w["case-id"] for w in slow}  # out of every statistic
    assert analysis.stalls_table(ds)["stalled tasks"].sum() >= 1  # what the report counts


# ------------------------------------------------------------------ keys a backend cannot open


def test_which_keys_need_encoding() -> None:
    from shotbench.bench.keycheck import needs_encoding, probe_file
    from shotbench.plan.matrix import ShotFile

    assert not needs_encoding("shots/shot_1-a.b~c.h5")
    assert needs_encoding("uni dir/shot 1.h5") and needs_encoding("é/shot.h5") and needs_encoding("a+b.h5")
    files = [ShotFile("p/a.h5", 1, "1", ("s",)), ShotFile("p/b ü.h5", 1, "2", ("s",))]
    assert probe_file(files) == files[1] and probe_file(files[:1]) is None


@pytest.mark.slow
def test_keys_with_spaces_and_non_ascii_every_default_backend(shot_dir: Path, s3_server, tmp_path: Path) -> None:
    """`stage` to s3://…/uni dir/é with files `shot ü <id>.h5`, then bench there: ros3-2.0 failed
    16 of 16 tasks after 270 s (libhdf5 2.0 does not URI-encode the key). Now every default backend
    either measures them or is reported unsupported for this data in pre-flight, with the reason."""
    import shutil
    import subprocess
    import sys
    import time

    from shotbench.backends import registry
    from shotbench.store.s3 import parse_location, without_s3_settings
    from shotbench.store.staging import stage

    odd = tmp_path / "odd"
    odd.mkdir()
    for i, f in enumerate(sorted(shot_dir.glob("*.h5"))[:2]):
        shutil.copy(f, odd / f"shot ü {i}.h5")
    cfg = s3_server.s3config()
    cfg.boto3_client().create_bucket(Bucket="odd-keys")
    stage(odd, parse_location("s3://odd-keys/uni dir/é/"), cfg, jobs=2, progress=False)
    backends = registry.default_names()
    missing = [b for b in backends if not Path(registry.get(b).python()).exists()]
    if missing:
        pytest.fail(f"environments missing for {missing}: run `make envs` before the slow tests")
    env = {**without_s3_settings(), "SHOTBENCH_STATE": str(tmp_path / "state"), **cfg.env_vars()}
    t0 = time.time()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shotbench.cli",
            "bench",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--data",
            "s3://odd-keys/uni dir/é/",
            "--modes",
            "shots",
            "--workers",
            "1",
            "--page-buffers",
            "0",
            "--trials",
            "1",
            "--signals-files",
            "2",
            "--backends",
            *backends,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    took = time.time() - t0
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    run = only_run(tmp_path / "runs")
    unsupported = json.loads((run / "run.json").read_text())["data"].get("unsupported", {})
    rows = case_rows(run)
    measured = {r["backend"] for r in rows if r["status"] == "ok"}
    assert {r["status"] for r in rows} == {"ok"}, [
        (r["backend"], r["first-error"]) for r in rows if r["status"] != "ok"
    ]
    assert set(backends) == measured | set(unsupported), (measured, unsupported)
    for name, why in unsupported.items():
        assert "cannot open keys like" in why and f"{name}: unsupported for this data" in proc.stdout
    print(f"measured {sorted(measured)}; unsupported {sorted(unsupported)}; {took:.0f} s")


def test_the_chaos_tally_counts_lost_duplicated_and_unexplained(tmp_path: Path) -> None:
    from shotbench.records.schema import RUN_KIND
    from shotbench.runs import RunFolder
    from shotbench.studies.chaos.chaos_run import tally

    plan = [{"case_id": c} for c in ("t1-a", "t1-b", "t1-c", "t1-d")]
    folder = RunFolder.create(tmp_path / "run", RUN_KIND, {"plan": plan})
    ok = {"backend": "x", "trial": 1, "num-workers": 1, "pb-size": 0, "total-runtime": 1.0, "status": "ok"}
    folder.append_case([{"case-id": "t1-a", "status": "ok", "verified": "yes"}], {**ok, "case-id": "t1-a"})
    folder.append_case([], {**ok, "case-id": "t1-b", "status": "failed", "first-error": "server gone"})
    folder.append_case([{"case-id": "t1-c", "status": "ok", "verified": ""}], {**ok, "case-id": "t1-c"})
    folder.append_case([], {**ok, "case-id": "t1-a"})
    t = tally(folder.path)
    assert (t.planned, t.measured, t.failed, t.lost, t.duplicated, t.unexplained) == (4, 2, 1, 1, 1, 1)
    assert not t.good and "lost 1, duplicated 1" in t.lines()[1]

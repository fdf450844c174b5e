"""A failure is never a measurement; one process per run folder; clean exits; one sentence for
bad input. Real bench processes, real Dask clusters, real HDF5 files (local data, so these
tests need neither the S3 server nor the ROS3 builds)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.bench import assert_one_sentence, refuse, run_bench
from support.bench import state_env as _env
from support.incli import completed
from support.proxies import StallingProxy, silent_port
from support.runfolder import bench_proc, case_rows, only_run, wait_for_cases

SLOW_TOML = """backends = ["local"]
modes = ["signals", "shots"]
workers = [1, 2]
page_buffers = [0]
chunk_caches = [1048576, 2097152]
trials = 2
"""
SLOW_CASES = 2 * 2 * 2 * 2  # modes x workers x chunk caches x trials


def _leftovers(state: Path) -> list[str]:
    """Live processes started for this test (they inherit its private SHOTBENCH_STATE)."""
    needle = f"SHOTBENCH_STATE={state}".encode()
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if needle in (proc / "environ").read_bytes().split(b"\0"):
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ")[:100].decode(errors="replace")
                out.append(f"{proc.name} {cmdline}")
        except OSError:
            continue
    return out


@pytest.fixture
def broken_shots(shot_dir: Path, tmp_path: Path) -> Path:
    """Copies of the shot files whose metadata is overwritten after the inventory was cached,
    so every read fails inside the measured tasks."""
    folder = tmp_path / "broken"
    shutil.copytree(shot_dir, folder)
    proc = run_bench(
        [
            "--data",
            str(folder),
            "--backends",
            "local",
            "--workers",
            "1",
            "--trials",
            "1",
            "--page-buffers",
            "0",
            "--modes",
            "shots",
        ],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    shutil.rmtree(tmp_path / "runs")
    for f in folder.glob("*.h5"):
        with open(f, "r+b") as fh:
            fh.seek(4096)
            fh.write(b"\0" * (f.stat().st_size // 2))
    return folder


@pytest.mark.slow
def test_failed_cases_are_not_results(broken_shots: Path, tmp_path: Path) -> None:
    args = [
        "--data",
        str(broken_shots),
        "--backends",
        "local",
        "--workers",
        "1",
        "--trials",
        "1",
        "--page-buffers",
        "0",
    ]
    proc = run_bench(args, tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "2 of 2 cases failed" in proc.stderr and "--keep-going" in proc.stderr
    run = only_run(tmp_path / "runs")
    rows = case_rows(run)
    assert {r["status"] for r in rows} == {"failed"}
    assert all(int(r["errors"]) >= 1 and r["first-error"] for r in rows)
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "failed" and meta["errors"] == 2
    with open(run / "workers.csv", newline="") as fh:
        assert {r["status"] for r in csv.DictReader(fh)} == {"failed"}

    from shotbench.analyse import analysis

    ds = analysis.load([str(run)])
    assert ds.cases.empty and ds.workers.empty
    table = analysis.failed_table(ds)
    assert len(table) == 2 and table["first-error"].str.len().min() > 0

    shutil.rmtree(tmp_path / "runs")
    kept = run_bench([*args, "--keep-going"], tmp_path)
    assert kept.returncode == 0, kept.stderr
    assert "2 of 2 cases failed" in kept.stdout


def test_old_run_folders_with_text_errors_still_load(tmp_path: Path) -> None:
    """Before the status column, `errors` held text; such a case is failed, never a runtime."""
    from shotbench.analyse import analysis

    src = Path(__file__).parents[1] / "data" / "run-fixture"
    run = tmp_path / "old"
    shutil.copytree(src, run)
    with open(run / "cases.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    cols = [c for c in rows[0] if c not in ("status", "first-error")]
    rows[0]["errors"] = "16 errors; first: OverflowError: can't convert negative int to unsigned"
    with open(run / "cases.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    ds = analysis.load([str(run)])
    assert len(ds.cases) == len(rows) - 1
    failed = analysis.failed_table(ds)
    assert list(failed["errors"]) == [16]
    assert failed["first-error"].iloc[0].startswith("OverflowError")
    assert rows[0]["case-id"] not in set(ds.workers["case-id"])


@pytest.mark.slow
def test_two_concurrent_resumes_give_each_case_once(shot_dir: Path, tmp_path: Path) -> None:
    """Two `--resume` of one interrupted run at the same time: one is refused with the other's
    pid and exit 2, the other finishes the run, and every case appears exactly once."""
    (tmp_path / "c.toml").write_text(SLOW_TOML)
    env = _env(tmp_path)
    first = bench_proc(tmp_path / "runs", ["--data", str(shot_dir), "--config", str(tmp_path / "c.toml")], env)
    try:
        run = wait_for_cases(tmp_path / "runs", 1)
        assert run is not None
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    resumes = [bench_proc(tmp_path / "runs", ["--resume", str(run)], env) for _ in range(2)]
    try:
        outcomes = [(p.pid, p.returncode, err) for p in resumes for _, err in [p.communicate(timeout=300)]]
    finally:
        for p in resumes:
            if p.poll() is None:
                p.kill()
    codes = sorted(rc for _, rc, _ in outcomes)
    assert codes == [0, 2], outcomes
    winner = next(pid for pid, rc, _ in outcomes if rc == 0)
    refused = next(err for _, rc, err in outcomes if rc == 2)
    assert f"is being resumed by pid {winner}" in refused and len(refused.strip().splitlines()) == 1
    ids = [r["case-id"] for r in case_rows(run)]
    assert len(ids) == SLOW_CASES and len(set(ids)) == SLOW_CASES
    assert json.loads((run / "run.json").read_text())["status"] == "complete"


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_no_process_outlives_a_killed_run(sig: int, shot_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text(SLOW_TOML)
    env = _env(tmp_path)
    proc = bench_proc(tmp_path / "runs", ["--data", str(shot_dir), "--config", str(tmp_path / "c.toml")], env)
    try:
        assert wait_for_cases(tmp_path / "runs", 1) is not None  # mid-run: Dask workers are up
        assert any("shotbench.bench.driver" in p for p in _leftovers(tmp_path / "state"))
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.time() + 10
    while _leftovers(tmp_path / "state") and time.time() < deadline:
        time.sleep(0.2)
    assert _leftovers(tmp_path / "state") == []
    if sig != signal.SIGKILL:  # the convention: 128 + the signal's number
        assert proc.returncode == 128 + sig and "--resume" in err and "Traceback" not in err
        meta = json.loads(next((tmp_path / "runs").glob("*/run.json")).read_text())
        assert meta["status"] == "interrupted"


@pytest.mark.parametrize(
    ("toml", "words"),
    [
        ('workers = "two"\n', ["workers", "integers"]),
        ("[options.fsspec]\nblok_size = 5\n", ["blok_size", "block_size"]),
        ("task_timeout = -1\n", ["task_timeout"]),
    ],
)
def test_bad_config_values(toml: str, words: list[str], tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(toml)
    assert_one_sentence(refuse(["--config", str(cfg)], tmp_path), tmp_path, *words)


@pytest.mark.parametrize(
    ("args", "word"),
    [
        (["--page-buffers", "-5", "--backends", "local"], "negative"),
        (["--chunk-cache", "-1", "--backends", "local"], "negative"),
        (["--workers", "100000", "--backends", "local"], "memory"),
        (["--scheduler", "tcp://127.0.0.1:1", "--backends", "local"], "127.0.0.1:1"),
    ],
)
def test_refused_before_any_work(args: list[str], word: str, tmp_path: Path) -> None:
    t0 = time.time()
    assert_one_sentence(refuse(args, tmp_path), tmp_path, word)
    assert time.time() - t0 < 20


def test_corrupt_run_json_under_resume(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "20260101T000000Z-abcdef"
    run.mkdir(parents=True)
    (run / "run.json").write_text('{"run_id": "x", "config": {')
    proc = refuse(["--resume", str(run)], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "damaged" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


READ_ONLY = Path("/sys/shotbench-out")  # sysfs refuses new folders even to root


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "--runs-dir", str(READ_ONLY), "--backends", "local", "--data", "."],
        [
            "report",
            "--input",
            f"fixture={Path(__file__).parents[1] / 'data' / 'run-fixture'}",
            "--output",
            str(READ_ONLY),
        ],
        ["transfer", "--out", str(READ_ONLY)],
    ],
)
def test_read_only_output_folders(args: list[str], tmp_path: Path) -> None:
    proc = completed(args, _env(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(READ_ONLY) in lines[0] and "writable" in lines[0], proc.stderr


@pytest.mark.server
def test_run_whose_server_dies_ends_failed_within_a_minute(shot_dir: Path, tmp_path: Path) -> None:
    """Killing the S3 server mid-run stops the run in seconds: rc 1, one sentence, status failed,
    and no case credited with a runtime it did not measure."""
    from shotbench.store import embedded as server
    from shotbench.store.s3 import parse_location
    from shotbench.store.staging import stage

    state = tmp_path / "server"
    with server.embedded_server(state) as info:
        cfg = info.s3config()
        cfg.boto3_client().create_bucket(Bucket="dies")
        stage(shot_dir, parse_location("s3://dies/shots/"), cfg, jobs=4, progress=False)
        (tmp_path / "c.toml").write_text(SLOW_TOML.replace('["local"]', '["fsspec", "obstore"]'))
        env = {**_env(tmp_path), **cfg.env_vars()}
        proc = bench_proc(tmp_path / "runs", ["--data", "s3://dies/shots/", "--config", str(tmp_path / "c.toml")], env)
        try:
            run = wait_for_cases(tmp_path / "runs", 2)
            assert run is not None
            server.stop(state)
            killed = time.time()
            _, err = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert time.time() - killed < 60
    assert proc.returncode == 1, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "stopped answering" in lines[0] and "--resume" in lines[0], err
    assert json.loads((run / "run.json").read_text())["status"] == "failed"
    rows = case_rows(run)
    assert len(rows) < SLOW_CASES and all(r["status"] in ("ok", "failed", "partial") for r in rows)


@pytest.mark.parametrize("damage", ["truncated", "empty"])
def test_damaged_file_in_the_prefix_is_named(damage: str, shot_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "data"
    shutil.copytree(shot_dir, folder)
    victim = sorted(folder.glob("*.h5"))[-1]
    os.truncate(victim, 0 if damage == "empty" else victim.stat().st_size // 2)
    proc = run_bench(["--data", str(folder), "--backends", "local"], tmp_path)
    assert_one_sentence(proc, tmp_path, victim.name, damage)


def test_endpoint_that_is_not_s3_is_named(tmp_path: Path) -> None:
    web = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],  # -u: its banner is our port
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = web.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N ..."
        port = line.split(" port ")[1].split()[0]
        env = {
            "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{port}",
            "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
            "AWS_SECRET_ACCESS_KEY": "not-a-real-secret-value",
            "AWS_REGION": "us-east-1",
        }
        proc = run_bench(["--data", "s3://somebucket/shots/", "--backends", "obstore"], tmp_path, env)
    finally:
        web.kill()
        web.wait()
    assert_one_sentence(proc, tmp_path, "not an S3 server")


def test_synth_refuses_what_the_disk_cannot_hold(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "shotbench.cli", "synth", "--out", str(tmp_path / "big"), "--shots", "1000000"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "free" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not list((tmp_path / "big").glob("*.h5"))


@pytest.mark.server
def test_stalled_server_gives_timeout_rows_and_ends_the_run(shot_dir: Path, tmp_path: Path) -> None:
    """A server that stops answering mid-run: the running case is recorded with `timeout` rows
    after its deadline, the health check ends the run, and nothing counts as a runtime."""
    from shotbench.store import embedded as server
    from shotbench.store.s3 import parse_location
    from shotbench.store.staging import stage

    with server.embedded_server(tmp_path / "server") as info:
        cfg = info.s3config()
        cfg.boto3_client().create_bucket(Bucket="stalls")
        stage(shot_dir, parse_location("s3://stalls/shots/"), cfg, jobs=4, progress=False)
        proxy = StallingProxy(int(info.endpoint_url.rsplit(":", 1)[1]))
        (tmp_path / "c.toml").write_text(SLOW_TOML.replace('["local"]', '["obstore"]') + "task_timeout = 3\n")
        via = f"http://127.0.0.1:{proxy.port}"
        env = {**_env(tmp_path), **cfg.env_vars(), "AWS_ENDPOINT_URL_S3": via, "AWS_ENDPOINT_URL": via}
        proc = bench_proc(
            tmp_path / "runs", ["--data", "s3://stalls/shots/", "--config", str(tmp_path / "c.toml")], env
        )
        try:
            run = wait_for_cases(tmp_path / "runs", 1)
            assert run is not None, proc.stderr.read() if proc.poll() is not None else "no case row"
            proxy.armed.set()  # the next case's first GET stalls: a case is reading when the server hangs
            stalled = time.time()
            _, err = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
    # the case deadline and the slack the driver has to report it (the stall now always lands in a
    # case: 13 s), the check between cases at its worst (a stalled HEAD, tried once more), then the
    # case's teardown and the run's shutdown: inside the minute a dead server may take
    from shotbench.bench.runner import DEADLINE_SLACK, HEALTH_STALL_ATTEMPTS, HEALTH_TIMEOUT

    assert time.time() - stalled < 3 + DEADLINE_SLACK + HEALTH_STALL_ATTEMPTS * HEALTH_TIMEOUT + 20 <= 60
    assert proc.returncode == 1 and "stopped answering" in err, err
    assert json.loads((run / "run.json").read_text())["status"] == "failed"
    with open(run / "workers.csv", newline="") as fh:
        ended = [r for r in csv.DictReader(fh) if r["status"] != "ok"]
    # the deadline's `timeout` rows, the watchdog's (server gone), a client that gave up on the
    # stalled server first (obstore: `failed` after its own retries), or a task that got through
    # after the stall (`stall`): never a measurement, and each row says why
    assert ended and all(r["status"] in ("timeout", "stall", "failed") and r["error"] for r in ended)
    assert [r["status"] for r in case_rows(run)][-1] == "failed"


@pytest.mark.server
@pytest.mark.alone  # the health check between cases allows 2 × 5 s; three busy test processes once took longer
def test_faults_run_checks_every_byte(shot_dir: Path, tmp_path: Path) -> None:
    """`--faults flaky-5pc` through toxiproxy: the run completes, every row (raw GETs too) is
    verified against the local copy, fsspec rows carry a retry count, and the reliability table prints."""
    (tmp_path / "c.toml").write_text(
        'backends = ["fsspec", "obstore", "raw-get"]\nmodes = ["shots"]\nworkers = [1]\npage_buffers = [0]\ntrials = 1\n'
        "shots = 4\nfile_size = 2000000\npage_size = 1000000\nsignals = 12\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shotbench.cli",
            "bench",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--config",
            str(tmp_path / "c.toml"),
            "--shots-dir",
            str(shot_dir),
            "--faults",
            "flaky-5pc",
            "--keep-going",
        ],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "reliability under faults 'flaky-5pc'" in proc.stdout
    run = only_run(tmp_path / "runs")
    assert json.loads((run / "run.json").read_text())["config"]["network"] == "flaky-5pc"
    with open(run / "workers.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and all(r["verified"] == "yes" for r in rows if r["status"] == "ok")
    assert any(r["backend"] == "raw-get" and r["verified"] == "yes" for r in rows)
    assert all(r["retries"].isdigit() for r in rows if r["backend"] == "fsspec")
    assert all(r["retries"] == "" for r in rows if r["backend"] == "obstore")


def test_wrong_bytes_are_caught(shot_dir: Path) -> None:
    """A row whose CRC differs from the local copy's is `verified = no` with an error naming it."""
    import h5py

    from shotbench.backends.base import Source
    from shotbench.bench.checksums import Checksums
    from shotbench.hdf5.shotfile import read_signal_crc, shot_ids, signal_names

    path = sorted(shot_dir.glob("*.h5"))[0]
    with h5py.File(path, "r") as fh:
        shot = shot_ids(fh)[0]
        name = signal_names(fh, shot)[0]
        crc = read_signal_crc(fh, shot, name)[2]
    checks = Checksums(Source("local", local_dir=str(shot_dir)))
    assert checks.verdict({"crcs": [[str(path), shot, name, crc]], "error": ""}) == ("yes", "")
    verdict, error = checks.verdict({"crcs": [[str(path), shot, name, crc ^ 1]], "error": ""})
    assert verdict == "no" and "wrong bytes" in error and name in error
    # a raw GET's byte range, checked the same way
    import zlib

    from shotbench.bench.checksums import BYTES, byte_range

    good = zlib.crc32(path.read_bytes()[100:4196])
    assert checks.verdict({"crcs": [[str(path), BYTES, byte_range(100, 4096), good]], "error": ""}) == ("yes", "")
    verdict, error = checks.verdict({"crcs": [[str(path), BYTES, byte_range(100, 4096), good ^ 1]], "error": ""})
    assert verdict == "no" and "bytes 100:4096" in error


def test_embedded_server_has_one_run_at_a_time(shot_dir: Path, tmp_path: Path) -> None:
    """While one run uses bench's embedded server, another is refused (it would stop the server
    under the first and mix both runs' GETs), naming the pid that holds it."""
    from shotbench.locks import acquire, release

    state = tmp_path / "state" / "bench-server-tls"  # the default run is https
    state.mkdir(parents=True)
    fd = acquire(state / "users.lock")  # this test process plays the run in progress
    try:
        proc = run_bench(["--shots-dir", str(shot_dir), "--backends", "local"], tmp_path)
    finally:
        release(fd)
    assert_one_sentence(proc, tmp_path, "in use by another run", f"pid {os.getpid()}")


@pytest.mark.slow
def _endpoint_env(port: int) -> dict[str, str]:
    """Settings for a plain-HTTP endpoint on this machine, with keys no server knows."""
    return {
        "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "not-a-real-secret-value",
        "AWS_REGION": "us-east-1",
    }


@pytest.mark.slow  # the wait is the point: two bounded reads of 10 s
def test_endpoint_that_accepts_and_never_answers(tmp_path: Path) -> None:
    """A server that takes connections and says nothing is reported in seconds, not minutes."""
    t0 = time.time()
    with silent_port() as port:
        proc = run_bench(["--data", "s3://somebucket/shots/", "--backends", "obstore"], tmp_path, _endpoint_env(port))
    assert_one_sentence(proc, tmp_path, "did not answer within")
    assert time.time() - t0 < 45


def test_endpoint_that_drops_every_request_is_tried_again_then_named(tmp_path: Path) -> None:
    """A connection closed before any answer (a flaky network, a resetting proxy) is tried again
    in the preflight, unlike a silent endpoint; one that drops every time is one sentence."""
    import socket
    import threading

    from shotbench.store.s3 import PREFLIGHT_ATTEMPTS, PREFLIGHT_RETRIES

    requests: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))

    def drop() -> None:
        while True:
            try:
                conn = server.accept()[0]
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    data = conn.recv(65536)
                except OSError:
                    continue
                if data:  # a request came, and the connection closes without a byte of answer
                    requests.append(data.split(b"\r\n", 1)[0])

    threading.Thread(target=drop, daemon=True).start()
    env = _endpoint_env(server.getsockname()[1])
    try:
        proc = run_bench(["--data", "s3://somebucket/shots/", "--backends", "obstore"], tmp_path, env)
    finally:
        server.close()
    assert_one_sentence(proc, tmp_path, "closed the connection before answering")
    listings = [r for r in requests if r.startswith(b"GET /somebucket")]
    assert len(listings) == PREFLIGHT_ATTEMPTS * (1 + PREFLIGHT_RETRIES), requests  # botocore's tries, 3 times

"""Real `shotbench bench` runs: embedded server, real Dask processes, tiny shot files.

What a user relies on: the three files appear with the upstream columns first, each case
exactly once even after the process is killed mid-run, GETs counted, and no secret leaks.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from shotbench.records.schema import CASE_COLUMNS, UPSTREAM_COLUMNS, WORKER_COLUMNS
from support.bench import TINY, bench_cmd, bench_env, read_csv, secret_of
from support.runfolder import only_run

pytestmark = pytest.mark.slow


def holders(shot_dir: Path, keys: list[str]) -> Counter:
    """How many of the files hold each signal (some shot files lack a few signals)."""
    import h5py

    from shotbench.hdf5.shotfile import shot_ids, signal_names

    out: Counter = Counter()
    for key in keys:
        with h5py.File(shot_dir / Path(key).name, "r") as fh:
            out.update(signal_names(fh, shot_ids(fh)[0]))
    return out


@pytest.fixture()
def tiny(tmp_path: Path, shot_dir: Path):
    def make(backends: list[str]) -> tuple[Path, Path, Path]:
        cfg = tmp_path / "tiny.toml"
        cfg.write_text(TINY.format(backends=json.dumps(backends)))
        return cfg, tmp_path / "state", tmp_path / "runs"

    return make


def test_bench_writes_upstream_rows_and_gets(tiny, shot_dir: Path) -> None:
    cfg, state, runs = tiny(["local", "obstore", "raw-get"])
    proc = subprocess.run(
        bench_cmd(cfg, shot_dir, runs), env=bench_env(state), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = only_run(runs)
    workers, cases = read_csv(run / "workers.csv"), read_csv(run / "cases.csv")
    assert tuple(workers[0])[:12] == UPSTREAM_COLUMNS and list(workers[0]) == WORKER_COLUMNS
    assert list(cases[0]) == CASE_COLUMNS
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "complete" and len(cases) == len(meta["plan"]) == 3 * 2 * 2
    assert (meta["kind"], meta["schema"]) == ("read", 1)
    assert meta["config"]["backend_options"] == {"local": {}, "obstore": {"block_size": 0}, "raw-get": {}}
    # the path's TLS records, counted on the wire: the embedded server writes 4 KiB at a time
    records = meta["data"]["tls_records"]
    assert records["version"].startswith("TLS") and records["body_bytes"] == 1 << 20, records
    assert 4096 < records["median_bytes"] <= 4096 + 64, records
    assert Counter(c["case-id"] for c in cases).most_common(1)[0][1] == 1
    for c in cases:
        assert c["errors"] == "0" and c["status"] == "ok", c
        assert float(c["raw-get-runtime"]) > 0 and float(c["harness-efficiency"]) > 0
        assert 0 <= float(c["harness-overhead"]) < float(c["total-runtime"])
        assert (int(c["gets"]) > 0) == (c["backend"] != "local"), c
    files = meta["selection"]["signals_files"]
    for w in workers:
        assert w["error"] == ""
    by_case: dict[str, list[dict[str, str]]] = {}
    for w in workers:
        by_case.setdefault(w["case-id"], []).append(w)
    for rows in by_case.values():
        if rows[0]["backend"] == "raw-get":
            continue
        assert len({r["total-runtime"] for r in rows}) == 1
        if rows[0]["obj-type"] == "shots":
            assert {r["tot-num-obj"] for r in rows} == {"1"}
            assert {r["wrkr-num-objs"] for r in rows} == {"1"}
            assert len({r["obj-id"] for r in rows}) == 1
            assert len(rows) == int(rows[0]["num-workers"])
        else:
            signals = {r["obj-id"] for r in rows}
            assert {r["tot-num-obj"] for r in rows} == {str(len(signals))} == {"12"}
            per_signal = Counter()
            for r in rows:
                per_signal[r["obj-id"]] += int(r["wrkr-num-objs"])
            assert per_signal == holders(shot_dir, files)
    assert {m["hdf5"] for m in meta["versions"]["backends"].values() if m["hdf5"]}
    assert meta["machine"]["cpus"] >= 1 and re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", meta["git_commit"])
    secret = secret_of(state)
    for path in list(run.rglob("*")) + list((state / "logs").rglob("*")):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path
    assert secret not in proc.stdout + proc.stderr
    assert "median s" in proc.stdout and "dashboard" in proc.stdout


def test_resume_after_kill_yields_each_case_once(tiny, shot_dir: Path) -> None:
    cfg, state, runs = tiny(["local", "obstore", "fsspec", "raw-get"])
    proc = subprocess.Popen(
        bench_cmd(cfg, shot_dir, runs), env=bench_env(state), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 300
    try:
        while time.time() < deadline:
            folders = [p for p in runs.glob("*") if (p / "cases.csv").exists()] if runs.exists() else []
            if folders and len(read_csv(folders[0] / "cases.csv")) >= 2:
                break
            assert proc.poll() is None, "bench ended before it could be killed"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    run = only_run(runs)
    planned = len(json.loads((run / "run.json").read_text())["plan"])
    assert len(read_csv(run / "cases.csv")) < planned
    out = subprocess.run(
        bench_cmd(cfg, shot_dir, runs, "--resume", str(run)),
        env=bench_env(state),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    cases = read_csv(run / "cases.csv")
    ids = Counter(c["case-id"] for c in cases)
    assert len(ids) == planned and set(ids.values()) == {1}
    workers = read_csv(run / "workers.csv")
    assert {w["case-id"] for w in workers} <= set(ids)
    for c in cases:  # worker rows of every case come from exactly one execution
        rows = [w for w in workers if w["case-id"] == c["case-id"]]
        assert {w["total-runtime"] for w in rows} == {c["total-runtime"]}
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "complete" and meta["resumed"]


def test_existing_dask_cluster_via_scheduler(tmp_path: Path, shot_dir: Path) -> None:
    """`--scheduler` runs the cases on a cluster the user started (here: local files)."""
    import socket

    from shotbench.bench import pools

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bindir = Path(sys.executable).parent
    sched = subprocess.Popen(
        [str(bindir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--dashboard-address", ":0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    worker = subprocess.Popen(
        # the main environment's pool (`shotbench cluster workers --env main`): local and raw-get run there
        [*pools.worker_command(sys.executable, f"tcp://127.0.0.1:{port}", "main", 2)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        runs = tmp_path / "runs"
        cmd = [
            sys.executable,
            "-m",
            "shotbench.cli",
            "bench",
            "--data",
            str(shot_dir),
            "--backends",
            "local",
            "raw-get",
            "--workers",
            "1",
            "2",
            "--trials",
            "1",
            "--page-buffers",
            "0",
            "--scheduler",
            f"tcp://127.0.0.1:{port}",
            "--runs-dir",
            str(runs),
        ]
        from distributed import Client

        with Client(f"tcp://127.0.0.1:{port}", timeout=60) as client:  # both workers registered
            client.wait_for_workers(2, timeout=60)
        proc = subprocess.run(cmd, env=bench_env(tmp_path / "state"), capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        cases = read_csv(only_run(runs) / "cases.csv")
        assert len(cases) == 2 * 2 + 2 * 2 and not [c for c in cases if c["status"] != "ok"]
        workers = read_csv(only_run(runs) / "workers.csv")
        assert {w["dask-worker"].rsplit(":", 1)[0] for w in workers} == {"tcp://127.0.0.1"}
    finally:
        for p in (worker, sched):
            p.terminate()
            p.wait(timeout=30)

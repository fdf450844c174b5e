"""Retries as the client counted them, and the report's reliability section.

The aws-c-s3 log lines in tests/data were captured from libhdf5 2.0's ROS3 driver reading
through toxiproxy: `aws-c-s3-reset-retried.log` with 30 % of connections reset (2 attempts
failed and were sent again), `aws-c-s3-retries-exhausted.log` with the endpoint refusing
every connection (4 GETs, each tried 1 + 5 times, then given up: 20 retries).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shotbench.analyse import reliability
from shotbench.backends.meters import aws_retry_delta, is_aws_log_line
from shotbench.records.schema import CASE_COLUMNS, WORKER_COLUMNS

DATA = Path(__file__).parents[1] / "data"


def _retries(name: str) -> int:
    return sum(aws_retry_delta(line) for line in (DATA / name).read_text().splitlines())


def test_aws_log_retries_are_counted() -> None:
    assert _retries("aws-c-s3-reset-retried.log") == 2


def test_aws_log_retries_given_up_are_not_counted() -> None:
    """24 connection attempts failed; 4 were refused a retry (retries used up): 20 were sent again."""
    assert _retries("aws-c-s3-retries-exhausted.log") == 20


def test_only_aws_logger_lines_count() -> None:
    line = (DATA / "aws-c-s3-reset-retried.log").read_text().splitlines()[0]
    assert is_aws_log_line(line)
    assert aws_retry_delta(line.split("] - ", 1)[1]) == 0  # the same text without the logger's prefix
    assert aws_retry_delta(" -- GET: Bucket: b Key: k Request Size: 10") == 0
    assert not is_aws_log_line("Traceback (most recent call last):")


METER_SCRIPT = """
import json, os, sys
from shotbench.backends.meters import ros3_debug_meter
meter = ros3_debug_meter()
before = meter.retries()
lines = open(sys.argv[1]).read() + " -- GET: Bucket: b Key: k Request Size: 1000\\nplain warning\\n"
os.write(2, lines.encode())
after = meter.retries()
counts = meter.drain()
print(json.dumps({"before": before, "after": after, "gets": counts.gets,
                  "level": os.environ["HDF5_ROS3_VFD_LOG_LEVEL"], "file": os.environ["HDF5_ROS3_VFD_LOG_FILE"]}))
"""


def test_debug_meter_counts_retries_and_keeps_log_lines_private() -> None:
    """A real process whose fd 2 the meter takes over: aws-c-s3 lines are counted, never passed on,
    while other stderr lines still reach the original stderr."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "scripts")}
    proc = subprocess.run(
        [sys.executable, "-c", METER_SCRIPT, str(DATA / "aws-c-s3-retries-exhausted.log")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out == {"before": 0, "after": 20, "gets": 1, "level": "error", "file": "stderr"}
    assert proc.stderr == "plain warning\n"


# --- the report's section ------------------------------------------------------------------


def _run(root: Path, name: str, network: str, rows: list[dict[str, str]], runtime: float) -> Path:
    """A run folder with one case per backend in `rows` (worker rows as given)."""
    run = root / name
    run.mkdir(parents=True)
    meta = {
        "run_id": name,
        "started": name,
        "status": "complete",
        "config": {"bench": {"trials": 1, "workers": [1]}, "network": network},
        "data": {"location": "s3://b/shots/", "files": 2, "bytes": 4_000_000},
    }
    (run / "run.json").write_text(json.dumps(meta))
    with open(run / "workers.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, WORKER_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(
                {"obj-type": "shots", "num-workers": "1", "pb-size": "0", "total-runtime": runtime, "status": "ok", **r}
            )
    with open(run / "cases.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, CASE_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for backend in dict.fromkeys(r["backend"] for r in rows):
            w.writerow(
                {
                    "backend": backend,
                    "obj-type": "shots",
                    "num-workers": "1",
                    "pb-size": "0",
                    "chunk-cache": "",
                    "total-runtime": runtime,
                    "status": "ok",
                    "errors": "0",
                }
            )
    return run


FAULT_ROWS = [
    {"backend": "fsspec", "retries": "3", "verified": "yes"},
    {"backend": "fsspec", "retries": "0", "verified": "yes"},
    {"backend": "obstore", "retries": "", "verified": "yes"},
    {"backend": "ros3-2.0", "retries": "1", "verified": "no", "status": "failed", "error": "x"},
]


def test_section_compares_with_the_fault_free_run_of_the_same_plan(tmp_path: Path) -> None:
    clean = _run(
        tmp_path,
        "20260101T000000Z-a",
        "none",
        [{"backend": b, "retries": "0"} for b in ("fsspec", "obstore", "ros3-2.0")],
        2.0,
    )
    _run(tmp_path, "20260101T000001Z-other", "none", [{"backend": "fsspec"}], 1.0)
    faulted = _run(tmp_path, "20260101T000002Z-b", "flaky-5pc", FAULT_ROWS, 3.0)
    (tmp_path / "20260101T000001Z-other" / "run.json").write_text(
        json.dumps({"started": "x", "config": {"bench": {"trials": 2}, "network": "none"}, "data": {}})
    )  # another plan
    part = reliability.section(faulted)
    assert part is not None and part.baseline == clean and part.network == "flaky-5pc"
    table = part.frame().set_index("backend")
    assert table.loc["fsspec", "retries"] == 3 and table.loc["fsspec", "tasks"] == 2
    assert table.loc["fsspec", "slowdown"] == pytest.approx(1.5)
    assert pd_isna(table.loc["obstore", "retries"])  # the client cannot tell: empty, not 0
    assert table.loc["ros3-2.0", "failures"] == 1 and table.loc["ros3-2.0", "wrong bytes"] == 1


def test_the_answer_of_a_fault_run_says_it_was_measured_under_faults(tmp_path: Path) -> None:
    """A report of a fault run opened with "The answer: fsspec with 2 workers", as if nothing had
    been injected; the sentence above it now names the runs and their profiles."""
    clean = _run(tmp_path, "clean", "none", [{"backend": "fsspec"}], 1.0)
    hop = _run(tmp_path, "hop", "http-0pc", [{"backend": "fsspec"}], 1.0)
    flaky = _run(tmp_path, "flaky", "http-flaky-5pc", [{"backend": "fsspec"}], 2.0)
    assert reliability.caveat([clean, hop]) == ""
    said = reliability.caveat([clean, flaky])
    assert said.startswith("**Measured under injected faults:** `flaky` (fault profile `http-flaky-5pc`).")
    assert "clean" not in said


def test_section_without_a_fault_free_run_says_so(tmp_path: Path) -> None:
    part = reliability.section(_run(tmp_path, "r", "flaky-5pc", FAULT_ROWS, 3.0))
    assert part is not None and part.baseline is None
    assert part.frame()["slowdown"].isna().all()
    shown = part.shown_frame()
    assert list(shown["slowdown"]) == ["–"] * 3 and shown.loc["obstore", "retries"] == "–"
    assert shown.loc["fsspec", "retries"] == 3


def test_section_is_hidden_for_a_clean_run_and_shown_when_tasks_retried(tmp_path: Path) -> None:
    assert reliability.section(_run(tmp_path, "clean", "none", [{"backend": "fsspec", "retries": "0"}], 1.0)) is None
    retried = reliability.section(_run(tmp_path, "retried", "none", [{"backend": "fsspec", "retries": "2"}], 1.0))
    assert retried is not None and retried.rows[0]["retries"] == 2


def pd_isna(value: object) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


# --- a real server behind toxiproxy -------------------------------------------------------------

READ_SCRIPT = """
import json, sys
from shotbench.backends import registry
from shotbench.backends.base import ReadSettings, Source, s3_from_environ
from shotbench.hdf5.shotfile import read_signal, shot_ids, signal_names

backend = registry.get(sys.argv[1])(Source("s3", sys.argv[2], "shots/"), ReadSettings())
backend.setup(s3_from_environ())
before, failed = backend.retries(), 0
for _ in range(3):
    for key in sys.argv[3:]:
        try:
            with backend.open(key, 0) as fh:
                for shot in shot_ids(fh):
                    for name in signal_names(fh, shot):
                        read_signal(fh, shot, name)
        except Exception:
            failed += 1
print(json.dumps({"retries": backend.retries() - before, "failed": failed}))
"""


@pytest.fixture(scope="module")
def resetting_server(tmp_path_factory: pytest.TempPathFactory, shot_dir: Path):
    """A private server behind the HTTP fault proxy, which answers 30 % of requests `503 SlowDown`,
    with `shot_dir` uploaded past the proxy (to versitygw's own port). The proxy's decision is
    seeded per request, so every run of this test meets the same faults (toxiproxy's share of
    connections depended on how many connections aws-c-s3 happened to open, and was sometimes 0)."""
    from shotbench.store import network
    from shotbench.store.embedded import embedded_server
    from shotbench.store.faultproxy import HttpFaults
    from shotbench.store.s3 import S3Config

    name = "test-slowdown-30pc"
    network.NETWORK_PROFILES[name] = network.Profile(
        0, 0, None, "30 % of requests 503 SlowDown", http=HttpFaults((("slowdown", 0.3),))
    )
    try:
        with embedded_server(tmp_path_factory.mktemp("resets"), network=name) as info:
            cfg = info.s3config()
            direct = S3Config(
                endpoint_url=f"http://127.0.0.1:{info.upstream_port}",
                region=cfg.region,
                access_key=cfg.access_key,
                secret_key=cfg.secret_key,
            )
            client = direct.boto3_client()
            client.create_bucket(Bucket="resets")
            keys = []
            for path in sorted(shot_dir.glob("*.h5"))[:2]:
                client.upload_file(str(path), "resets", f"shots/{path.name}")
                keys.append(f"shots/{path.name}")
            yield cfg, keys
    finally:
        network.NETWORK_PROFILES.pop(name, None)


@pytest.mark.parametrize("backend", ["ros3-2.0", "ros3-2.2"])
def test_ros3_2x_retries_are_counted_under_slowdowns(backend: str, resetting_server) -> None:
    """With 30 % of requests answered 503 SlowDown, aws-c-s3 must send them again, and the backend says how many."""
    from shotbench.backends import registry
    from shotbench.hdf5.ros3open import ros3_env

    cfg, keys = resetting_server
    cls = registry.get(backend)
    try:
        python = cls.python()
    except Exception as exc:  # noqa: BLE001 - the build is not installed in this checkout
        pytest.skip(f"{backend} is not built here ({exc}); `make envs` installs it")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HDF5_ROS3"))}
    env.update(ros3_env(cfg), PYTHONPATH=str(Path(__file__).parents[2] / "scripts"))
    proc = subprocess.run(
        [str(python), "-c", READ_SCRIPT, backend, "resets", *keys], capture_output=True, text=True, env=env, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["retries"] > 0, out


def test_http_faults_compare_with_the_same_proxy_hop_and_show_what_was_injected(tmp_path: Path) -> None:
    """An HTTP-fault run is compared with `http-0pc` (same proxy, nothing injected) rather than a
    direct run, and each backend's injected faults come from run.json, not from the client."""
    rows = [
        {"backend": "fsspec", "retries": "2", "verified": "yes"},
        {"backend": "obstore", "retries": "", "verified": "yes"},
    ]
    direct = _run(tmp_path, "20260101T000000Z-direct", "none", rows, 1.0)
    hop = _run(tmp_path, "20260101T000001Z-hop", "http-0pc", rows, 2.0)
    faulted = _run(tmp_path, "20260101T000002Z-faulted", "slowdown-5pc", rows, 3.0)
    meta = json.loads((faulted / "run.json").read_text())
    meta["plan"] = [{"case_id": "c1", "backend": "fsspec"}, {"case_id": "c2", "backend": "obstore"}]
    meta["faults_injected"] = {
        "by_case": {
            "c1": {"slowdown": 2, "internal": 0, "truncated": 0},
            "c2": {"slowdown": 5, "internal": 1, "truncated": 0},
        }
    }
    (faulted / "run.json").write_text(json.dumps(meta))
    for other in (direct, hop):  # same plan as the faulted run
        m = json.loads((other / "run.json").read_text())
        (other / "run.json").write_text(json.dumps({**m, "plan": meta["plan"]}))
    part = reliability.section(faulted)
    assert part is not None and part.baseline == hop and reliability.baseline_network(part) == "http-0pc"
    table = part.frame().set_index("backend")
    assert table.loc["fsspec", "injected (HTTP)"] == 2 and table.loc["obstore", "injected (HTTP)"] == 6
    assert table.loc["fsspec", "slowdown"] == pytest.approx(1.5)
    assert pd_isna(table.loc["obstore", "retries"])
    # a toxiproxy profile injects nothing at the HTTP level: its column is unknown, not 0
    toxic = reliability.section(_run(tmp_path, "20260101T000003Z-toxic", "flaky-5pc", rows, 3.0))
    assert toxic is not None and toxic.frame()["injected (HTTP)"].isna().all()
    assert "injected" in reliability.render(toxic.rows).splitlines()[0]


def test_extra_server_gets_show_resends_the_client_did_not_count(tmp_path: Path) -> None:
    """obstore counts its calls, not its attempts: the access log's surplus is its resends."""
    run = _run(
        tmp_path,
        "20260101T000000Z-r",
        "flaky-5pc",
        [{"backend": "obstore", "retries": ""}, {"backend": "local", "retries": ""}],
        1.0,
    )
    rows = list(csv.DictReader(open(run / "cases.csv")))
    rows[0].update({"gets": "130", "client-gets": "124"})  # obstore; local has neither
    with open(run / "cases.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, CASE_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    table = reliability.section(run).frame().set_index("backend")
    assert table.loc["obstore", "extra GETs (server)"] == 6 and pd_isna(table.loc["local", "extra GETs (server)"])


def test_extra_gets_behind_the_http_proxy_count_the_gets_it_answered_itself() -> None:
    """A 503 from the proxy never reaches the server: a client that counts every attempt sent
    as many GETs as it counted, though the access log has fewer. A case recorded before the
    proxy counted its own answers is left out rather than shown short."""
    cases = [
        {"case-id": "c1", "backend": "fsspec", "gets": "100", "client-gets": "112"},
        {"case-id": "c2", "backend": "obstore", "gets": "90", "client-gets": "80"},
        {"case-id": "c3", "backend": "fsspec", "gets": "50", "client-gets": "60"},
    ]
    meta = {
        "faults_injected": {
            "by_case": {
                "c1": {"slowdown": 12, "answered-gets": 12},
                "c2": {"internal": 3, "answered-gets": 2},
                "c3": {"slowdown": 10},
            }
        }
    }
    answered = reliability.answered_gets_by_case(meta)
    assert answered == {"c1": 12, "c2": 2}
    assert reliability.server_extra_gets(cases, answered) == {"fsspec": 0, "obstore": 12}
    assert reliability.server_extra_gets(cases) == {"fsspec": -22, "obstore": 10}  # no proxy: the log is the wire
    assert reliability.answered_gets_by_case({}) is None
    assert reliability.injected_by_backend({**meta, "plan": [{"case_id": "c1", "backend": "fsspec"}]}) == {"fsspec": 12}


def test_toxiproxy_faults_compare_with_a_direct_finished_run(tmp_path: Path) -> None:
    """Below HTTP, the like-for-like run has no proxy at all; a run still going is a last resort."""
    rows = [{"backend": "fsspec", "retries": "0", "verified": "yes"}]
    direct = _run(tmp_path, "20260101T000000Z-direct", "none", rows, 1.0)
    _run(tmp_path, "20260101T000002Z-hop", "http-0pc", rows, 2.0)  # newer, but through the HTTP proxy
    going = _run(tmp_path, "20260101T000003Z-going", "none", rows, 4.0)
    meta = json.loads((going / "run.json").read_text())
    (going / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    faulted = _run(tmp_path, "20260101T000001Z-faulted", "flaky-5pc", rows, 3.0)
    assert reliability.find_baseline(faulted) == direct

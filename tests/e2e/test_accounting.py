"""Client-side request accounting: what each backend's client says it did, against the server.

Fast tests use a real TCP server in a thread (the 1.14 socket meter) and real debug lines;
slow tests run `shotbench bench` on the embedded server and compare each case's client
counts with the server's access log, then against the same server as an external endpoint
(no access log read) to show the client columns do not depend on it.
"""

from __future__ import annotations

import http.client
import http.server
import json
import threading
from pathlib import Path

import pytest

from shotbench.backends import meters as accounting
from support.bench import TINY as RUNNER_TINY
from support.bench import available as _available
from support.bench import bench_cmd, bench_env, read_csv, secret_of
from support.runfolder import only_run

BODY = b"x" * 50_000


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def http_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_socket_meter_counts_a_head_and_gets_on_one_connection(http_server: int) -> None:
    meter = accounting.SocketMeter(f"http://127.0.0.1:{http_server}")
    conn = http.client.HTTPConnection("127.0.0.1", http_server)
    conn.request("HEAD", "/obj")
    conn.getresponse().read()
    for _ in range(3):
        conn.request("GET", "/obj")
        assert conn.getresponse().read() == BODY
    meter.before_close()
    conn.close()
    counts = meter.drain()
    assert (counts.heads, counts.gets) == (1, 3)
    assert 3 * len(BODY) <= counts.bytes < 3 * len(BODY) * 1.02
    conn = http.client.HTTPConnection("127.0.0.1", http_server)  # a second file: a new connection
    conn.request("HEAD", "/obj")
    conn.getresponse().read()
    conn.request("GET", "/obj")
    conn.getresponse().read()
    meter.before_close()
    conn.close()
    assert (meter.drain().gets, meter.drain().gets) == (1, 0)


def test_debug_lines_of_the_2x_driver_are_parsed() -> None:
    assert accounting.parse_debug_line(" -- GET: Bytes 0 - 2097151, Request Size: 2097152\n") == ("GET", 2097152)
    assert accounting.parse_debug_line(" -- HEAD: Bucket: b / Key: shots/1.h5\n") == ("HEAD", 0)
    assert accounting.parse_debug_line(" -- response status: 200\n") is None
    assert accounting.parse_debug_line("distributed.worker - INFO - started\n") is None


def test_case_columns_sum_tasks_and_divide_by_what_is_needed() -> None:
    raw = [
        {"bytes": 100, "client-gets": 2, "client-heads": 1, "client-bytes": 4000, "request-ms": [1.0, 3.0]},
        {"bytes": 300, "client-gets": 1, "client-heads": 0, "client-bytes": 6000, "request-ms": [2.0]},
    ]
    cols = accounting.case_columns(raw, needed=400)
    assert cols["client-gets"] == 3 and cols["client-heads"] == 1 and cols["client-bytes"] == 10000
    assert cols["bytes-needed"] == 400 and cols["amplification"] == 25.0
    assert cols["request-p50-ms"] == 2.0 and 2.9 < cols["request-p99-ms"] <= 3.0
    assert accounting.case_columns([{"bytes": 5}]) == {"bytes-returned": 5, "bytes-needed": ""}


# ------------------------------------------------------------------ slow: real bench runs

S3_BACKENDS = ["fsspec", "obstore", "download", "raw-get", "ros3-1.14", "ros3-2.0", "ros3-2.2"]

TINY = RUNNER_TINY.replace("workers = [1, 2]", "workers = [2]")  # one case per backend and mode


def _run(
    tmp_path: Path, shot_dir: Path, backends: list[str], env_extra: dict[str, str], *args: str, config: str = TINY
) -> Path:
    import subprocess

    cfg = tmp_path / "tiny.toml"
    cfg.write_text(config.format(backends=json.dumps(backends)))
    env = {**bench_env(tmp_path / "state"), **env_extra}
    proc = subprocess.run(
        bench_cmd(cfg, shot_dir, tmp_path / "runs", *args), env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return only_run(tmp_path / "runs")


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 0.02 * max(a, b)


def _bytes_agree(cases: list[dict[str, str]]) -> None:
    """Client and server bytes agree in every case whose server byte total is known. The
    server's counts come over UDP and one can be lost under load; such a case has no total
    (never a short one), and that may happen to some cases, not to most."""
    known = [c for c in cases if c["get-bytes"] != ""]
    assert len(known) * 2 >= len(cases), cases
    for c in known:
        assert _close(int(c["client-bytes"]), int(c["get-bytes"])), (c["backend"], c["client-bytes"], c["get-bytes"])


# 9 MB files: one ranged GET of a whole file is two HTTP GETs in aws-c-s3 (8 MiB parts)
LARGER = (
    TINY.replace("file_size = 2000000", "file_size = 9000000")
    .replace("shots = 4", "shots = 2")
    .replace("signals_files = 3", "signals_files = 2")
)


@pytest.mark.slow
@pytest.mark.optional_build
def test_client_counts_agree_with_the_access_log(tmp_path: Path) -> None:
    # over http: 1.14 counts requests as TCP segments, which TLS flights blur (see the https test)
    run = _run(tmp_path, tmp_path / "shots", _available(S3_BACKENDS), {}, "--no-tls", config=LARGER)
    cases = read_csv(run / "cases.csv")
    assert {c["backend"] for c in cases} == set(S3_BACKENDS)
    for c in cases:
        assert c["status"] == "ok", c
        gets, client = int(c["gets"]), int(c["client-gets"])
        assert gets > 0 and _close(client, gets), (c["backend"], c["obj-type"], client, gets)
        assert int(c["bytes-needed"]) > 0 and float(c["amplification"]) > 0
    _bytes_agree(cases)
    workers = read_csv(run / "workers.csv")
    assert all(w["client-gets"] != "" and w["client-bytes"] != "" for w in workers)
    secret = secret_of(tmp_path / "state")  # the 2.x debug channel prints request headers: none may leak
    for path in list(run.rglob("*")) + list((tmp_path / "state" / "logs").rglob("*")):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path
    for w in workers:  # ROS3 (libhdf5 >= 1.14.3) reads the whole file at every open
        if w["backend"].startswith("ros3") and w["error"] == "":
            assert int(w["client-bytes"]) >= int(w["wrkr-num-objs"]) * 9_000_000, w


@pytest.mark.slow
def test_client_columns_filled_against_an_endpoint_without_access_log(
    tmp_path: Path, shot_dir: Path, s3_server, staged_shots
) -> None:
    loc, cfg, _ = staged_shots
    backends = _available(["obstore", "fsspec", "ros3-1.14", "ros3-2.0"])
    run = _run(tmp_path, shot_dir, backends, cfg.env_vars(), "--data", loc.uri(), "--anatomy")
    anatomy = json.loads((run / "anatomy.json").read_text())
    assert set(anatomy["backends"]) == set(backends)
    assert all(b["summary"]["gets_per_open"] >= 1 for n, b in anatomy["backends"].items() if n.startswith("ros3"))
    for c in read_csv(run / "cases.csv"):
        assert c["status"] == "ok", c
        assert c["gets"] == "" and c["get-bytes"] == ""  # the bench read no server log
        assert int(c["client-gets"]) > 0 and int(c["client-bytes"]) > 0, c
        if c["backend"].startswith("ros3"):  # whole file per open: more bytes than the signals
            assert float(c["amplification"]) > 1.0, c


@pytest.mark.slow
@pytest.mark.alone  # 1.14's requests are TCP segments: a busy machine splits a flight now and then
def test_https_embedded_server_is_read_by_every_client(tmp_path: Path, shot_dir: Path) -> None:
    """Over https (private CA) every backend, ROS3 included, reads the files and is counted."""
    backends = _available(["obstore", "fsspec", "ros3-1.14", "ros3-2.0", "ros3-wheel"])
    run = _run(tmp_path, shot_dir, backends, {}, "--tls")
    meta = json.loads((run / "run.json").read_text())
    assert meta["data"]["endpoint"].startswith("https://") and meta["config"]["tls"] is True
    cases = read_csv(run / "cases.csv")
    _bytes_agree(cases)
    for c in cases:
        assert c["status"] == "ok", c
        # 1.14 counts requests as TCP segments; a TLS handshake flight now and then takes two
        tolerance = 0.05 if c["backend"] == "ros3-1.14" else 0.02
        gets, client = int(c["gets"]), int(c["client-gets"])
        assert abs(client - gets) <= tolerance * gets, (c["backend"], client, gets)

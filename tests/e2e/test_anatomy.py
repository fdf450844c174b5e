"""`shotbench anatomy`: the strace phase split, and real runs through every ROS3 build.

The fast test parses lines captured from a real traced 1.14 open (plus the CA-bundle lines a
2.x open shows); the slow test runs the command against the embedded server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shotbench.anatomy import strace
from support.bench import available as _available
from support.bench import bench_env

TRACE = """\
7899  1795450617.086896 newfstatat(AT_FDCWD</tmp>, "/.shotbench-mark/open-1", 0x7ffd2a538a50, 0) = -1 ENOENT (No such file or directory) <0.000007>
7899  1795450617.086898 openat(AT_FDCWD</tmp>, "/etc/ssl/certs", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = 7</etc/ssl/certs> <0.000010>
7899  1795450617.086900 openat(AT_FDCWD</tmp>, "/etc/ssl/certs/ca-certificates.crt", O_RDONLY) = 6</etc/ssl/certs/ca-certificates.crt> <0.000010>
7899  1795450617.086950 read(6</etc/ssl/certs/ca-certificates.crt>, "-----BEGIN CERTI"..., 4096) = 4096 <0.000005>
7899  1795450617.087400 close(6</etc/ssl/certs/ca-certificates.crt>) = 0 <0.000004>
7899  1795450617.087553 connect(5<TCP:[86006]>, {sa_family=AF_INET, sin_port=htons(55113), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 EINPROGRESS (Operation now in progress) <0.000201>
7899  1795450617.088752 sendto(5<TCP:[127.0.0.1:46208->127.0.0.1:55113]>, "HEAD /bkt/shots/"..., 416, MSG_NOSIGNAL, NULL, 0) = 416 <0.000469>
7899  1795450617.089704 recvfrom(5<TCP:[127.0.0.1:46208->127.0.0.1:55113]>, "HTTP/1.1 200 OK\\r"..., 16384, 0, NULL, NULL) = 552 <0.000063>
7899  1795450617.090070 sendto(5<TCP:[127.0.0.1:46208->127.0.0.1:55113]>, "GET /bkt/shots/1"..., 445, MSG_NOSIGNAL, NULL, 0) = 445 <0.000483>
7899  1795450617.090633 recvfrom(5<TCP:[127.0.0.1:46208->127.0.0.1:55113]>, "HTTP/1.1 206 Par"..., 16384, 0, NULL, NULL) = 16384 <0.000016>
7899  1795450617.091633 recvfrom(5<TCP:[127.0.0.1:46208->127.0.0.1:55113]>, "\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0"..., 16384, 0, NULL, NULL) = 16384 <0.000016>
7899  1795450617.100901 newfstatat(AT_FDCWD</tmp>, "/.shotbench-mark/read-1", 0x7ffd2a538a50, 0) = -1 ENOENT (No such file or directory) <0.000008>
"""


def test_strace_phases_of_one_open(tmp_path: Path) -> None:
    calls = strace.parse(TRACE)
    seg = strace.segments(calls)
    start, end = seg["open-1"]
    p = strace.open_phases(calls, start, end, port=55113)
    assert p["ca_bundle_loads"] == 1 and p["ca_bundle_ms"] == pytest.approx(0.5, abs=0.01)
    assert p["before_connect_ms"] == pytest.approx(0.657, abs=0.01)
    assert p["connect_ms"] == pytest.approx(1.199, abs=0.01)
    assert p["head_ms"] == pytest.approx(0.952, abs=0.01)
    assert p["first_get_ms"] == pytest.approx(1.563, abs=0.01)
    assert p["requests"] == 2
    assert strace.open_phases(calls, start, end, port=9000)["requests"] == 0  # other endpoints ignored


@pytest.mark.slow
@pytest.mark.optional_build
def test_anatomy_runs_through_every_ros3_build(tmp_path: Path) -> None:
    backends = _available(["ros3-1.14", "ros3-2.0", "ros3-2.2", "obstore"])
    out = tmp_path / "anatomy"
    proc = subprocess.run(
        [sys.executable, "-m", "shotbench.cli", "anatomy", "--backends", *backends, "--opens", "3", "--out", str(out)],
        env=bench_env(tmp_path / "state"),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "anatomy.json").read_text())
    for name in backends:
        s = doc["backends"][name]["summary"]
        assert s["warm_open_ms"] > 0 and s["bytes_per_open"] > 0, (name, s)
    for name in ("ros3-1.14", "ros3-2.0", "ros3-2.2"):
        s = doc["backends"][name]["summary"]
        assert s["heads_per_open"] == 1 and s["gets_per_open"] >= 1, (name, s)
        assert s["warm_open_ms_one_cert_bundle"] > 0
    assert "warm ms" in proc.stdout and "ros3-2.0" in proc.stdout

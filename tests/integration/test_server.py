"""The embedded S3 server as a user meets it: a real versitygw process over real HTTP."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import socket
import stat
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from shotbench.errors import UserError
from shotbench.store import accesslog
from shotbench.store import embedded as server


def _cli(state: Path, *args: str) -> subprocess.CompletedProcess:
    """Run `shotbench ARGS` in this process (same code path as the console script, minus imports)."""
    from shotbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("SHOTBENCH_STATE")
    os.environ["SHOTBENCH_STATE"] = str(state)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse errors
                code = int(exc.code or 0)
    finally:
        if old is None:
            os.environ.pop("SHOTBENCH_STATE", None)
        else:
            os.environ["SHOTBENCH_STATE"] = old
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.server
def test_start_upload_list_ranged_get_stop(tmp_path: Path) -> None:
    state = tmp_path / "state"
    info = server.start(state, private=True)
    try:
        assert server.start(state).pid == info.pid  # idempotent: the running one comes back
        client = info.s3config().boto3_client()
        client.create_bucket(Bucket="shots")
        payload = bytes(range(256)) * 4096  # 1 MiB, every byte position distinguishable
        client.put_object(Bucket="shots", Key="a/1.h5", Body=payload)

        listed = client.list_objects_v2(Bucket="shots", Prefix="a/")["Contents"]
        assert [(o["Key"], o["Size"]) for o in listed] == [("a/1.h5", len(payload))]
        assert listed[0]["ETag"].strip('"')  # uploaded through the API, so ROS3 2.x gets an ETag

        got = client.get_object(Bucket="shots", Key="a/1.h5", Range="bytes=1000-1999")
        assert got["ContentRange"] == f"bytes 1000-1999/{len(payload)}"
        assert got["Body"].read() == payload[1000:2000]
    finally:
        assert server.stop(state) is True
    assert server.status(state) is None
    assert not _port_open(info.port)
    assert not Path(f"/proc/{info.pid}").exists() or "versitygw" not in Path(f"/proc/{info.pid}/cmdline").read_text()


@pytest.mark.server
def test_restart_keeps_buckets_and_credentials(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = server.start(state, private=True)
    try:
        first.s3config().boto3_client().create_bucket(Bucket="kept")
        first.s3config().boto3_client().put_object(Bucket="kept", Key="x.h5", Body=b"abc")
    finally:
        server.stop(state)
    second = server.start(state, private=True)
    try:
        assert second.access_key == first.access_key and second.pid != first.pid
        body = second.s3config().boto3_client().get_object(Bucket="kept", Key="x.h5")["Body"].read()
        assert body == b"abc"
    finally:
        server.stop(state)


@pytest.mark.server
def test_a_start_on_another_port_is_refused_while_one_runs(tmp_path: Path) -> None:
    """`server start --port 8080` beside a running server said "already running" and exit 0, on
    the old port; network and TLS mismatches were already refused."""
    state = tmp_path / "state"
    first = server.start(state, private=True)
    try:
        assert server.start(state, port=first.port, private=True).pid == first.pid  # the same port: it is that one
        with pytest.raises(UserError, match=f"already running on port {first.port}.*to start it on"):
            server.start(state, port=first.port + 1, private=True)
    finally:
        server.stop(state)


def test_wrong_secret_and_unknown_key_are_refused(s3_server, s3_bucket: str) -> None:
    good = s3_server.s3config()
    good.boto3_client().put_object(Bucket=s3_bucket, Key="secret-test.h5", Body=b"x" * 10)

    wrong_secret = dataclasses.replace(good, secret_key="not-the-secret-" + "x" * 25)
    with pytest.raises(ClientError) as err:
        wrong_secret.boto3_client().get_object(Bucket=s3_bucket, Key="secret-test.h5")
    assert err.value.response["Error"]["Code"] == "SignatureDoesNotMatch"

    unknown_key = dataclasses.replace(good, access_key="SBUNKNOWNKEY00000000")
    with pytest.raises(ClientError) as err:
        unknown_key.boto3_client().get_object(Bucket=s3_bucket, Key="secret-test.h5")
    assert err.value.response["Error"]["Code"] in ("InvalidAccessKeyId", "XAdminUserNotFound")


@pytest.mark.server
def test_cli_start_prints_endpoint_and_no_secret(tmp_path: Path) -> None:
    state = tmp_path / "state"
    try:
        started = _cli(state, "server", "start")
        assert started.returncode == 0, started.stderr
        creds = json.loads((state / "credentials.json").read_text())
        out = started.stdout + started.stderr
        assert creds["secret_key"] not in out
        assert creds["access_key"] not in out  # only the masked form
        assert creds["access_key"][:4] + "…" in out
        assert "http://127.0.0.1:" in out and str(state / "credentials.json") in out
        assert f"source {state / 'env.sh'}" in out
        for private in ("credentials.json", "env.sh", "access.log"):
            assert stat.S_IMODE((state / private).stat().st_mode) == 0o600, private

        status = _cli(state, "server", "status")
        assert status.returncode == 0 and creds["secret_key"] not in status.stdout + status.stderr

        # what the printed hint promises: sourcing env.sh gives a working S3 client
        env_sh = (state / "env.sh").read_text()
        probe = subprocess.run(
            [
                "bash",
                "-c",
                f"source {state / 'env.sh'} && {sys.executable} -c "
                '\'import boto3; print(len(boto3.client("s3").list_buckets()["Buckets"]))\'',
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert probe.returncode == 0, probe.stderr
        assert "AWS_ENDPOINT_URL_S3=http://127.0.0.1:" in env_sh
    finally:
        stopped = _cli(state, "server", "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    after = _cli(state, "server", "status")
    assert after.returncode == 0 and "not running" in after.stdout


def test_access_log_counts_a_known_number_of_gets(s3_server) -> None:
    bucket = f"sb-log-{uuid.uuid4().hex[:8]}"
    client = s3_server.s3config().boto3_client()
    client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key="f.h5", Body=b"z" * 100_000)
    time.sleep(0.05)  # the log line of the PUT is written after its response

    t0 = time.time()
    mark = accesslog.offset_marker(s3_server.access_log)
    for i in range(7):
        client.get_object(Bucket=bucket, Key="f.h5", Range=f"bytes={i * 100}-{i * 100 + 99}")["Body"].read()
    client.head_object(Bucket=bucket, Key="f.h5")
    deadline = time.time() + 5
    while accesslog.count_since(s3_server.access_log, mark).requests < 8 and time.time() < deadline:
        time.sleep(0.05)
    t1 = time.time()

    since = accesslog.count_since(s3_server.access_log, mark, bucket=bucket)
    assert (since.gets, since.get_bytes, since.requests) == (7, 700, 8)
    windowed = accesslog.count_requests(s3_server.access_log, t0, t1, bucket=bucket)
    assert (windowed.gets, windowed.get_bytes) == (7, 700)  # the PUT may share a second with them
    assert accesslog.count_since(s3_server.access_log, mark, bucket="some-other-bucket").requests == 0


def test_every_request_is_in_the_log_when_its_response_arrives(s3_server) -> None:
    """A case's requests are counted as soon as its last response is back, with no quiet period
    (bench/runner.py): that holds because versitygw logs a request before it answers it. Checked
    right after each response of every kind a case or a stage makes; then the window waits only
    for the GETs' byte counts, which travel behind."""
    bucket = f"sb-log-{uuid.uuid4().hex[:8]}"
    client = s3_server.s3config().boto3_client()
    client.create_bucket(Bucket=bucket)
    log = s3_server.access_log
    calls = [
        lambda i: client.put_object(Bucket=bucket, Key=f"k{i}.h5", Body=b"z" * 10_000),
        lambda i: client.get_object(Bucket=bucket, Key=f"k{i}.h5", Range="bytes=0-99")["Body"].read(),
        lambda i: client.head_object(Bucket=bucket, Key=f"k{i}.h5"),
        lambda i: client.list_objects_v2(Bucket=bucket, MaxKeys=1),
    ]
    start = accesslog.offset_marker(log)
    for i in range(40):
        for call in calls:
            mark = accesslog.offset_marker(log)
            call(i)
            assert accesslog.count_since(log, mark, bucket=bucket, quiet=0).requests == 1, f"round {i}"
    # the mark as the runner takes it: after the byte counts of every GET so far, which come late
    _, mark = accesslog.counted_window(log, start, bucket)
    for i in range(20):
        client.get_object(Bucket=bucket, Key=f"k{i}.h5", Range="bytes=0-99")["Body"].read()
    records, end = accesslog.counted_window(log, mark, bucket)
    stats = accesslog.window_stats(records, bucket)
    assert (stats.gets, stats.get_bytes, stats.requests) == (20, 2000, 20)
    assert end <= accesslog.offset_marker(log)


def _log_line(op: str, status: int) -> str:
    return f"AK b [23/November/2026:23:16:00 +0000] 127.0.0.1 AK REQ {op} k.h5 /b/k.h5 {status} - 0 0 0 0 - ua\n"


def test_a_window_missing_a_byte_count_has_no_byte_total(tmp_path: Path, monkeypatch) -> None:
    """One byte count per served GET: with one missing, the total is unknown (None), not short;
    once the missing count has come, the total is whole; a failed GET sends none."""
    monkeypatch.setattr(accesslog, "LATE_COUNTS_WAIT", 0.2)
    log = tmp_path / "access.log"
    log.write_text(
        _log_line("s3_GetObject", 206) * 2
        + _log_line("s3_GetObject", 416)
        + _log_line("s3_HeadObject", 200)
        + "#bytes 1.0 bytes_read b 100\n"
    )
    short = accesslog.count_since(log, 0, bucket="b", quiet=0.01)
    assert (short.gets, short.get_bytes, short.requests) == (3, None, 4)
    assert (short + accesslog.RequestStats(1, 5, 1)).get_bytes is None
    with open(log, "a") as fh:
        fh.write("#bytes 1.1 bytes_read b 50\n")
    assert accesslog.count_since(log, 0, bucket="b", quiet=0.01).get_bytes == 150


def test_a_window_waits_for_byte_counts_behind_their_gets_and_ends_at_a_whole_line(tmp_path: Path) -> None:
    """The byte count of the second GET comes 0.1 s after its line (as StatsD's flush does): the
    window waits for it, and ends before a line still being written, which the next window starts with."""
    import threading

    log = tmp_path / "access.log"
    log.write_text(_log_line("s3_GetObject", 206) * 2 + "#bytes 1.0 bytes_read b 100\n")

    def late() -> None:
        time.sleep(0.1)
        with open(log, "a") as fh:
            fh.write("#bytes 1.1 bytes_read b 50\n" + _log_line("s3_GetObject", 206)[:20])

    threading.Thread(target=late).start()
    records, end = accesslog.counted_window(log, 0, "b")
    stats = accesslog.window_stats(records, "b")
    assert (stats.gets, stats.get_bytes) == (2, 150)
    assert end == log.stat().st_size - 20  # the half-written line belongs to the next window


def _get_ms(cfg, bucket: str, n: int = 15) -> list[float]:
    client = cfg.boto3_client()
    client.get_object(Bucket=bucket, Key="small.h5", Range="bytes=0-1023")["Body"].read()  # connect, warm up
    times = []
    for _ in range(n):
        t = time.perf_counter()
        client.get_object(Bucket=bucket, Key="small.h5", Range="bytes=0-1023")["Body"].read()
        times.append((time.perf_counter() - t) * 1000)
    return times


@pytest.mark.server
def test_same_region_profile_adds_about_20ms_per_get(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with server.embedded_server(state, network="s3-same-region") as info:
        assert info.port != info.upstream_port  # the endpoint is toxiproxy's listener
        client = info.s3config().boto3_client()
        client.create_bucket(Bucket="lat")
        client.put_object(Bucket="lat", Key="small.h5", Body=b"q" * 4096)
        direct = dataclasses.replace(info.s3config(), endpoint_url=f"http://127.0.0.1:{info.upstream_port}")
        proxied_ms = _get_ms(info.s3config(), "lat")
        direct_ms = _get_ms(direct, "lat")
    print(
        f"ranged GET p50 {statistics.median(proxied_ms):.1f} ms through s3-same-region, "
        f"{statistics.median(direct_ms):.1f} ms direct"
    )
    # 20 +/- 5 ms is added to every response: no GET can beat 15 ms, whatever the machine's load
    assert min(proxied_ms) >= 14.5
    assert min(proxied_ms) - min(direct_ms) >= 10
    assert statistics.median(proxied_ms) < 150
    assert server.status(state) is None


def test_unknown_network_profile_is_one_sentence(tmp_path: Path) -> None:
    result = _cli(tmp_path / "state", "server", "start", "--network", "moon")
    assert result.returncode == 2 and "invalid choice" in result.stderr
    from shotbench.errors import UserError

    with pytest.raises(UserError, match="unknown network profile 'moon'; choose one of"):
        server.start(tmp_path / "state2", network="moon")


def test_log_lines_parse_as_versitygw_writes_them() -> None:
    from shotbench.store.statsd import parse_packet

    line = (
        "SBKEY bkt [22/November/2026:01:38:14 +0000] 127.0.0.1 SBKEY 5HZXJVKP58SAU1VX s3_GetObject x/a.h5 "
        "/bkt/x/a.h5 200 - 0 0 0 0 - Boto3/1.43 md/Botocore#1.43 ua/2.1 os/linux - HOSTID SigV4 - AuthHeader "
        "s3.us-east-1.amazonaws.com - arn:aws:s3:::/bkt/x/a.h5 Yes"
    )
    rec = accesslog.parse_line(line)
    assert rec is not None and (rec.bucket, rec.operation, rec.key, rec.status) == (
        "bkt",
        "s3_GetObject",
        "x/a.h5",
        200,
    )
    assert accesslog.parse_line("log starts 2026-11-22 01:38:09 +0000 UTC") is None
    packet = (
        "versitygw.success_count,service=shotbench,method=GET,api=s3,action=GetObject,bucket=bkt,status=206:1|c\n"
        "versitygw.bytes_read,service=shotbench,method=GET,api=s3,action=GetObject,bucket=bkt,status=206:4096|c"
    )
    assert parse_packet(packet) == [("bytes_read", "bkt", 4096)]

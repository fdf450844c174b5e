"""`stage` leaves no abandoned multipart uploads: it aborts its own on SIGINT/SIGTERM, and after a
SIGKILL the next `stage` aborts what the killed one left, says so, and touches nobody else's.

Real processes against the real embedded server: `shotbench stage` runs as a subprocess behind
a proxy that holds each PUT back, so a signal lands mid-upload with parts on the server.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from shotbench.store.crt import S3Failure
from shotbench.store.s3 import parse_location, without_s3_settings
from shotbench.store.staging import _explain_failure, stage
from shotbench.units import MiB
from support.byteproxy import ByteProxy
from support.runfolder import as_in_a_terminal

SIZE = 80 * MiB  # above stage's 64 MiB multipart threshold: 5 parts of 16 MiB


def _open(client, loc) -> list[tuple[str, str]]:
    return [
        (u["Key"], u["UploadId"])
        for u in client.list_multipart_uploads(Bucket=loc.bucket, Prefix=loc.prefix).get("Uploads", [])
    ]


def _start(s3_server, proxy: ByteProxy | None, src: Path, dest: str, cache: Path) -> subprocess.Popen:
    env = without_s3_settings()
    env.update(s3_server.s3config().env_vars())
    if proxy is not None:
        env["AWS_ENDPOINT_URL"] = env["AWS_ENDPOINT_URL_S3"] = proxy.endpoint
    env["SHOTBENCH_CACHE"] = str(cache)  # the journal of open uploads, private to this test
    return subprocess.Popen(
        [sys.executable, "-m", "shotbench", "stage", str(src), dest, "--jobs", "1", "--no-progress"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_in_a_terminal,  # the Ctrl-C below must arrive even when the suite runs in the background
    )


def _wait_for_parts(proxy: ByteProxy, proc: subprocess.Popen, parts: int = 2, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while proxy.puts_done < parts:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no parts reached the server"
        time.sleep(0.05)


@pytest.fixture
def big_src(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "big.h5", "wb") as fh:
        for _ in range(SIZE // MiB):
            fh.write(os.urandom(MiB))
    return src


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_stage_aborts_its_upload(s3_server, s3_bucket, big_src, tmp_path, sig) -> None:
    cfg = s3_server.s3config()
    loc = parse_location(f"s3://{s3_bucket}/int-{uuid.uuid4().hex[:6]}/")
    upstream = int(cfg.endpoint_url.rsplit(":", 1)[1])
    proxy = ByteProxy(upstream, put_delay=0.4, hold_puts_after=2)  # the signal lands mid-upload
    try:
        proc = _start(s3_server, proxy, big_src, loc.uri(), tmp_path / "cache")
        _wait_for_parts(proxy, proc)
        client = cfg.boto3_client()
        assert len(_open(client, loc)) == 1  # mid-upload: the upload is open, with parts
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proxy.close()
    assert proc.returncode == 128 + sig, err
    assert _open(client, loc) == []
    assert client.list_objects_v2(Bucket=loc.bucket, Prefix=loc.prefix).get("KeyCount", 0) == 0
    assert list((tmp_path / "cache" / "stage-uploads").rglob("*.json")) == []  # nothing left to clean


def test_after_sigkill_the_next_stage_cleans_only_its_own(s3_server, s3_bucket, big_src, tmp_path, monkeypatch) -> None:
    cfg = s3_server.s3config()
    loc = parse_location(f"s3://{s3_bucket}/kill-{uuid.uuid4().hex[:6]}/")
    client = cfg.boto3_client()
    other = client.create_multipart_upload(Bucket=loc.bucket, Key=loc.prefix + "big.h5")["UploadId"]  # not stage's
    time.sleep(1.1)  # S3 dates uploads to the second: the other client's is from before stage started
    upstream = int(cfg.endpoint_url.rsplit(":", 1)[1])
    proxy = ByteProxy(upstream, put_delay=0.4, hold_puts_after=2)  # the signal lands mid-upload
    try:
        proc = _start(s3_server, proxy, big_src, loc.uri(), tmp_path / "cache")
        _wait_for_parts(proxy, proc)
        proc.kill()
        proc.communicate(timeout=30)
    finally:
        proxy.close()
    left = _open(client, loc)
    assert len(left) == 2 and (loc.prefix + "big.h5", other) in left  # the killed stage's, and the other client's

    nxt = _start(s3_server, None, big_src, loc.uri(), tmp_path / "cache")  # the next `shotbench stage`
    out, err = nxt.communicate(timeout=120)
    assert nxt.returncode == 0, err
    (line,) = out.splitlines()
    assert line.startswith("staged 1 files") and "1 of 1 checked whole" in line
    assert "; aborted 1 multipart upload an interrupted `shotbench stage` left under " + loc.uri() in line
    assert line.endswith("MB of parts)")
    assert _open(client, loc) == [(loc.prefix + "big.h5", other)]  # the other client's upload is untouched
    client.abort_multipart_upload(Bucket=loc.bucket, Key=loc.prefix + "big.h5", UploadId=other)
    assert _open(client, loc) == []
    monkeypatch.setenv("SHOTBENCH_CACHE", str(tmp_path / "cache"))
    again = stage(big_src, loc, cfg, jobs=2, progress=False)
    assert (again.files, again.skipped, again.cleaned) == (0, 1, "")


def test_key_too_long_names_the_real_fix() -> None:
    loc = parse_location("s3://mybucket/p/")
    from shotbench.store.s3 import S3Config

    err = _explain_failure(
        S3Failure("PutObject", 400, "KeyTooLongError", "Your key is too long"), loc, S3Config("http://127.0.0.1:1")
    )
    text = str(err)
    assert "again" not in text and "1,024 bytes" in text and "shorter prefix" in text

"""Staging: files arrive intact through the S3 API, and a re-run uploads only what changed."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from boto3.s3.transfer import TransferConfig

from shotbench.errors import UserError
from shotbench.store.s3 import list_shot_files, parse_location, without_s3_settings
from shotbench.store.stage import md5_etag, same_object, stage


def _fresh(prefix: str, bucket: str):
    return parse_location(f"s3://{bucket}/{prefix}-{uuid.uuid4().hex[:6]}")


def test_stage_uploads_intact_then_skips_then_catches_a_change(s3_server, s3_bucket: str, h5_dir: Path) -> None:
    cfg = s3_server.s3config()
    loc = _fresh("stage", s3_bucket)

    first = stage(h5_dir, loc, cfg, jobs=3, progress=False)
    assert (first.files, first.skipped) == (3, 0)
    assert first.bytes == sum(p.stat().st_size for p in h5_dir.iterdir())
    client = cfg.boto3_client()
    for obj in list_shot_files(loc, cfg):
        local = h5_dir / Path(obj.key).name
        body = client.get_object(Bucket=loc.bucket, Key=obj.key)["Body"].read()
        assert body == local.read_bytes()
        assert obj.etag == hashlib.md5(body).hexdigest()

    again = stage(h5_dir, loc, cfg, jobs=3, progress=False)
    assert (again.files, again.bytes, again.skipped) == (0, 0, 3)

    changed = h5_dir / "shot-1.h5"  # same size, different bytes: only the ETag tells
    data = bytearray(changed.read_bytes())
    data[-1] ^= 0xFF
    changed.write_bytes(bytes(data))
    third = stage(h5_dir, loc, cfg, jobs=3, progress=False)
    assert (third.files, third.skipped) == (1, 2)
    assert client.get_object(Bucket=loc.bucket, Key=f"{loc.prefix}shot-1.h5")["Body"].read() == bytes(data)
    assert "MB/s" in third.line() and "skipped 2" in third.line()


def test_multipart_etag_is_recognised(s3_server, s3_bucket: str, tmp_path: Path) -> None:
    """An object uploaded in parts by another tool is still recognised as the same file."""
    path = tmp_path / "big.h5"
    path.write_bytes(os.urandom(11 * 1024 * 1024))
    client = s3_server.s3config().boto3_client()
    key = f"mp-{uuid.uuid4().hex[:6]}/big.h5"
    config = TransferConfig(multipart_threshold=5 * 1024 * 1024, multipart_chunksize=8 * 1024 * 1024)
    client.upload_file(str(path), s3_bucket, key, Config=config)
    etag = client.head_object(Bucket=s3_bucket, Key=key)["ETag"].strip('"')
    assert etag.endswith("-2") and etag == md5_etag(path, 8 * 1024 * 1024)
    assert same_object(path, path.stat().st_size, etag)
    path.write_bytes(os.urandom(11 * 1024 * 1024))
    assert not same_object(path, path.stat().st_size, etag)


def test_stage_creates_the_bucket_on_the_embedded_server(s3_server, h5_dir: Path) -> None:
    loc = parse_location(f"s3://new-{uuid.uuid4().hex[:8]}/shots")
    summary = stage(h5_dir, loc, s3_server.s3config(), jobs=2, progress=False)
    assert summary.files == 3
    assert len(list_shot_files(loc, s3_server.s3config())) == 3


def test_stage_mistakes_are_one_sentence(s3_server, s3_bucket: str, tmp_path: Path) -> None:
    cfg = s3_server.s3config()
    with pytest.raises(UserError, match="is not a folder; make shot files"):
        stage(tmp_path / "missing", parse_location(f"s3://{s3_bucket}/x"), cfg, progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="holds no files"):
        stage(tmp_path / "empty", parse_location(f"s3://{s3_bucket}/x"), cfg, progress=False)
    with pytest.raises(UserError, match="not an S3 location"):
        stage(tmp_path, parse_location(str(tmp_path)), cfg, progress=False)


def test_stage_command_prints_a_summary_and_no_secret(
    s3_server, s3_bucket: str, h5_dir: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    from shotbench.cli import main

    for var in set(os.environ) - set(without_s3_settings()):
        monkeypatch.delenv(var)
    for key, value in s3_server.s3config().env_vars().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SHOTBENCH_STATE", str(tmp_path / "state"))
    dest = f"s3://{s3_bucket}/cli-{uuid.uuid4().hex[:6]}"
    assert main(["stage", str(h5_dir), dest, "--jobs", "2"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("staged 3 files") and "MB/s" in out.out
    assert s3_server.secret_key not in out.out + out.err
    assert s3_server.access_key not in out.out + out.err


def test_stage_with_a_wrong_secret_says_so(s3_server, s3_bucket: str, h5_dir: Path) -> None:
    import dataclasses

    cfg = dataclasses.replace(s3_server.s3config(), secret_key="W" * 40)
    with pytest.raises(UserError, match="refused the secret key") as err:
        stage(h5_dir, parse_location(f"s3://{s3_bucket}/x"), cfg, progress=False)
    assert "W" * 40 not in str(err.value)


def test_stage_command_names_a_missing_source_before_asking_for_credentials(tmp_path: Path) -> None:
    """With no S3 configured at all, the first mistake to report is the missing folder."""
    env = without_s3_settings()
    env["SHOTBENCH_STATE"] = str(tmp_path / "state")
    proc = subprocess.run(
        [sys.executable, "-m", "shotbench", "stage", str(tmp_path / "nope"), "s3://mybucket/p"],
        capture_output=True, text=True, env=env,
    )
    assert proc.returncode == 2
    assert "is not a folder" in proc.stderr and "Traceback" not in proc.stderr

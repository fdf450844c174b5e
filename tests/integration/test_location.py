"""Data locations and preflight: every mistake a user can make is one quick, clear sentence."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from shotbench.errors import UserError
from shotbench.processes import free_port
from shotbench.store.s3 import S3Config, list_shot_files, parse_location, preflight, without_s3_settings

FAST = 6.0  # seconds: connect timeout 3 s, bounded retries


def _one_sentence(exc: UserError) -> str:
    msg = str(exc)
    assert "\n" not in msg and msg.endswith("."), msg
    assert "Traceback" not in msg
    return msg


def _preflight_error(loc_text: str, cfg: S3Config | None) -> tuple[str, float]:
    t = time.monotonic()
    with pytest.raises(UserError) as err:
        preflight(parse_location(loc_text), cfg)
    return _one_sentence(err.value), time.monotonic() - t


@pytest.mark.parametrize(
    ("text", "kind", "bucket", "prefix"),
    [
        ("s3://bucket/prefix", "s3", "bucket", "prefix/"),
        ("s3://bucket/prefix/", "s3", "bucket", "prefix/"),
        ("s3://bucket", "s3", "bucket", ""),
        ("s3://my.bucket-1/a/b", "s3", "my.bucket-1", "a/b/"),
        ("s3://bucket/shots/1160703001.h5", "s3", "bucket", "shots/1160703001.h5"),
    ],
)
def test_parse_s3_locations(text: str, kind: str, bucket: str, prefix: str) -> None:
    loc = parse_location(text)
    assert (loc.kind, loc.bucket, loc.prefix) == (kind, bucket, prefix)
    assert loc.uri() == f"s3://{bucket}/{prefix}"


def test_parse_local_folder(tmp_path: Path) -> None:
    loc = parse_location(str(tmp_path))
    assert loc.kind == "local" and loc.path == tmp_path.resolve()


@pytest.mark.parametrize("text", ["s3://", "s3://Upper/x", "s3://a/x", "s3://bad_name/x", "gs://bucket/x", " "])
def test_malformed_locations_are_one_sentence(text: str) -> None:
    with pytest.raises(UserError) as err:
        parse_location(text)
    assert "s3://bucket/prefix" in _one_sentence(err.value)


def test_unreachable_endpoint(s3_server) -> None:
    cfg = dataclasses.replace(s3_server.s3config(), endpoint_url=f"http://127.0.0.1:{free_port()}")
    msg, took = _preflight_error("s3://bucket/shots", cfg)
    assert "cannot reach the S3 endpoint" in msg and "shotbench server start" in msg
    assert took < FAST


def test_missing_bucket(s3_server) -> None:
    msg, took = _preflight_error(f"s3://missing-{uuid.uuid4().hex[:8]}/shots", s3_server.s3config())
    assert "does not exist" in msg and "shotbench stage" in msg
    assert took < FAST


def test_wrong_secret_names_the_fix_without_leaking(s3_server, s3_bucket: str) -> None:
    wrong = "WRONG" + "s" * 35
    cfg = dataclasses.replace(s3_server.s3config(), secret_key=wrong)
    msg, took = _preflight_error(f"s3://{s3_bucket}/shots", cfg)
    assert "AWS_SECRET_ACCESS_KEY" in msg and s3_server.access_key[:4] + "…" in msg
    assert wrong not in msg and s3_server.secret_key not in msg and s3_server.access_key not in msg
    assert took < FAST


def test_unknown_access_key(s3_server, s3_bucket: str) -> None:
    cfg = dataclasses.replace(s3_server.s3config(), access_key="SBNOBODY000000000000")
    msg, took = _preflight_error(f"s3://{s3_bucket}/shots", cfg)
    assert "AWS_ACCESS_KEY_ID" in msg and "SBNO…" in msg
    assert took < FAST


def test_empty_prefix(s3_server, s3_bucket: str) -> None:
    msg, took = _preflight_error(f"s3://{s3_bucket}/nothing-here", s3_server.s3config())
    assert "holds no shot files" in msg and "shotbench stage" in msg
    assert took < FAST


def test_object_that_is_not_hdf5(s3_server, s3_bucket: str) -> None:
    client = s3_server.s3config().boto3_client()
    client.put_object(Bucket=s3_bucket, Key="not-hdf5/notes.h5", Body=b"just some text, not HDF5\n" * 200)
    msg, took = _preflight_error(f"s3://{s3_bucket}/not-hdf5", s3_server.s3config())
    assert "is not an HDF5 file" in msg and "notes.h5" in msg
    assert took < FAST


def test_prefix_without_shot_file_names(s3_server, s3_bucket: str) -> None:
    s3_server.s3config().boto3_client().put_object(Bucket=s3_bucket, Key="docs/readme.txt", Body=b"hello")
    msg, _ = _preflight_error(f"s3://{s3_bucket}/docs", s3_server.s3config())
    assert "none named *.h5" in msg


def test_preflight_accepts_real_hdf5_on_s3(s3_server, s3_bucket: str, h5_dir: Path) -> None:
    from shotbench.store.staging import stage

    cfg = s3_server.s3config()
    loc = parse_location(f"s3://{s3_bucket}/preflight-ok/")
    stage(h5_dir, loc, cfg, jobs=2, progress=False)
    objs = preflight(loc, cfg)
    assert [o.key for o in objs] == [f"preflight-ok/shot-{i}.h5" for i in range(3)]
    assert [o.size for o in objs] == [(h5_dir / f"shot-{i}.h5").stat().st_size for i in range(3)]
    assert all(o.etag for o in objs)


def test_staged_synthetic_shots_pass_preflight(staged_shots) -> None:
    loc, cfg, objs = staged_shots
    assert len(objs) == 4 and all(o.size == 2_000_000 for o in objs)
    assert preflight(loc, cfg) == objs


def test_local_locations(tmp_path: Path, h5_dir: Path) -> None:
    assert [Path(o.key).name for o in preflight(parse_location(str(h5_dir)))] == [f"shot-{i}.h5" for i in range(3)]
    assert list_shot_files(parse_location(str(h5_dir)))[0].key == str(h5_dir / "shot-0.h5")

    with pytest.raises(UserError, match="does not exist; make shot files with `shotbench synth"):
        preflight(parse_location(str(tmp_path / "nope")))
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="holds no shot files"):
        preflight(parse_location(str(tmp_path / "empty")))
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "a.h5").write_text("hello")
    with pytest.raises(UserError, match="is not an HDF5 file"):
        preflight(parse_location(str(tmp_path / "text")))


def test_cli_ls_errors_are_one_line(s3_server, s3_bucket: str, tmp_path: Path, monkeypatch, capsys) -> None:
    from shotbench.cli import main

    for var in set(os.environ) - set(without_s3_settings()):
        monkeypatch.delenv(var)
    for key, value in s3_server.s3config().env_vars().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SHOTBENCH_STATE", str(tmp_path / "state"))

    assert main(["ls", "s3://Bad_Bucket/x"]) == 2
    assert capsys.readouterr().err.startswith("shotbench: '")
    assert main(["ls", f"s3://missing-{uuid.uuid4().hex[:8]}/x"]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and len(err.splitlines()) == 1
    s3_server.s3config().boto3_client().put_object(Bucket=s3_bucket, Key="ls/a.h5", Body=b"\x89HDF\r\n\x1a\n")
    assert main(["ls", f"s3://{s3_bucket}/ls"]) == 0
    out = capsys.readouterr()
    assert "ls/a.h5" in out.out
    assert s3_server.secret_key not in out.out + out.err


def test_console_script_reports_a_mistake_without_traceback(tmp_path: Path) -> None:
    """One real `shotbench` process, to see what a user's terminal shows."""
    env = without_s3_settings()
    env.update(
        AWS_ENDPOINT_URL_S3=f"http://127.0.0.1:{free_port()}", AWS_ACCESS_KEY_ID="SBXX", AWS_SECRET_ACCESS_KEY="y"
    )
    run = subprocess.run(
        [sys.executable, "-m", "shotbench.cli", "ls", "s3://some-bucket/x"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 2
    assert run.stderr.startswith("shotbench: cannot reach the S3 endpoint") and "Traceback" not in run.stderr

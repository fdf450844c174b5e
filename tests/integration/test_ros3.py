"""ROS3 through each real libhdf5 build, against the real embedded S3 server.

Each slow test runs inside the build's own environment (`.envs/<name>/bin/python`), so the
libhdf5 under test is the one compiled for it, never the one in the test runner's venv.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import time
from pathlib import Path

import pytest

from shotbench.builds import environments as envs
from shotbench.builds.specs import BUILDS
from shotbench.hdf5 import ros3open as ros3
from shotbench.store.s3 import S3Config, without_s3_settings

SERVER_CFG = S3Config(
    endpoint_url="http://127.0.0.1:9000", region="us-east-1", access_key="AKIAEXAMPLE", secret_key="s3cr3t"
)


# ------------------------------------------------------------------ fast: URL and settings


def test_url_for_114_is_http_path_style_on_the_endpoint() -> None:
    assert ros3.ros3_url(SERVER_CFG, "bkt", "shots/a b.h5", major=1) == "http://127.0.0.1:9000/bkt/shots/a%20b.h5"


def test_url_for_114_on_aws_uses_the_regional_host() -> None:
    cfg = S3Config(region="eu-west-1")
    assert ros3.ros3_url(cfg, "bkt", "k.h5", major=1) == "https://bkt.s3.eu-west-1.amazonaws.com/k.h5"
    assert ros3.ros3_url(cfg, "my.bkt", "k.h5", major=1) == "https://s3.eu-west-1.amazonaws.com/my.bkt/k.h5"


def test_url_for_2x_is_s3_scheme() -> None:
    assert ros3.ros3_url(SERVER_CFG, "bkt", "/shots/1.h5", major=2) == "s3://bkt/shots/1.h5"


def test_fapl_kwargs_are_bytes_and_signed() -> None:
    kw = ros3.fapl_kwargs(SERVER_CFG, major=1)
    assert kw == {"driver": "ros3", "aws_region": b"us-east-1", "secret_id": b"AKIAEXAMPLE", "secret_key": b"s3cr3t"}
    token = dataclasses.replace(SERVER_CFG, session_token="tok")
    assert ros3.fapl_kwargs(token, major=2)["session_token"] == b"tok"


def test_credentials_chain_leaves_the_keys_out_of_a_2x_fapl_only() -> None:
    """2.x's aws-c-auth can find keys itself; 1.14 cannot, so it is always given them."""
    chained = ros3.fapl_kwargs(SERVER_CFG, major=2, chain=True)
    assert chained == {"driver": "ros3", "aws_region": b"us-east-1"}
    assert ros3.fapl_kwargs(SERVER_CFG, major=1, chain=True)["secret_id"] == b"AKIAEXAMPLE"
    assert ros3.fapl_kwargs(SERVER_CFG, major=2)["secret_key"] == b"s3cr3t"


def test_ros3_env_points_2x_at_the_endpoint_and_skips_instance_metadata() -> None:
    env = ros3.ros3_env(SERVER_CFG)
    assert env["AWS_ENDPOINT_URL_S3"] == "http://127.0.0.1:9000"
    assert env["AWS_EC2_METADATA_DISABLED"] == "true"
    assert env["AWS_REGION"] == "us-east-1"
    assert env["AWS_SECRET_ACCESS_KEY"] == "s3cr3t"


def test_unreachable_endpoint_is_one_sentence_within_seconds() -> None:
    cfg = dataclasses.replace(SERVER_CFG, endpoint_url="http://127.0.0.1:9")
    started = time.monotonic()
    message = ros3.check_object(cfg, "bkt", "k.h5")
    assert time.monotonic() - started < 10
    assert message and message.startswith("cannot reach the S3 endpoint http://127.0.0.1:9")
    assert "s3cr3t" not in message


# ------------------------------------------------------------------ slow: every build, real server


def _python(name: str) -> Path:
    python = envs.env_dir(name) / "bin" / "python"
    if not python.exists():
        pytest.fail(f"{python} is missing: run `make envs` before the slow tests")
    return python


def _verify(
    name: str, cfg: S3Config, bucket: str, key: str, *extra: str, env: dict | None = None, timeout: float = 300
) -> tuple[int, dict]:
    """Run the ROS3 check inside the build's environment; (exit code, its JSON report)."""
    clean = {k: v for k, v in without_s3_settings().items() if k != "LD_LIBRARY_PATH"}
    run_env = {**clean, **ros3.ros3_env(cfg), **(env or {})}
    proc = subprocess.run(
        [str(_python(name)), "-m", "shotbench.builds.verify", "--bucket", bucket, "--key", key, *extra],
        capture_output=True,
        text=True,
        env=run_env,
        timeout=timeout,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, f"no report from {name}: {proc.stderr[-2000:]}"
    return proc.returncode, json.loads(lines[-1])


def _first(staged) -> tuple[str, str, S3Config, Path]:
    loc, cfg, objects = staged
    key = objects[0].key
    return loc.bucket, key, cfg, Path(key).name


BUILD_NAMES = list(BUILDS)


@pytest.mark.slow
@pytest.mark.parametrize("name", BUILD_NAMES)
def test_signed_ros3_read_matches_local_file_byte_for_byte(name: str, staged_shots, shot_dir: Path) -> None:
    bucket, key, cfg, filename = _first(staged_shots)
    code, report = _verify(name, cfg, bucket, key, "--local", str(shot_dir / filename))
    assert code == 0, report
    assert report["hdf5_version"] == BUILDS[name].hdf5_version
    assert report["driver"] == "ros3"
    assert report["mismatches"] == []
    assert report["signals"] >= 1 and report["scales"] >= 1
    assert report["datasets"] > report["signals"]


@pytest.mark.slow
@pytest.mark.parametrize("name", BUILD_NAMES)
def test_page_buffer_serves_a_paged_file(name: str, staged_shots, shot_dir: Path) -> None:
    bucket, key, cfg, filename = _first(staged_shots)
    code, report = _verify(name, cfg, bucket, key, "--local", str(shot_dir / filename), "--page-buf", str(4_000_000))
    assert code == 0, report
    assert report["mismatches"] == []
    meta = report["page_buffer"]["meta"]
    assert meta["hits"] + meta["misses"] > 0, report["page_buffer"]
    assert meta["hits"] > 0, "metadata came back without any page-buffer hit"


@pytest.mark.slow
@pytest.mark.parametrize("name", BUILD_NAMES)
def test_wrong_secret_is_a_clear_sentence_fast(name: str, staged_shots) -> None:
    bucket, key, cfg, _ = _first(staged_shots)
    bad = dataclasses.replace(cfg, secret_key="not-the-secret")
    started = time.monotonic()
    code, report = _verify(name, bad, bucket, key)
    elapsed = time.monotonic() - started
    assert code == 2, report
    assert "refused the credentials" in report["error"]
    assert "not-the-secret" not in json.dumps(report)
    assert elapsed < 30, f"{name} took {elapsed:.0f} s to report a wrong secret"


@pytest.mark.slow
@pytest.mark.parametrize("name", BUILD_NAMES)
def test_missing_key_says_so(name: str, staged_shots) -> None:
    bucket, _, cfg, _ = _first(staged_shots)
    code, report = _verify(name, cfg, bucket, "shots/no-such-shot.h5")
    assert code == 2, report
    assert "does not exist" in report["error"]


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in BUILD_NAMES if not n.startswith("hdf5-1.")])
def test_2x_reads_through_the_endpoint_variable(name: str, staged_shots, shot_dir: Path) -> None:
    """Plain h5py, no shotbench: s3:// names plus AWS_ENDPOINT_URL_S3 reach the local server."""
    bucket, key, cfg, filename = _first(staged_shots)
    script = (
        "import sys, h5py, numpy as np\n"
        "kw = dict(driver='ros3', aws_region=sys.argv[3].encode(), secret_id=sys.argv[4].encode(),"
        " secret_key=sys.argv[5].encode())\n"
        "with h5py.File(f's3://{sys.argv[1]}/{sys.argv[2]}', 'r', **kw) as r, h5py.File(sys.argv[6], 'r') as l:\n"
        "    names = []\n"
        "    l.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)\n"
        "    assert all(r[n][()].tobytes() == l[n][()].tobytes() for n in names)\n"
        "    print(len(names))\n"
    )
    env = without_s3_settings()
    env.update(AWS_ENDPOINT_URL_S3=cfg.endpoint_url, AWS_EC2_METADATA_DISABLED="true")
    proc = subprocess.run(
        [
            str(_python(name)),
            "-c",
            script,
            bucket,
            key,
            cfg.region,
            cfg.access_key,
            cfg.secret_key,
            str(shot_dir / filename),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout.strip()) > 1


@pytest.mark.slow
@pytest.mark.parametrize("name", BUILD_NAMES)
def test_unreachable_endpoint_is_named_and_precheck_bounds_the_wait(name: str, staged_shots) -> None:
    """A dead endpoint: 2.x retries for seconds on its own; the pre-check answers at once."""
    bucket, key, cfg, _ = _first(staged_shots)
    dead = dataclasses.replace(cfg, endpoint_url="http://127.0.0.1:9")
    for extra, limit in (((), 60), (("--precheck",), 10)):
        started = time.monotonic()
        code, report = _verify(name, dead, bucket, key, *extra)
        elapsed = time.monotonic() - started
        assert code == 2, report
        assert report["error"].startswith("cannot reach the S3 endpoint http://127.0.0.1:9"), report
        assert elapsed < limit, f"{name} {extra}: {elapsed:.0f} s"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hdf5-2.0-zlibng", "hdf5-2.0"])
def test_the_zlib_ng_build_inflates_with_zlib_ng_and_the_plain_one_does_not(name: str) -> None:
    """The label `ros3-2.0-zlibng` is what its libhdf5 has: zlib-ng's functions are linked into the
    very library h5py loads there, and not into the plain 2.0 build's."""
    code = (
        "import h5py\n"
        "from shotbench.hdf5.library import mapped_libhdf5\n"
        "data = open(mapped_libhdf5()[0], 'rb').read()\n"
        "print(b'zng_inflate' in data)\n"
    )
    done = subprocess.run([str(envs.env_python(name)), "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(name.endswith("zlibng"))

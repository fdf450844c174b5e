"""Mistakes a user can make end in one sentence, a non-zero exit, and no run folder."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from support.bench import assert_one_sentence, refuse, run_bench


def test_missing_bucket_fails_fast(s3_server, tmp_path: Path) -> None:
    t0 = time.time()
    proc = run_bench(
        ["--data", "s3://no-such-bucket-sb/shots/", "--backends", "local", "obstore"],
        tmp_path,
        s3_server.s3config().env_vars(),
    )
    assert_one_sentence(proc, tmp_path, "no-such-bucket-sb")
    assert time.time() - t0 < 60
    assert s3_server.secret_key not in proc.stdout + proc.stderr


def test_unreachable_endpoint_fails_fast(tmp_path: Path) -> None:
    t0 = time.time()
    env = {
        "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9",
        "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "not-a-real-secret-value",
        "AWS_REGION": "us-east-1",
    }
    proc = run_bench(["--data", "s3://somebucket/shots/", "--backends", "obstore"], tmp_path, env)
    assert_one_sentence(proc, tmp_path)
    assert time.time() - t0 < 60
    assert "not-a-real-secret-value" not in proc.stderr + proc.stdout


def test_missing_local_folder(tmp_path: Path) -> None:
    proc = refuse(["--data", str(tmp_path / "nope"), "--backends", "local"], tmp_path)
    assert_one_sentence(proc, tmp_path)


@pytest.mark.parametrize(
    ("args", "word"),
    [
        (["--backends", "nosuch"], "nosuch"),
        (["--profile", "quick", "--config", "/nonexistent.toml"], "nonexistent"),
        (["--workers", "0", "--backends", "local"], "worker"),
        (["--page-buffers", "4096", "--backends", "local"], "page buffer"),
        (["--resume"], "resume"),
    ],
)
def test_bad_arguments(args: list[str], word: str, tmp_path: Path) -> None:
    proc = refuse(args, tmp_path)
    assert_one_sentence(proc, tmp_path)
    assert word in proc.stderr.lower()


def test_bad_toml_names_the_setting(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("wrokers = [1, 2]\n")
    proc = refuse(["--config", str(cfg)], tmp_path)
    assert_one_sentence(proc, tmp_path, "wrokers")


def test_profiles_load_and_override(tmp_path: Path) -> None:
    from shotbench.plan import profiles

    quick = profiles.load("quick")
    assert set(quick.backends) >= {
        "ros3-1.14",
        "ros3-2.0",
        "ros3-wheel",
        "fsspec",
        "obstore",
        "download",
        "local",
        "raw-get",
    }
    assert "ros3-2.2" not in quick.backends  # built on first selection, not by the default run
    full = profiles.load("full")
    assert full.workers == [1, 2, 4, 8, 16, 24, 32, 48, 64] and full.page_buffers == [0, 268435456]
    cfg = tmp_path / "c.toml"
    cfg.write_text('profile = "full"\nworkers = [1, 4]\n[options.fsspec]\ncache_type = "readahead"\n')
    c = profiles.load("quick", cfg, {"trials": 5})
    assert c.profile == "full" and c.workers == [1, 4] and c.trials == 5
    assert c.options == {"fsspec": {"cache_type": "readahead"}}


def test_embedded_server_is_https_unless_told_otherwise() -> None:
    """Real S3 is https, and http hides 1.14's TLS setup per open: the default run is https."""
    from shotbench.commands.bench import default_tls

    assert default_tls(None, None, "none") is True
    assert default_tls(None, None, "upstream-ec2") is True
    assert default_tls(False, None, "none") is False  # --no-tls / --http
    assert default_tls(None, "s3://bucket/prefix", "none") is False  # the user's endpoint decides
    assert default_tls(None, None, "http-flaky-5pc") is False  # a plain-HTTP fault proxy


def test_upstream_ec2_models_the_study_scaled_to_this_machine() -> None:
    from shotbench.plan import profiles
    from shotbench.plan.matrix import UPSTREAM_PAGE_BUFFER
    from shotbench.store.network import NETWORK_PROFILES

    net = NETWORK_PROFILES["upstream-ec2"]
    assert net is not None and 10 <= net.latency_ms <= 30 and net.bandwidth_kbps == 90_000
    cfg = profiles.load("upstream-ec2")
    assert cfg.page_buffers == [0, UPSTREAM_PAGE_BUFFER] and cfg.trials >= 3
    assert profiles.upstream_workers(2) == [1, 2, 8] and profiles.upstream_workers(16) == [1, 16, 64]
    assert {"ros3-1.14", "ros3-2.0"} <= set(cfg.backends)
    assert profiles.PROFILE_NETWORK["upstream-ec2"] == "upstream-ec2"

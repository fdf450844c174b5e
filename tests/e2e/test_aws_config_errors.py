"""AWS configuration mistakes end every command in one sentence: a profile that does
not exist, a config file that does not parse, a credentials file that cannot be read or holds
half a key pair. Each test runs the real CLI as a user would, with a private HOME so the
machine's own ~/.aws never leaks in, and checks the exit status, that stderr is one sentence
naming the fix, and that no traceback got out.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shotbench.paths import cache_dir, envs_dir
from shotbench.store.s3 import without_s3_settings
from support.filerights import without_file_rights
from support.incli import completed

TIMEOUT = 300  # bench builds missing backend environments before it looks at S3


def _env(tmp_path: Path, **aws: str) -> dict[str, str]:
    env = without_s3_settings()
    env.update(
        HOME=str(tmp_path / "home"),
        SHOTBENCH_STATE=str(tmp_path / "state"),
        SHOTBENCH_ROOT=str(tmp_path / "root"),  # synthetic data and run folders stay in tmp_path
        SHOTBENCH_ENVS=str(envs_dir()),  # the backend environments already built for this checkout
        SHOTBENCH_CACHE=str(cache_dir()),  # the S3 server already built (HOME moves the default cache)
    )
    (tmp_path / "home").mkdir(exist_ok=True)
    env.update(aws)
    return env


def _shots(tmp_path: Path) -> Path:
    from shotbench.hdf5.synthesis import make_dataset

    out = tmp_path / "shots"
    make_dataset(out, shots=1, signals=2, file_size=200_000, page_size=100_000, seed=0)
    return out


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in this process with a child's environment: the refusal is the CLI's, the process
    start is not what these tests test (the mode-000 test below runs as its own process)."""
    return completed(args, env, cwd)


def assert_one_sentence(done: subprocess.CompletedProcess[str], *words: str) -> str:
    """Exit 2, no traceback, and the last line of stderr is the one `shotbench:` sentence."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("shotbench: ") and last.endswith("."), done.stderr
    assert [ln for ln in done.stderr.splitlines() if ln.startswith("shotbench: ")] == [last], done.stderr
    for word in words:
        assert word in last, (word, last)
    return last


# bench makes any missing backend environment before it looks at S3: slow on a cold checkout
COMMANDS = ["stage", "ls", pytest.param("bench --data s3://", marks=pytest.mark.slow), "transfer --data s3://"]


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    shots = _shots(tmp_path)
    return {
        "stage": ["stage", str(shots), "s3://bkt/shots/"],
        "ls": ["ls", "s3://bkt/shots/"],
        "bench --data s3://": ["bench", "--data", "s3://bkt/shots/", "--backends", "obstore", "--workers", "1"],
        "transfer --data s3://": [
            "transfer",
            "--data",
            "s3://bkt/shots/",
            "--rows",
            "1x1MiB",
            "--networks",
            "none",
            "--out",
            str(tmp_path / "transfer"),
        ],
    }


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_profile_is_one_sentence(command: str, tmp_path: Path) -> None:
    done = run(_commands(tmp_path)[command], _env(tmp_path, AWS_PROFILE="nosuch"), tmp_path)
    assert_one_sentence(done, "'nosuch'", "AWS_PROFILE")


def test_a_missing_profile_lists_the_profiles_there_are(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    cfg.write_text("[default]\nregion = us-east-1\n[profile work]\nregion = eu-west-1\n")
    done = run(_commands(tmp_path)["stage"], _env(tmp_path, AWS_PROFILE="nosuch", AWS_CONFIG_FILE=str(cfg)), tmp_path)
    assert_one_sentence(done, "'nosuch'", "default, work")


@pytest.mark.slow
def test_a_missing_profile_with_the_embedded_server_is_one_sentence(tmp_path: Path) -> None:
    """`bench` against the embedded server: the profile is the user's mistake all the same."""
    args = ["bench", "--backends", "obstore", "--modes", "shots", "--workers", "1", "--trials", "1", "--shots", "1"]
    done = run(args, _env(tmp_path, AWS_PROFILE="nosuch"), tmp_path)
    assert_one_sentence(done, "'nosuch'", "AWS_PROFILE")
    assert not list((tmp_path / "root" / "data" / "runs").glob("*/run.json"))  # no run started


@pytest.mark.parametrize("command", COMMANDS)
def test_a_config_file_that_does_not_parse_is_one_sentence(command: str, tmp_path: Path) -> None:
    secret = "wJalrXUtnFEMIEXAMPLESECRET"
    cfg = tmp_path / "config"
    cfg.write_text(f"[default]\nregion = us-east-1\n[profile broken\naws_secret_access_key = {secret}\n")
    done = run(_commands(tmp_path)[command], _env(tmp_path, AWS_CONFIG_FILE=str(cfg)), tmp_path)
    last = assert_one_sentence(done, str(cfg), "AWS_CONFIG_FILE", "line 3")
    assert secret not in done.stderr + done.stdout and secret not in last


@pytest.mark.parametrize("command", COMMANDS)
def test_a_credentials_path_that_is_a_folder_is_one_sentence(command: str, tmp_path: Path) -> None:
    creds = tmp_path / "credentials"
    creds.mkdir()
    done = run(_commands(tmp_path)[command], _env(tmp_path, AWS_SHARED_CREDENTIALS_FILE=str(creds)), tmp_path)
    assert_one_sentence(done, str(creds), "cannot be read", "AWS_SHARED_CREDENTIALS_FILE")


def test_an_unreadable_credentials_file_is_one_sentence(tmp_path: Path) -> None:
    """Mode 000: botocore skips such a file without a word ("no credentials"). Root reads any
    file, so as root (CI) the command runs without the capabilities that let it (setpriv)."""
    creds = tmp_path / "credentials"
    creds.write_text("[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = s\n")
    creds.chmod(0o000)
    args = [sys.executable, "-m", "shotbench.cli", "stage", str(_shots(tmp_path)), "s3://bkt/shots/"]
    args = without_file_rights(args)
    env = _env(tmp_path, AWS_SHARED_CREDENTIALS_FILE=str(creds))
    done = subprocess.run(args, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT)
    assert_one_sentence(done, str(creds), "cannot be read", "Permission denied")


def test_half_a_key_pair_is_one_sentence(tmp_path: Path) -> None:
    creds = tmp_path / "credentials"
    creds.write_text("[default]\naws_access_key_id = AKIAEXAMPLE\n")
    done = run(_commands(tmp_path)["stage"], _env(tmp_path, AWS_SHARED_CREDENTIALS_FILE=str(creds)), tmp_path)
    assert_one_sentence(done, "incomplete", "aws_secret_access_key")


def test_translate_leaves_other_errors_alone() -> None:
    """The CLI's safety net must not turn a bug into a user error."""
    from botocore.exceptions import ClientError

    from shotbench.store.awsconfig import translate

    assert translate(ValueError("bug")) is None
    assert translate(OSError(2, "No such file", "/somewhere/else")) is None
    assert translate(ClientError({"Error": {"Code": "NoSuchBucket"}}, "ListObjectsV2")) is None

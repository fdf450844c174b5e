"""An S3 endpoint that accepts connections and never answers (a hung server, a proxy whose
upstream is gone): every command that asks it something names it in one sentence within
seconds. Before, `ls` waited 3 minutes, `stage` 4, and `doctor` found no problem."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from shotbench.store.s3 import PREFLIGHT_READ_TIMEOUT, without_s3_settings
from support.proxies import silent_port


@pytest.mark.slow  # the wait is the point: two bounded reads of 10 s
def test_ls_stage_and_doctor_name_a_silent_endpoint_within_seconds(tmp_path: Path) -> None:
    with silent_port() as port:
        done = _ask_each(f"http://127.0.0.1:{port}", tmp_path)
    for name, (out, err, code, seconds, endpoint) in done.items():
        text = err if name != "doctor" else out
        assert "Traceback" not in err, (name, err)
        assert code == (1 if name == "doctor" else 2), (name, code, out, err)
        assert f"{endpoint} accepted the connection but did not answer" in text, (name, out, err)
        # two bounded reads at most, plus the interpreter's start on a busy machine (was 183-230 s)
        assert seconds < 2 * PREFLIGHT_READ_TIMEOUT + 15, (name, seconds)


def _ask_each(endpoint: str, tmp_path: Path) -> dict[str, tuple[str, str, int, float, str]]:
    """ls, stage and doctor at once against `endpoint`: their output, exit status and seconds."""
    env = {
        **without_s3_settings(),
        "SHOTBENCH_STATE": str(tmp_path / "state"),
        "AWS_ENDPOINT_URL_S3": endpoint,
        "AWS_ACCESS_KEY_ID": "AKIDSILENT",
        "AWS_SECRET_ACCESS_KEY": "not-a-secret",
    }
    (tmp_path / "shots").mkdir()
    (tmp_path / "shots" / "a.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(64))
    commands = {
        "ls": ["ls", "s3://bucket/shots"],
        "stage": ["stage", str(tmp_path / "shots"), "s3://bucket/shots"],
        "doctor": ["doctor", "--data", "s3://bucket/shots"],
    }
    t0 = time.monotonic()
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "shotbench.cli", *args],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, args in commands.items()
    }
    try:
        return {
            name: (*p.communicate(timeout=90), p.returncode, time.monotonic() - t0, endpoint)
            for name, p in procs.items()
        }
    finally:
        for p in procs.values():
            p.kill()

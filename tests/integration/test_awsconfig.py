"""A profile's credential_process that never answers (`store/awsconfig.py`): botocore waits for it
without a bound, so `shotbench ls` hung for good; now one sentence naming it, after the bound, and
the process (with what it started) is gone."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from shotbench.processes import pid_alive
from shotbench.store import awsconfig
from support.incli import one_line

HANGS = """\
import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "300"])  # holds the pipes botocore reads, as a wrapper's child would
open(sys.argv[1], "w").write(f"{os.getpid()} {child.pid}")
time.sleep(300)
"""


@pytest.mark.timeout(30)  # before the bound, this test hung here
def test_a_credential_process_that_never_answers_is_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, pids = tmp_path / "hangs.py", tmp_path / "pids"
    script.write_text(HANGS)
    (tmp_path / "config").write_text(f"[profile slow]\ncredential_process = {sys.executable} {script} {pids}\n")
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_PROFILE", "slow")
    monkeypatch.setenv("SHOTBENCH_STATE", str(tmp_path / "state"))
    monkeypatch.setattr(awsconfig, "CREDENTIAL_PROCESS_TIMEOUT", 2.0)
    try:
        t0 = time.monotonic()
        code, line = one_line(["ls", "s3://some-bucket/shots/"])
        assert time.monotonic() - t0 < 15
        assert code == 2 and line == (
            f"shotbench: the credential_process of AWS profile 'slow' ({Path(sys.executable).name}) gave no credentials "
            f"within 2 s; run it alone to see what it waits for, fix it in {tmp_path / 'config'}, or set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY."
        ), line
        started = [int(p) for p in pids.read_text().split()]
        assert not pid_alive(started[0], "hangs.py") and not _running(started[1]), started
    finally:
        for pid in [int(p) for p in pids.read_text().split()] if pids.exists() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting for init to reap it, within a second."""
    deadline = time.monotonic() + 1
    while pid_alive(pid, "sleep") and time.monotonic() < deadline:
        time.sleep(0.05)
    return pid_alive(pid, "sleep")

"""`make rehearse` as a developer runs it, again and again: a green rehearsal leaves its logs, not
the gigabytes of its clone, HOME and cache in /tmp; a red one leaves everything to look at."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from shotbench.paths import repo_root


def _rehearse(*targets: str) -> tuple[subprocess.CompletedProcess, Path]:
    if shutil.which("git") is None or not (repo_root() / ".git").exists():
        pytest.skip("needs git and a checkout to clone")
    proc = subprocess.run(
        ["bash", str(repo_root() / "scripts" / "rehearse.sh"), "warm", *targets],
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r"clone of \S+ in (\S+)", proc.stderr)
    assert found, proc.stderr
    return proc, Path(found[1])


def test_a_green_rehearsal_keeps_its_logs_and_removes_its_clone() -> None:
    proc, work = _rehearse("help")
    try:
        assert proc.returncode == 0, proc.stderr
        assert sorted(p.name for p in work.iterdir()) == ["help.log"]
        assert "bench-ros3" in (work / "help.log").read_text()
        assert f"the logs stay in {work}" in proc.stderr
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_a_red_rehearsal_keeps_everything() -> None:
    proc, work = _rehearse("no-such-target")
    try:
        assert proc.returncode == 1
        assert (work / "clone" / "Makefile").is_file() and (work / "no-such-target.log").is_file()
        assert f"everything stays in {work}" in proc.stderr
    finally:
        shutil.rmtree(work, ignore_errors=True)

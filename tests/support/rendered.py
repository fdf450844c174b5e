"""A report rendered once for the whole test session, whichever test process asks for it first.

Rendering a report is a notebook kernel, its figures and a Chromium screenshot: 7-8 CPU-s. Test
files that read the same render (the fixture run's report with `--no-code`) share one: the first
test process to ask renders it under a lock in the session's temporary folder, which the `-n`
workers of one session share, and the others wait for it and read it. Tests only read a shared
render; a test that changes files renders its own.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shotbench import locks
from support.golden import RUN_FIXTURE


def report_args(inputs: list[str]) -> tuple[str, ...]:
    """`--input SPEC` for each input, code hidden."""
    return (*(a for spec in inputs for a in ("--input", spec)), "--no-code")


RUN_REPORT = report_args([f"fixture={RUN_FIXTURE}"])  # the fixture run's report


def shared_report(factory: pytest.TempPathFactory, label: str, args: tuple[str, ...]) -> Path:
    """The folder `shotbench report ARGS --output FOLDER` wrote, rendered once per session: the
    folder is named by `label` and the arguments, so two files asking for the same render share it."""
    base = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # popen-gwN/ is one worker's; its parent is the session's
    name = f"{label}-{hashlib.sha256(chr(0).join(args).encode()).hexdigest()[:12]}"
    out, done = base / name, base / f"{name}.done"
    with locks.exclusive(base / f"{name}.lock"):
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)
            proc = subprocess.run(
                [sys.executable, "-m", "shotbench.cli", "report", *args, "--output", str(out)],
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
            done.touch()
    return out

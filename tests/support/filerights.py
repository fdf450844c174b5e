"""Running a command so that file permissions bind, as a user's would: as root (CI), without the
capabilities that override them."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest


def without_file_rights(argv: list[str]) -> list[str]:
    """`argv` as it runs with file permissions binding: unchanged for a user, under setpriv for root;
    the test is skipped where root cannot drop those capabilities."""
    if os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv (util-linux), so no file is unreadable here")
    caps = "-dac_override,-dac_read_search"
    drop = [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]
    probe = subprocess.run([*drop, "true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"root here cannot drop its capabilities: {probe.stderr.strip()}")
    return [*drop, *argv]

"""Running a command so that file permissions (or the low ports' rule) bind, as a user's would: as
root (CI), without the capabilities that override them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def without_file_rights(argv: list[str]) -> list[str]:
    """`argv` as it runs with file permissions binding: unchanged for a user, under setpriv for root;
    the test is skipped where root cannot drop those capabilities."""
    return [*_dropping("dac_override,dac_read_search", "no file is unreadable here"), *argv]


def without_low_ports() -> tuple[list[str], int]:
    """What to put before a command so that it runs refused the ports below ip_unprivileged_port_start,
    as a user's does (root drops CAP_NET_BIND_SERVICE, which `without_file_rights` keeps), and one
    such port (81 where it is one); the test is skipped where every port is open to every user."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_unprivileged_port_start").read_text())
    except (OSError, ValueError):
        pytest.skip("no ip_unprivileged_port_start here to say which ports are refused")
    if low <= 1:
        pytest.skip(f"every port from {low} is open to every user here (ip_unprivileged_port_start)")
    return _dropping("net_bind_service", "every port can be bound here"), min(81, low - 1)


def _dropping(names: str, otherwise: str) -> list[str]:
    """The setpriv command line that drops the capabilities `names` (comma-separated) when run as
    root, or nothing for a user; the test is skipped where root cannot drop them."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip(f"running as root without setpriv (util-linux), so {otherwise}")
    caps = ",".join(f"-{name}" for name in names.split(","))
    drop = [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]
    probe = subprocess.run([*drop, "true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"root here cannot drop its capabilities: {probe.stderr.strip()}")
    return drop

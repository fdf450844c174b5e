"""Starting `backends.readcheck` in a backend's own environment, the way the timed workers start:
that environment's Python, the backends' process variables and, for ROS3 behind a private CA, the
mount namespace in which that CA is the system bundle (ROS3 trusts no other). The byte check and
the key pre-flight both start readcheck through here, so neither can forget the CA again."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shotbench.backends import registry
from shotbench.backends.base import child_env
from shotbench.store import tls


def readcheck_command(backends: Sequence[str], s3: Any, scratch: Path) -> tuple[list[str], dict[str, str]]:
    """argv and environment of one readcheck process for `backends` (all of one environment).

    `scratch` holds the namespace's CA bundle; it must outlive the process."""
    cls = registry.get(backends[0])
    extra: dict[str, str] = {}
    if s3 is not None:
        extra.update(s3.env_vars())
        for name in backends:
            extra.update(registry.get(name).process_env(s3))
    prefix: list[str] = []
    ca = getattr(s3, "ca_bundle", None)
    if ca and any(name.startswith("ros3") for name in backends):
        prefix = tls.with_system_bundle(tls.trusting(ca, scratch), [])
    return [*prefix, str(cls.python()), "-m", "shotbench.backends.readcheck"], child_env(extra)

"""A case's S3 settings and credentials, carried with each task submission, never in a worker's
start-up environment.

Workers that a run starts itself (LocalCluster) inherit the driver's environment; workers that a
user started on other hosts (`bench --scheduler`) do not, and read with no credentials at all.
So the driver sends the settings with every task it submits (`in_case`), in memory, and the task
sets them in its worker process before the backend is built. They are never written to disk,
and their text form names only how many there are: Dask's "Compute Failed" log prints a failed
task's arguments.

The seam for per-case credentials: `case_settings` is the one place that decides what a case's
tasks carry (today, the variables the orchestrator gave the driver).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from typing import Any

CASE_VARS = "SHOTBENCH_CASE_VARS"  # names (never values) of the driver's variables that tasks carry
_S3_PREFIXES = ("AWS_",)


class CaseSettings:
    """Environment variables a task sets in its worker before it reads; opaque in logs."""

    def __init__(self, env: dict[str, str]) -> None:
        self._env = dict(env)

    def __repr__(self) -> str:
        return f"<case settings: {len(self._env)} variables>"

    __str__ = __repr__

    def names(self) -> list[str]:
        return sorted(self._env)

    def apply(self) -> None:
        """Set them in this process, and drop any other AWS_* variable the worker was started with,
        so a worker reads with the run's settings, not with whatever its host had."""
        for name in [n for n in os.environ if n.startswith(_S3_PREFIXES) and n not in self._env]:
            del os.environ[name]
        os.environ.update(self._env)


def case_settings(environ: dict[str, str] | None = None) -> CaseSettings:
    """What every task of this driver's cases carries: the variables the orchestrator named in
    SHOTBENCH_CASE_VARS (S3 endpoint, region, a backend's own variables; the credentials travel
    in the case's Spec), or, for a driver started without that list, its AWS_* variables."""
    env = os.environ if environ is None else environ
    if CASE_VARS in env:
        names = [n for n in env[CASE_VARS].split(",") if n]
    else:  # a driver started by hand (or by a test) with the S3 settings in its environment
        names = [n for n in env if n.startswith(_S3_PREFIXES)]
    return CaseSettings({n: env[n] for n in names if n in env})


def in_case(settings: CaseSettings, fn: Callable[..., Any], *args: Any) -> Any:
    """Runs in the worker: the case's settings first, then the task."""
    settings.apply()
    return fn(*args)


def submit(client: Any, settings: CaseSettings, fn: Callable[..., Any], *args: Any, worker: str) -> Any:
    """`fn(*args)` on exactly `worker`, carrying the case's settings; the key names the function."""
    return client.submit(
        in_case,
        settings,
        fn,
        *args,
        key=f"{fn.__name__}-{uuid.uuid4().hex}",
        workers=[worker],
        allow_other_workers=False,
        pure=False,
    )

"""Child processes that cannot outlive the run that started them, even after SIGKILL.

The orchestrator starts each environment's driver in its own process group (so a Ctrl-C in
the terminal reaches only the orchestrator, which then stops the drivers in order). If the
orchestrator is killed outright, nothing stops them: the kernel's parent-death signal does.
The driver turns that signal into the end of its whole group, which holds its Dask scheduler,
nannies, workers and resource tracker.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A `preexec_fn` for Popen: the child gets `sig` when the process that started it dies."""
    parent = os.getpid()

    def arm() -> None:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig))
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), sig)

    return arm


def end_group_on(signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGHUP)) -> None:
    """In a process-group leader: on any of `signals`, kill the whole group at once (itself
    and every process it started), so no Dask process is left behind."""

    def handler(signum: int, _frame: object) -> None:
        os.killpg(os.getpgrp(), signal.SIGKILL)

    for sig in signals:
        signal.signal(sig, handler)

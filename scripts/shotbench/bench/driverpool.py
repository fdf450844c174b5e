"""One driver process per Python environment, spoken to with `bench/protocol.py`'s messages:
started once, asked to warm a cluster and run a case, stopped at the end (scheduling).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, TypeVar

from shotbench.backends import registry
from shotbench.backends.base import Backend, child_env
from shotbench.bench.casesettings import CASE_VARS
from shotbench.bench.protocol import (
    PROTOCOL_VERSION,
    Close,
    Failed,
    Hello,
    ProtocolMismatch,
    Quit,
    Reply,
    Request,
    read_reply,
)
from shotbench.bench.watchdog import ServerGone, Watchdog
from shotbench.processes import die_with_parent
from shotbench.redact import CREDENTIAL_VARS


class DriverError(RuntimeError):
    """The driver process of an environment failed (or exited)."""


class DriverTimeout(DriverError):
    """The driver did not answer within the deadline; its process group has been ended."""


HELLO_TIMEOUT = 180.0  # a driver imports h5py, numpy and dask before it answers


PREPARE_TIMEOUT = 300.0  # starting and warming a LocalCluster (bounded; a dead scheduler ends here)


R = TypeVar("R", bound=Reply)


class DriverProc:
    """`<env python> -m shotbench.bench.driver --serve`, spoken to with `bench/protocol.py`'s messages."""

    def __init__(
        self,
        name: str,
        python: Path,
        env: dict[str, str],
        log: Path,
        scheduler: str | None,
        prefix: list[str] | None = None,
    ) -> None:
        self.name, self.python, self.env, self.log, self.scheduler = name, python, env, log, scheduler
        self.prefix = list(prefix or [])  # e.g. a mount namespace that trusts a private CA
        self.proc: subprocess.Popen[str] | None = None
        self.versions: dict[str, str] = {}
        self.watch: Watchdog | None = None  # checked between waits for a reply; may raise ServerGone

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        cmd = [*self.prefix, str(self.python), "-m", "shotbench.bench.driver", "--serve"]
        if self.scheduler:  # a user's cluster: this environment's pool of it (bench/pools.py)
            cmd += ["--scheduler", self.scheduler, "--pool", self.name]
        self._logfh = open(self.log, "a")
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._logfh,
            text=True,
            env=self.env,
            start_new_session=True,
            bufsize=1,
            preexec_fn=die_with_parent(),
        )
        self.versions = self.request(Hello(PROTOCOL_VERSION), timeout=HELLO_TIMEOUT).versions

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def request(self, req: Request[R], timeout: float | None = None) -> R:
        """One request, one reply line; with `timeout`, a driver that has not answered in time
        is ended (with its Dask processes) and `DriverTimeout` raised. A driver whose reply
        shows another version of shotbench is ended too (`ProtocolMismatch`, naming `make envs`)."""
        if not self.alive() and not isinstance(req, Hello):
            self.start()
        assert self.proc and self.proc.stdin and self.proc.stdout
        try:
            self.proc.stdin.write(json.dumps(req.to_json()) + "\n")
            self.proc.stdin.flush()
            self._wait(timeout)
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            raise DriverError(f"the {self.name} driver exited; see {self.log}")
        try:
            reply = read_reply(req, json.loads(line))
        except ProtocolMismatch as exc:
            self.kill()
            raise ProtocolMismatch(f"the {self.name} environment: {exc}") from None
        if isinstance(reply, Failed):
            raise DriverError(reply.error)
        return reply

    def _wait(self, timeout: float | None) -> None:
        """Until the reply is ready: in slices, so the watchdog can end a case whose server died
        (the driver is ended with its Dask processes, then `ServerGone` is raised); past
        `timeout` the driver is ended and `DriverTimeout` raised."""
        assert self.proc and self.proc.stdout
        if timeout is None and self.watch is None:
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                self.kill()
                raise DriverTimeout(f"no answer from the {self.name} driver within {timeout:.0f} s")
            slice_ = left
            if self.watch is not None:  # wake up when the next check is due
                due = max(0.05, self.watch.due - time.monotonic())
                slice_ = due if left is None else min(left, due)
            if select.select([self.proc.stdout], [], [], slice_)[0]:
                return
            if self.watch is not None and (left is None or slice_ is None or left > slice_):
                try:
                    self.watch(None if deadline is None else deadline - time.monotonic())
                except ServerGone:
                    self.kill()
                    raise

    def stop(self, timeout: float = 20.0) -> None:
        """Ask the driver to quit (it closes its clusters); if it is busy mid-case, end its
        process group (the driver and the Dask processes it started)."""
        if self.proc is None:
            return
        try:
            if self.alive():
                assert self.proc.stdin
                self.proc.stdin.write(json.dumps(Quit().to_json()) + "\n")
                self.proc.stdin.flush()
                self.proc.stdin.close()
                self.proc.wait(timeout=timeout)
        except Exception:  # noqa: BLE001 - fall through to ending the group
            pass
        self.kill()

    def kill(self) -> None:
        """End the driver's process group (the driver and the Dask processes it started)."""
        if self.proc is None:
            return
        if self.alive():
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, sig)
                try:
                    self.proc.wait(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self.proc = None


class Drivers:
    """One driver per environment, started on first use; keeps warm clusters within a budget."""

    def __init__(
        self, s3: Any, log_dir: Path, scheduler: str | None, max_live_workers: int, backends: list[str]
    ) -> None:
        self.s3, self.log_dir, self.scheduler = s3, log_dir, scheduler
        self.max_live = max_live_workers
        self.drivers: dict[str, DriverProc] = {}
        self.live: OrderedDict[str, int] = OrderedDict()  # environment -> size of its warm cluster
        self.backends = backends
        self.watch: Watchdog | None = None  # set by the Runner for the cases it runs

    def for_backend(self, cls: type[Backend]) -> DriverProc:
        key = cls.env_key()
        drv = self.drivers.get(key)
        if drv is None:
            extra = dict(self.s3.env_vars()) if self.s3 is not None else {}
            if self.s3 is not None:
                for name in self.backends:
                    other = registry.get(name)
                    if other.env_key() == key:
                        extra.update(other.process_env(self.s3))
            for name in CREDENTIAL_VARS:  # each case's own set travels with it (Spec.credentials)
                extra.pop(name, None)
            extra[CASE_VARS] = ",".join(sorted(extra))  # names only: what each task carries to its worker
            drv = DriverProc(
                key,
                cls.python(),
                child_env(extra),
                self.log_dir / f"driver-{key}.log",
                self.scheduler,
                self._trust_prefix(cls),
            )
            drv.watch = self.watch
            drv.start()
            self.drivers[key] = drv
        elif not drv.alive():
            self.live.pop(key, None)
            drv.start()
        drv.watch = self.watch
        return drv

    def _trust_prefix(self, cls: type[Backend]) -> list[str]:
        """ROS3 drivers trust only the system CA bundle: over https to the embedded server they
        run in a mount namespace whose system bundle also holds its private CA."""
        ca = getattr(self.s3, "ca_bundle", None)
        if not ca or not cls.name.startswith("ros3"):
            return []
        from shotbench.store import tls

        self.log_dir.mkdir(parents=True, exist_ok=True)
        return tls.with_system_bundle(tls.trusting(ca, self.log_dir), [])

    def reserve(self, env_key: str, workers: int) -> None:
        """Grow or keep the environment's one warm cluster for a case of `workers`, evicting the
        least recently used other clusters so idle processes stay within budget."""
        size = self.live.pop(env_key, 0)
        if self.scheduler is None and size > max(workers, self.max_live):  # too many idle around a small case
            self._close(env_key, size)
            size = 0
        need = max(size, workers)
        if self.scheduler is None:
            while self.live and sum(self.live.values()) + need > self.max_live:
                self._close(*self.live.popitem(last=False))
        self.live[env_key] = need

    def _close(self, env_key: str, size: int) -> None:
        drv = self.drivers.get(env_key)
        if drv and drv.alive():
            drv.request(Close(size))

    def stop(self, timeout: float = 20.0) -> None:
        for drv in self.drivers.values():
            drv.stop(timeout)

"""Is the S3 endpoint (and the Dask scheduler) still there while a case runs?

ROS3 has no per-request timeout, so a dead server used to be found only at the derived case
deadline (60 s + every byte the tasks open at 2 MB/s: minutes). While a driver works on a
request, the wait checks in between (`drivers.DriverProc`): every WATCH_INTERVAL seconds one HEAD
(a second connection if the first is reset or stalls, as under a fault profile) and, with a
scheduler, its handshake. WATCH_FAILURES failed checks in a row end the case as failed
(`ServerGone`) and the run stops; the case deadline stays the last resort, not the first.
"""

from __future__ import annotations

import http.client
import time

from shotbench.errors import UserError

WATCH_INTERVAL = 5.0
WATCH_TIMEOUT = 3.0
WATCH_FAILURES = 3


class ServerGone(UserError):
    """The watchdog found the S3 endpoint (or the scheduler) dead while a case ran."""

    exit_code = 1


def answers(url: str, timeout: float, ca_bundle: str | None = None) -> None:
    """Any HTTP answer from `url` within `timeout` (an S3 error is an answer); OSError if none.
    Over https the server is checked against `ca_bundle` (a private CA) or the system's."""
    import ssl
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    if parts.scheme == "https":
        ctx = ssl.create_default_context(cafile=ca_bundle) if ca_bundle else ssl.create_default_context()
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(host, parts.port, timeout=timeout, context=ctx)
    else:
        conn = http.client.HTTPConnection(host, parts.port, timeout=timeout)
    try:
        conn.request("HEAD", "/")
        conn.getresponse().read()
    finally:
        conn.close()


def scheduler_answers(address: str, timeout: float) -> None:
    """A Dask scheduler sends its handshake as soon as it accepts a connection; OSError if not."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 8786), timeout=timeout) as sock:
        if parts.scheme == "tcp" and not sock.recv(1):
            raise ConnectionResetError(104, "closed without a handshake")


def _reason(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout:.0f} s"
    return getattr(exc, "strerror", None) or type(exc).__name__


class Watchdog:
    """Raises `ServerGone` after `failures` failed checks in a row, `interval` apart."""

    def __init__(
        self,
        url: str | None,
        ca_bundle: str | None = None,
        scheduler: str | None = None,
        interval: float = WATCH_INTERVAL,
        failures: int = WATCH_FAILURES,
        timeout: float = WATCH_TIMEOUT,
    ) -> None:
        self.url, self.ca_bundle, self.scheduler = url, ca_bundle, scheduler
        self.interval, self.failures, self.timeout = interval, failures, timeout
        self.failed = 0
        self.due = time.monotonic() + interval  # the first check one interval into the wait

    def __call__(self, limit: float | None = None) -> None:
        """One check when one is due; `limit`: seconds it may take at most (the wait's deadline)."""
        now = time.monotonic()
        if now < self.due:
            return
        problem = self.probe(self.timeout if limit is None else max(0.2, min(self.timeout, limit)))
        self.due = time.monotonic() + self.interval
        if problem is None:
            self.failed = 0
            return
        self.failed += 1
        if self.failed >= self.failures:
            self.failed = 0
            what, reason = problem
            raise ServerGone(
                f"{what} stopped answering during the run (server gone: {self.failures} checks "
                f"{self.interval:.0f} s apart failed, the last with {reason}); "
                "fix it and finish with `shotbench bench --resume`."
            )

    def probe(self, timeout: float) -> tuple[str, str] | None:
        """(what, why) of the first dependency that does not answer within `timeout`, or None."""
        if self.url:
            for attempt in range(2):  # a fault profile resets or stalls a connection: a second one decides
                try:
                    answers(self.url, timeout, self.ca_bundle)
                    break
                except (OSError, http.client.HTTPException) as exc:
                    if attempt == 1:
                        return "the S3 server", _reason(exc, timeout)
        if self.scheduler:
            try:
                scheduler_answers(self.scheduler, timeout)
            except OSError as exc:
                return f"the Dask scheduler at {self.scheduler}", _reason(exc, timeout)
        return None

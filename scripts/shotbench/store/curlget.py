"""GETs whose response carries the object's stored CRC64NVME: libcurl's multi interface (pycurl).

A checked download needs the checksum the server stores. S3 sends it in the GET's own response
when the request asks (`x-amz-checksum-mode: ENABLED`), but obstore hands back no response
headers, so a download on obstore paid one HeadObject per object for it: on the embedded server
those HEADs cost 128 x 1 MiB 1.14-1.30x the time of obstore's unchecked GETs, where libcurl's
GETs that carry the value took 1.01-1.08x (docs/results/2026-12-01-download-check-in-the-get.md).
libcurl reads the response headers, signs with its own SigV4 (`CURLOPT_AWS_SIGV4`) and keeps
every transfer in C on one thread; Python is called once per received chunk of up to BUFFER
bytes, which is written in place (`pwrite`) and checksummed as it arrives.

Every wait is bounded: a connection within CONNECT_TIMEOUT_MS, and a transfer that moves no byte
for STALL_S seconds ends. A connection that fails, a response that ends early and a 5xx or 429
answer are tried again, at most RETRIES more times with a doubling pause (obstore's count and
backoff, so that both halves of a fetch give up alike); the last failure is
raised as `GetFailed` with the server's error code when it sent one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shotbench.store.clients import curl_signing
from shotbench.store.s3 import S3Config

BUFFER = 1 << 20  # libcurl's receive buffer: one Python call per MiB received, at most
CONNECT_TIMEOUT_MS = 5_000
STALL_S = 30  # a transfer that moves no byte for this long ends (and is tried again)
RETRIES = 10  # obstore's default, which fetches the large objects beside these: a 503 SlowDown can repeat
PAUSE_S, MAX_PAUSE_S = 0.1, 15.0  # the first pause, doubled on each try up to the last: obstore's backoff
_RETRY_STATUS = {429, 500, 502, 503, 504}
_CHECKSUM_HEADER = b"x-amz-checksum-crc64nvme:"


@dataclass(frozen=True)
class Get:
    """One whole-object GET of `key` into the file at `path` (made or emptied when the GET starts,
    closed when it ends: only the files in flight hold a descriptor)."""

    key: str
    path: str
    size: int  # the bytes the object must have; more are not written


@dataclass
class Got:
    """What one GET received: the CRC64NVME and count of the bytes written (`more` when the server
    sent more than `size`), the CRC64NVME the server stores (None where it sent none) and when it ran."""

    crc: int = 0
    received: int = 0
    more: bool = False
    stored: str | None = None
    started: float = 0.0
    finished: float = 0.0


@dataclass
class GetFailed(Exception):
    """A GET that failed on its last try: the HTTP status and S3 error code, or libcurl's reason."""

    key: str
    status: int
    reason: str

    def __str__(self) -> str:
        return f"GET {self.key}: " + (f"HTTP {self.status} {self.reason}" if self.status else self.reason)


@dataclass
class _Transfer:
    get: Get
    index: int  # of `get` in the list `run` was given
    tries: int = 0
    status: int = 0
    got: Got = field(default_factory=Got)
    error_body: list[bytes] = field(default_factory=list)
    fd: int | None = None
    local: OSError | None = None  # opening or writing the local file failed (a full disk): the GET is aborted


def libcurl_version() -> str | None:
    """The version of the libcurl pycurl runs on (the wheel brings its own), or None without pycurl."""
    try:
        import pycurl
    except ImportError:
        return None
    return str(pycurl.version_info()[1])


def _error_code(body: bytes) -> str:
    from shotbench.store.crt import xml_text

    return xml_text(body, "Code") or body[:80].decode(errors="replace").strip() or "no error code"


class CurlGets:
    """GETs of one bucket, `jobs` in flight on at most `jobs` connections, run to the end by `run`."""

    def __init__(self, cfg: S3Config, bucket: str, jobs: int) -> None:
        import pycurl

        self.cfg = cfg
        self.bucket = bucket
        self.jobs = max(1, jobs)
        self.multi = pycurl.CurlMulti()
        self.multi.setopt(pycurl.M_MAX_TOTAL_CONNECTIONS, self.jobs)
        self.free: list[Any] = []

    def _handle(self) -> Any:
        import pycurl

        if self.free:
            return self.free.pop()
        c = pycurl.Curl()
        c.setopt(pycurl.BUFFERSIZE, BUFFER)
        c.setopt(pycurl.NOSIGNAL, 1)
        c.setopt(pycurl.CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS)
        c.setopt(pycurl.LOW_SPEED_LIMIT, 1)
        c.setopt(pycurl.LOW_SPEED_TIME, STALL_S)
        return c

    def _start(self, t: _Transfer, url: Callable[[str], str], headers: list[str], setup: Callable[[Any], None]) -> Any:
        import pycurl
        from awscrt.checksums import crc64nvme

        g, got = t.get, Got(started=time.perf_counter())
        t.got, t.status, t.error_body, t.local = got, 0, [], None
        t.fd = os.open(g.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)  # an OSError ends `run`
        c = self._handle()
        setup(c)

        def header(line: bytes) -> None:
            if line.startswith(b"HTTP/"):
                parts = line.split()  # the last status line wins (after a 100 Continue)
                t.status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
            elif line[: len(_CHECKSUM_HEADER)].lower() == _CHECKSUM_HEADER:
                got.stored = line[len(_CHECKSUM_HEADER) :].strip().decode(errors="replace")

        def write(data: bytes) -> int | None:
            """Called by libcurl per chunk; 0 aborts the transfer (an exception here would be
            printed by pycurl, so a local failure is kept and raised by `run`)."""
            if t.status != 200:
                t.error_body.append(data)
                return None
            keep = min(len(data), g.size - got.received)
            got.more = got.more or keep < len(data)
            if keep > 0:
                view = memoryview(data)[:keep]
                try:
                    os.pwrite(t.fd, view, got.received)  # type: ignore[arg-type]
                except OSError as exc:
                    t.local = exc
                    return 0
                got.crc = crc64nvme(view, got.crc)
                got.received += keep
            return None

        c.setopt(pycurl.URL, url(g.key))
        c.setopt(pycurl.HTTPHEADER, headers)
        c.setopt(pycurl.HEADERFUNCTION, header)
        c.setopt(pycurl.WRITEFUNCTION, write)
        self.multi.add_handle(c)
        return c

    def run(self, gets: Sequence[Get]) -> list[Got]:
        """Every GET to its end, `jobs` at a time. Raises `GetFailed` for the first GET that failed
        on its last try, and an OSError of a local file (a full disk) as it is."""
        import pycurl

        url, headers, setup = curl_signing(self.cfg, self.bucket)
        headers = [*headers, "x-amz-checksum-mode: ENABLED"]
        results: list[Got] = [Got() for _ in gets]
        queue = [_Transfer(g, i) for i, g in reversed(list(enumerate(gets)))]
        waiting: list[tuple[float, _Transfer]] = []  # (not before, transfer): a retry after its pause
        active: dict[Any, _Transfer] = {}
        try:
            while queue or waiting or active:
                now = time.monotonic()
                ready = [w for w in waiting if w[0] <= now]
                waiting = [w for w in waiting if w[0] > now]
                for _, t in ready:
                    active[self._start(t, url, headers, setup)] = t
                while queue and len(active) < self.jobs:
                    t = queue.pop()
                    active[self._start(t, url, headers, setup)] = t
                while self.multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
                    pass
                while True:
                    left, ok, failed = self.multi.info_read()
                    for c, reason in [(c, "") for c in ok] + [(c, msg) for c, _, msg in failed]:
                        t = active.pop(c)
                        self.multi.remove_handle(c)
                        self.free.append(c)
                        self._close(t)
                        again = self._finish(t, reason)
                        if again is not None:
                            waiting.append((time.monotonic() + again, t))
                            continue
                        t.got.finished = time.perf_counter()
                        results[t.index] = t.got
                    if not left:
                        break
                if queue and len(active) < self.jobs:
                    continue  # a transfer ended: start the next one now, not after the others' next bytes
                if active:
                    self.multi.select(0.05 if waiting else 1.0)
                elif waiting:
                    time.sleep(max(0.0, min(w[0] for w in waiting) - time.monotonic()))
        finally:
            for c, t in active.items():
                self.multi.remove_handle(c)
                self._close(t)
        return results

    @staticmethod
    def _close(t: _Transfer) -> None:
        if t.fd is not None:
            try:
                os.close(t.fd)
            except OSError as exc:  # the last write-back failed (a full disk)
                t.local = t.local or exc
            t.fd = None

    def _finish(self, t: _Transfer, reason: str) -> float | None:
        """None when `t` ended with a 200 (whatever its length: the caller compares it with the
        object's size); else the pause before its next try, or raise on the last."""
        if t.local is not None:  # named by its file, whichever call failed
            raise OSError(t.local.errno, t.local.strerror, t.get.path)
        if not reason and t.status == 200:
            return None
        status, why = (t.status, _error_code(b"".join(t.error_body))) if not reason else (0, reason)
        t.tries += 1
        if t.tries > RETRIES or (status and status not in _RETRY_STATUS):
            raise GetFailed(t.get.key, status, why)
        return min(MAX_PAUSE_S, PAUSE_S * 2 ** (t.tries - 1))

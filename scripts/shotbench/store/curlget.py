"""GETs whose response carries the object's stored CRC64NVME: libcurl's multi interface (pycurl).

A checked download needs the checksum the server stores. S3 sends it in the GET's own response
when the request asks (`x-amz-checksum-mode: ENABLED`), but obstore hands back no response
headers, so a download on obstore paid one HeadObject per object for it: on the embedded server
those HEADs cost 128 x 1 MiB 1.14-1.30x the time of obstore's unchecked GETs, where libcurl's
GETs that carry the value took 1.01-1.08x (docs/results/2026-12-01-download-check-in-the-get.md).
libcurl reads the response headers, signs with its own SigV4 (`CURLOPT_AWS_SIGV4`) and keeps
every transfer in C on one thread.

libcurl hands a body to Python in calls of at most 16 KiB (`CURL_MAX_WRITE_SIZE`, whatever the
receive buffer), so the write callback only keeps each piece; every FLUSH bytes (and at the end)
the pieces are checksummed and written with one `writev`. With the tools on one core, 128 x 1 MiB
took 0.94x, 0.80x and 0.74x obstore's time at 4, 16 and 64 in flight this way, against 1.16x,
0.97x and 0.89x when each 16 KiB piece was written and checksummed in a call of its own. Holding
a whole object before writing it took 1.30x at 16 in flight; that its bytes had left the cache
by then is a guess (docs/results/2026-12-03-download-writes.md).

Every wait is bounded: a connection within CONNECT_TIMEOUT_MS, and a transfer that moves no byte
for STALL_S seconds ends. A connection that fails, a response that ends early and a 5xx or 429
answer are tried again, at most RETRIES more times with a doubling pause (obstore's count and
backoff, so that both halves of a fetch give up alike); the last failure is
raised as `GetFailed` with the server's error code when it sent one.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shotbench.store.clients import curl_signing
from shotbench.store.s3 import S3Config

BUFFER = 1 << 20  # libcurl's receive buffer: one recv of up to a MiB, handed over 16 KiB at a time
FLUSH = 256 << 10  # the bytes kept before they are checksummed and written: they are still in the cache
SLACK = 64 << 10  # a body may pass its object's size by this much (an error's XML) before libcurl ends it
CONNECT_TIMEOUT_MS = 5_000
STALL_S = 30  # a transfer that moves no byte for this long ends (and is tried again)
RETRIES = 10  # obstore's default, which fetches the large objects beside these: a 503 SlowDown can repeat
PAUSE_S, MAX_PAUSE_S = 0.1, 15.0  # the first pause, doubled on each try up to the last: obstore's backoff
_RETRY_STATUS = {429, 500, 502, 503, 504}
_CHECKSUM_HEADER = b"x-amz-checksum-crc64nvme:"
_FILESIZE_EXCEEDED = 63  # CURLE_FILESIZE_EXCEEDED: the body passed its object's size and SLACK
_IOV_MAX = os.sysconf("SC_IOV_MAX")  # the most buffers one writev takes


@dataclass(frozen=True)
class Get:
    """One whole-object GET of `key` into the file at `path` (made or emptied by the GET's first
    bytes, closed when it ends: only the files in flight hold a descriptor)."""

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
    """One try of a GET: its response's header lines, the body's pieces not yet written, the file."""

    get: Get
    index: int  # of `get` in the list `run` was given
    tries: int = 0
    status: int = 0  # 0 until the headers are read
    got: Got = field(default_factory=Got)
    lines: list[bytes] = field(default_factory=list)
    pieces: list[bytes] = field(default_factory=list)
    held: int = 0  # the pieces' bytes
    fd: int | None = None
    local: OSError | None = None  # writing the local file failed (a full disk): the GET is aborted

    def begin(self) -> None:
        """A fresh try: nothing received, nothing kept."""
        self.got = Got(started=time.perf_counter())
        self.status, self.lines, self.pieces, self.held, self.local = 0, [], [], 0, None

    def read_headers(self) -> None:
        """The status of the last status line (after a 100 Continue) and the stored CRC64NVME."""
        for line in self.lines:
            if line.startswith(b"HTTP/"):
                parts = line.split()
                self.status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
            elif line[: len(_CHECKSUM_HEADER)].lower() == _CHECKSUM_HEADER:
                self.got.stored = line[len(_CHECKSUM_HEADER) :].strip().decode(errors="replace")

    def keep(self, data: bytes) -> int | None:
        """libcurl's write callback: 0 aborts the transfer (an exception here would be printed by
        pycurl, so a local failure is kept and raised by `run`)."""
        self.pieces.append(data)
        self.held += len(data)
        if self.held >= FLUSH:
            try:
                self.flush()
            except OSError as exc:
                self.local = exc
                return 0
        return None

    def flush(self) -> None:
        """The pieces kept, up to the object's size, checksummed and written after the bytes before
        them; nothing is written for an answer other than 200 (its body is the error)."""
        from awscrt.checksums import crc64nvme

        if not self.status:
            self.read_headers()
        if self.status != 200:
            return
        got, room, out = self.got, self.get.size - self.got.received, []
        for piece in self.pieces:
            part = piece if len(piece) <= room else memoryview(piece)[:room]
            got.more = got.more or len(part) < len(piece)
            if len(part):
                out.append(part)
                got.crc = crc64nvme(part, got.crc)
                room -= len(part)
        if self.fd is None:
            self.fd = os.open(self.get.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        _write_all(self.fd, out)
        got.received = self.get.size - room
        self.pieces, self.held = [], 0

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError as exc:  # the last write-back failed (a full disk)
                self.local = self.local or exc
            self.fd = None


def _write_all(fd: int, pieces: list[Any]) -> None:
    """Every piece, in order, `writev` by `writev`; a short write to a file is a full disk."""
    for at in range(0, len(pieces), _IOV_MAX):
        group = pieces[at : at + _IOV_MAX]
        if os.writev(fd, group) != sum(map(len, group)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


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

        t.begin()
        c = self._handle()
        setup(c)
        c.setopt(pycurl.URL, url(t.get.key))
        c.setopt(pycurl.HTTPHEADER, headers)
        c.setopt(pycurl.HEADERFUNCTION, t.lines.append)  # a C method: no Python per header line
        c.setopt(pycurl.WRITEFUNCTION, t.keep)
        c.setopt(pycurl.MAXFILESIZE_LARGE, t.get.size + SLACK)  # a longer body ends the GET, unread
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
                    for c, code, reason in [(c, 0, "") for c in ok] + list(failed):
                        t = active.pop(c)
                        self.multi.remove_handle(c)
                        self.free.append(c)
                        again = self._finish(t, code, reason)
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
                t.close()
        return results

    @staticmethod
    def _finish(t: _Transfer, code: int, reason: str) -> float | None:
        """None when `t` ended with a 200 (whatever its length: the caller compares it with the
        object's size), its last bytes written; else the pause before its next try, or raise on the last."""
        t.read_headers()
        ended = t.status == 200 and (not reason or code == _FILESIZE_EXCEEDED)
        if ended and t.local is None:
            t.got.more = t.got.more or bool(reason)
            try:
                t.flush()  # the last pieces; it makes the file of an empty object too
            except OSError as exc:
                t.local = exc
        t.close()
        if t.local is not None:  # named by its file, whichever call failed
            raise OSError(t.local.errno, t.local.strerror, t.get.path)
        if ended:
            return None
        status, why = (t.status, _error_code(b"".join(t.pieces))) if not reason else (0, reason)
        t.tries += 1
        if t.tries > RETRIES or (status and status not in _RETRY_STATUS):
            raise GetFailed(t.get.key, status, why)
        return min(MAX_PAUSE_S, PAUSE_S * 2 ** (t.tries - 1))

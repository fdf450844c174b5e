"""Requests and bytes as the client saw them, per task, against any S3 endpoint.

The embedded server's access log (`shotbench.store.accesslog`) only exists for the
embedded server; these meters live inside the worker process and use what each client
offers, so the counts exist against AWS or any other S3 service too:

- libhdf5 2.x ROS3 (`Ros3DebugMeter`): the driver's documented `HDF5_ROS3_VFD_DEBUG`
  channel prints one line per HEAD and per ranged GET (with its size) on stderr,
  synchronously in the calling thread. The worker points its stderr at a private file,
  parses the lines and passes everything else on; request headers are dropped. aws-c-s3
  splits each ranged GET into 8 MiB parts, one HTTP GET each, and they are counted so.
  The same file receives aws-c-s3's own log at level ERROR (`HDF5_ROS3_VFD_LOG_LEVEL`,
  `HDF5_ROS3_VFD_LOG_FILE=stderr`): one line per failed attempt it sets up for a retry,
  which is how the 2.x rows count retries (`aws_retry_delta`); those lines are never passed on.
- libhdf5 1.14 ROS3 (`SocketMeter`): it has no runtime log (its stats and debug output
  are compile-time switches), so its TCP sockets to the endpoint are read with
  `getsockopt(TCP_INFO)` just before each file is closed (1.14 keeps one libcurl
  connection per open file): bytes received, and requests = data segments sent (each
  request is one send of < 1 MSS; TLS handshakes add 2 per connection and are taken off).
  One HEAD per open is libcurl's size query in 1.14's `s3r_open`, the rest are GETs.
- s3fs (`attach_botocore`): botocore's `before-call` / `response-received` events.
- obstore (`Meter.timed`): the backends wrap each `get`/`get_range` call.

A meter accumulates; `drain()` hands over what happened since the last drain.
"""

from __future__ import annotations

import os
import re
import socket
import statistics
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from shotbench.units import MiB

T = TypeVar("T")


@dataclass
class Counts:
    """What a client did: requests by kind, body bytes received, per-request times (ms)."""

    gets: int = 0
    heads: int = 0
    bytes: int = 0
    request_ms: list[float] = field(default_factory=list)

    def add(self, other: Counts) -> None:
        self.gets += other.gets
        self.heads += other.heads
        self.bytes += other.bytes
        self.request_ms.extend(other.request_ms)

    def row(self) -> dict[str, Any]:
        """The keys a worker row carries back to the orchestrator."""
        return {
            "client-gets": self.gets,
            "client-heads": self.heads,
            "client-bytes": self.bytes,
            "request-ms": [round(t, 3) for t in self.request_ms],
        }


class Meter:
    """Counts requests the backend reports itself (obstore wrappers, botocore hooks)."""

    method = "client calls"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = Counts()

    def record(self, op: str, nbytes: int, seconds: float | None = None, requests: int = 1) -> None:
        with self._lock:
            if op == "HEAD":
                self._counts.heads += requests
            else:
                self._counts.gets += requests
            self._counts.bytes += max(int(nbytes), 0)
            if seconds is not None:
                self._counts.request_ms.append(seconds * 1000.0)

    def timed(self, call: Callable[[], T], size: Callable[[T], int]) -> T:
        """Run one GET, record it with its wall time and the bytes it returned."""
        t0 = time.perf_counter()
        out = call()
        self.record("GET", size(out), time.perf_counter() - t0)
        return out

    def before_close(self) -> None:
        """Called just before an opened file is closed (socket meters sample here)."""

    def drain(self) -> Counts:
        with self._lock:
            out, self._counts = self._counts, Counts()
        return out


# --------------------------------------------------------------------------------------
# botocore / aiobotocore (s3fs)


def attach_botocore(client: Any, meter: Meter) -> None:
    """Count every HTTP attempt a botocore or aiobotocore S3 client makes into `meter`.

    `response-received` fires once per attempt (retries included) with the response
    headers; the time is from `before-call` (signing included) to the response headers.
    A client shared between backends counts into the meter attached last.
    """
    first = getattr(client, "_shotbench_meter", None) is None
    client._shotbench_meter = meter
    if not first:
        return

    def before(context: dict[str, Any], **_: Any) -> None:
        context["shotbench_t0"] = time.perf_counter()

    def received(event_name: str, response_dict: Any, context: dict[str, Any], **_: Any) -> None:
        op = event_name.rsplit(".", 1)[-1]
        if op not in ("GetObject", "HeadObject"):
            return
        headers = (response_dict or {}).get("headers") or {}
        status = int((response_dict or {}).get("status_code") or 0)
        nbytes = int(headers.get("content-length") or 0) if op == "GetObject" and status < 300 else 0
        t0 = context.get("shotbench_t0")
        seconds = time.perf_counter() - t0 if t0 is not None else None
        client._shotbench_meter.record("HEAD" if op == "HeadObject" else "GET", nbytes, seconds)

    events = client.meta.events
    events.register("before-call.s3", before, unique_id="shotbench-before-call")
    events.register("response-received.s3", received, unique_id="shotbench-response-received")


# --------------------------------------------------------------------------------------
# libhdf5 2.x: the ROS3 driver's debug channel


DEBUG_VAR = "HDF5_ROS3_VFD_DEBUG"
LOG_LEVEL_VAR = "HDF5_ROS3_VFD_LOG_LEVEL"  # aws-c-s3's logger, set up by the 2.x driver at its init
LOG_FILE_VAR = "HDF5_ROS3_VFD_LOG_FILE"  # "stderr": the same private file as the debug lines
AWS_C_S3_PART_SIZE = 8 * MiB  # aws-c-s3's default part size; HDF5 2.x does not set one


def http_gets(size: int, part_size: int = AWS_C_S3_PART_SIZE) -> int:
    """HTTP GETs aws-c-s3 sends for one ranged GET of `size` bytes: it splits the range into
    parts of `part_size` (the first part starts at the range start)."""
    return max(1, -(-int(size) // part_size))


def parse_debug_line(line: str) -> tuple[str, int] | None:
    """('GET', size) / ('HEAD', 0) for a request line of the 2.x ROS3 debug output."""
    text = line.strip()
    if text.startswith("-- GET:"):
        _, _, size = text.rpartition("Request Size:")
        try:
            return "GET", int(size.strip())
        except ValueError:
            return "GET", 0
    if text.startswith("-- HEAD:"):
        return "HEAD", 0
    return None


# aws-c-s3 (awscrt 0.38) at level ERROR. A failed attempt that is set up for a retry logs
# "... Try to setup a retry." (s3_meta_request.c) or, when no connection could be had,
# "Could not acquire connection due to error code ..." (s3_client.c); the retry strategy
# refusing it (retries used up, or an error it cannot recover from) logs one of _REFUSED.
_AWS_LOG_LINE = re.compile(r"^\[(TRACE|DEBUG|INFO|WARN|ERROR|FATAL)\] \[[0-9TZ:-]+\] \[[0-9a-f]+\] \[")
_RETRY_SET_UP = ("Try to setup a retry.", "Could not acquire connection due to error code")
_REFUSED = (
    "Client could not retry request",
    "Client could not schedule retry of request",
    "while acquiring HTTP connection",
)


def aws_retry_delta(line: str) -> int:
    """+1 for an aws-c-s3 log line that sets up a retry, -1 for one that refuses it, else 0.

    The sum over a task is the requests aws-c-s3 sent again. A refusal whose meta request had
    already failed for another reason is logged at DEBUG only, so when a whole GET fails the
    sum can exceed the retries by the parts still in flight; a failed row says so anyway."""
    if not _AWS_LOG_LINE.match(line):
        return 0
    if any(text in line for text in _REFUSED):
        return -1
    return 1 if any(text in line for text in _RETRY_SET_UP) else 0


def is_aws_log_line(line: str) -> bool:
    """A line of aws-c-s3's standard logger ('[LEVEL] [time] [thread] [subject] - …')."""
    return bool(_AWS_LOG_LINE.match(line))


_HEADER = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+: ")


def _is_debug_output(line: str, in_headers: bool) -> bool:
    """Lines the 2.x driver prints with debugging on: ' -- …', indented URL parts, and the
    'Name: value' header lines that follow ' -- request headers:' / ' -- response headers:'."""
    return line.startswith((" -- ", "-- ", "    - ")) or (in_headers and bool(_HEADER.match(line)))


class Ros3DebugMeter(Meter):
    """Reads the 2.x ROS3 debug lines from this process's stderr (fd 2).

    fd 2 goes to an unlinked private file: writes never block (a pipe could fill while
    h5py holds the GIL and its reader waits for it), and everything written before a
    `drain()` is in the file when drain reads it. Lines that are not debug output are
    passed on to the original stderr at each drain; request headers are dropped.
    Must be installed before libhdf5's ROS3 driver initialises (it reads the variable
    once), i.e. before h5py is imported in the worker process.

    aws-c-s3's ERROR-level log is pointed at the same file; its retry lines are summed into
    `retried` (cumulative: a row takes the difference before/after) and never passed on.
    """

    method = "HDF5_ROS3_VFD_DEBUG lines"
    ROTATE_BYTES = 64 * MiB

    def __init__(self) -> None:
        import tempfile

        super().__init__()
        os.environ[DEBUG_VAR] = "1"
        os.environ[LOG_LEVEL_VAR] = "error"  # quiet unless a request fails: no cost when none does
        os.environ[LOG_FILE_VAR] = "stderr"
        self.retried = 0
        fd, path = tempfile.mkstemp(prefix="shotbench-ros3-debug-")
        self._read_fd = os.open(path, os.O_RDONLY)
        write_fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.unlink(path)
        os.close(fd)
        self._forward = os.dup(2)
        os.dup2(write_fd, 2)
        os.close(write_fd)
        self._offset = 0
        self._partial = b""
        self._in_headers = False

    def _consume(self) -> None:
        size = os.fstat(self._read_fd).st_size
        data = self._partial + os.pread(self._read_fd, size - self._offset, self._offset)
        self._offset = size
        end = data.rfind(b"\n") + 1
        self._partial = data[end:]
        passed: list[str] = []
        for line in data[:end].decode(errors="replace").splitlines(keepends=True):
            hit = parse_debug_line(line)
            if hit is not None:
                op, size = hit
                self.record(op, size, requests=http_gets(size) if op == "GET" else 1)
            elif is_aws_log_line(line):
                self.retried += aws_retry_delta(line)
            elif not _is_debug_output(line, self._in_headers):
                passed.append(line)
            if line.startswith((" -- ", "-- ")):
                self._in_headers = line.rstrip().endswith("headers:")
        if passed:
            os.write(self._forward, "".join(passed).encode(errors="replace"))
        if self._offset > self.ROTATE_BYTES and not self._partial:
            os.ftruncate(2, 0)
            self._offset = 0

    def drain(self) -> Counts:
        self._consume()
        return super().drain()

    def retries(self) -> int:
        """Requests aws-c-s3 has sent again in this process so far (reads what has arrived)."""
        self._consume()
        return self.retried


_DEBUG_METER: Ros3DebugMeter | None = None


def ros3_debug_meter() -> Ros3DebugMeter:
    """The process's one debug-line meter (fd 2 is redirected once per process)."""
    global _DEBUG_METER
    if _DEBUG_METER is None:
        _DEBUG_METER = Ros3DebugMeter()
    return _DEBUG_METER


# --------------------------------------------------------------------------------------
# libhdf5 1.14: its sockets, read with TCP_INFO


_TCP_INFO_FMT = "B" * 8 + "I" * 24 + "Q" * 4 + "I" * 6  # up to tcpi_data_segs_out (Linux ≥ 4.6)
_TCP_INFO_LEN = struct.calcsize(_TCP_INFO_FMT)


@dataclass(frozen=True)
class SocketCounts:
    bytes_received: int
    data_segs_out: int


def tcp_info(sock: socket.socket) -> SocketCounts:
    """Bytes received and data segments sent on one TCP socket (kernel counters)."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
    fields = struct.unpack(_TCP_INFO_FMT, raw[:_TCP_INFO_LEN].ljust(_TCP_INFO_LEN, b"\0"))
    return SocketCounts(bytes_received=fields[8 + 24 + 3], data_segs_out=fields[8 + 24 + 4 + 5])


def endpoint_port(endpoint_url: str | None) -> tuple[int, bool]:
    """(port, tls) of the S3 endpoint (AWS itself when None)."""
    if not endpoint_url:
        return 443, True
    parts = urlsplit(endpoint_url)
    tls = parts.scheme == "https"
    return parts.port or (443 if tls else 80), tls


def _sockets_to(port: int) -> Iterable[tuple[Any, socket.socket]]:
    """(fd and local address, a dup of the fd) for every TCP socket of this process
    connected to `port`; the local address tells a reused fd number's new connection apart."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if not os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                continue
            sock = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        try:
            if sock.type == socket.SOCK_STREAM and sock.family in (socket.AF_INET, socket.AF_INET6):
                peer = sock.getpeername()
                if peer[1] == port:
                    yield (fd, sock.getsockname()), sock
                    continue
        except OSError:
            pass
        sock.close()


class SocketMeter(Meter):
    """libhdf5 1.14: one libcurl connection per open file, read just before the file closes.

    Requests are data segments sent: libcurl sends each request in one write with
    TCP_NODELAY, one segment while the request is shorter than the MSS (a signed GET is
    under 1 KB; a long session token can make it two). Over TLS the handshake adds two
    client flights per connection, which are taken off. Bytes are bytes received: bodies
    plus response headers (about 0.3 KB a response) and, over TLS, record overhead.
    """

    method = "TCP_INFO of the process's sockets to the endpoint"
    TLS_FLIGHTS = 2

    def __init__(self, endpoint_url: str | None) -> None:
        super().__init__()
        self.port, self.tls = endpoint_port(endpoint_url)
        self._base: dict[Any, SocketCounts] = {}  # counters already counted, by connection

    def sample(self, opens: int = 1) -> None:
        requests = received = 0
        live: dict[Any, SocketCounts] = {}
        for conn, sock in _sockets_to(self.port):
            with sock:
                info = tcp_info(sock)
            base = self._base.get(conn)
            if base is None:  # a new connection
                segs = info.data_segs_out - (self.TLS_FLIGHTS if self.tls else 0)
                base_bytes = 0
            else:
                segs = info.data_segs_out - base.data_segs_out
                base_bytes = base.bytes_received
            requests += max(segs, 0)
            received += info.bytes_received - base_bytes
            live[conn] = info
        self._base = live
        heads = min(opens, requests)
        with self._lock:
            self._counts.heads += heads
            self._counts.gets += requests - heads
            self._counts.bytes += received

    def before_close(self) -> None:
        self.sample(opens=1)


# --------------------------------------------------------------------------------------
# Orchestrator side: case sums


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0–100) by linear interpolation; None for no values."""
    if not values:
        return None
    if len(values) == 1:
        return float(values[0])
    return float(statistics.quantiles(values, n=100, method="inclusive")[max(1, min(99, round(q))) - 1])


def case_columns(raw: list[dict[str, Any]], needed: int | None = None) -> dict[str, Any]:
    """cases.csv accounting columns from a case's raw task rows (empty where not counted).

    `bytes-returned` is the payload the tasks handed back (decompressed, in memory);
    `bytes-needed` the stored bytes the reads cannot avoid (plan.needed_bytes; None: unknown), and
    amplification is the bytes the client moved ÷ those."""
    returned = sum(int(r["bytes"]) for r in raw)
    out: dict[str, Any] = {"bytes-returned": returned, "bytes-needed": "" if needed is None else needed}
    counted = [r for r in raw if r.get("client-gets") not in (None, "")]
    if not counted:
        return out
    gets = sum(int(r["client-gets"]) for r in counted)
    heads = sum(int(r.get("client-heads") or 0) for r in counted)
    nbytes = sum(int(r["client-bytes"]) for r in counted)
    times = [float(t) for r in counted for t in (r.get("request-ms") or [])]
    p50, p99 = percentile(times, 50), percentile(times, 99)
    return {
        **out,
        "client-gets": gets,
        "client-heads": heads,
        "client-bytes": nbytes,
        "amplification": (nbytes / needed) if needed else "",
        "request-p50-ms": "" if p50 is None else round(p50, 3),
        "request-p99-ms": "" if p99 is None else round(p99, 3),
    }

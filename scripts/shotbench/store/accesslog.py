"""Request accounting from versitygw's access log: how many GETs a benchmark case really made.

Each line is one request in an S3-server-access-log-like layout:
`owner bucket [22/November/2026:01:38:14 +0000] ip requester request-id operation key uri
status error-code bytes-sent object-size total-ms turnaround-ms referer user-agent...`.
Timestamps have one-second resolution, so counting by byte offset (note the file size
before a case, read what was appended after it) is exact where time windows are not.

versitygw v1.8.0 logs 0 in both byte fields of a GetObject, so the bytes come from its
StatsD metrics instead: `shotbench.store.statsd` appends `#bytes <unix-time> bytes_read
<bucket> <n>` lines to the same file. Those arrive up to ~0.1 s after the request (the
metrics are flushed in batches), hence the waits in `count_since` and `counted_window`.

versitygw writes a request's line before it sends the response (one locked, unbuffered append
in `SendResponse`, s3api/controllers/base.go), so once a client holds every response, every
line of its requests is in the log. Only a request that reaches the server after its client
gave up (fault profiles) can log late; for those runs a quiet period is waited for as well.

There is one count per served GET; a window where they differ (a count lost to UDP under load,
measured once in a CI run: 32 of 1,169) has no byte total rather than a short one.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

_LINE = re.compile(
    r"^(?P<owner>\S+) (?P<bucket>\S+) \[(?P<time>[^\]]+)\] (?P<ip>\S+) (?P<requester>\S+) (?P<reqid>\S+) "
    r"(?P<op>\S+) (?P<key>.*?) (?P<uri>/\S*) (?P<status>\d{3}) (?P<error>.*?) (?P<sent>-?\d+) (?P<size>-?\d+) "
    r"(?P<total>-?\d+) (?P<turnaround>-?\d+) "
)
_TIME_FORMAT = "%d/%B/%Y:%H:%M:%S %z"
LATE_COUNTS_WAIT = 2.0  # seconds `count_since` waits for byte counts behind their GETs


@dataclass(frozen=True)
class RequestStats:
    gets: int = 0  # GetObject requests (successful or not)
    get_bytes: int | None = 0  # bytes the server logged for those GETs; None: some counts never came
    requests: int = 0  # every S3 request

    def __add__(self, other: RequestStats) -> RequestStats:
        both = None if self.get_bytes is None or other.get_bytes is None else self.get_bytes + other.get_bytes
        return RequestStats(self.gets + other.gets, both, self.requests + other.requests)


@dataclass(frozen=True)
class LogRecord:
    time: float
    bucket: str | None
    operation: str
    key: str
    status: int
    bytes_sent: int
    object_size: int


@dataclass(frozen=True)
class ByteRecord:
    time: float
    counter: str  # bytes_read (GetObject) | bytes_written (PutObject, UploadPart)
    bucket: str | None
    value: int


def parse_line(line: str) -> LogRecord | ByteRecord | None:
    """One access-log line, or None for the 'log starts' banner and anything unparseable."""
    if line.startswith("#bytes "):
        parts = line.split()
        if len(parts) != 5:
            return None
        try:
            return ByteRecord(float(parts[1]), parts[2], None if parts[3] == "-" else parts[3], int(parts[4]))
        except ValueError:
            return None
    m = _LINE.match(line)
    if not m:
        return None
    try:
        ts = datetime.strptime(m["time"], _TIME_FORMAT).timestamp()
    except ValueError:
        return None
    return LogRecord(
        time=ts,
        bucket=None if m["bucket"] == "-" else m["bucket"],
        operation=m["op"],
        key=m["key"],
        status=int(m["status"]),
        bytes_sent=max(int(m["sent"]), 0),
        object_size=max(int(m["size"]), 0),
    )


def _served_gets(records: list[LogRecord | ByteRecord], bucket: str | None) -> tuple[int, int]:
    """(GETs the server answered with a body, byte counts received): versitygw sends one
    `bytes_read` count per 200/206 GET, so the two agree once every count has come."""
    served = counts = 0
    for r in records:
        if bucket is not None and r.bucket != bucket:
            continue
        if isinstance(r, ByteRecord):
            counts += r.counter == "bytes_read"
        else:
            served += r.operation.endswith("GetObject") and r.status in (200, 206)
    return served, counts


def window_stats(records: list[LogRecord | ByteRecord], bucket: str | None = None) -> RequestStats:
    """Requests and GET bytes in `records`; the bytes are None unless there is exactly one byte
    count per served GET. The counts travel over UDP: under load one can come after the window
    or be lost, and a short sum would pass for a measurement."""
    gets = requests = get_bytes = 0
    for r in records:
        if bucket is not None and r.bucket != bucket:
            continue
        if isinstance(r, ByteRecord):
            get_bytes += r.value if r.counter == "bytes_read" else 0
            continue
        requests += 1
        gets += r.operation.endswith("GetObject")
    served, counts = _served_gets(records, bucket)
    return RequestStats(gets=gets, get_bytes=get_bytes if served == counts else None, requests=requests)


def _read(log: Path, offset: int = 0) -> tuple[list[LogRecord | ByteRecord], int]:
    """Records from `offset` up to the last complete line, and the offset after that line."""
    try:
        with open(log, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1  # a line being written right now is left for the next read
    records = [r for line in data[:end].decode(errors="replace").splitlines() if (r := parse_line(line))]
    return records, offset + end


def offset_marker(log: Path) -> int:
    """Where the log ends now; pass it to `count_since` after the work to count only that work."""
    try:
        return Path(log).stat().st_size
    except FileNotFoundError:
        return 0


def settle(log: Path, quiet: float = 0.3, timeout: float = 3.0) -> None:
    """Wait until the log has not grown for `quiet` seconds: late log lines and byte counts land."""
    deadline = time.monotonic() + timeout
    size, since = offset_marker(log), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now_size = offset_marker(log)
        if now_size != size:
            size, since = now_size, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return


def count_since(log: Path, offset: int, bucket: str | None = None, quiet: float = 0.3) -> RequestStats:
    """Requests (and GET bytes) logged after byte `offset` (from `offset_marker`).

    Waits until the log has been quiet for `quiet` seconds and the GETs' byte counts have come
    (`counted_window`) first, for requests that may still reach the server; 0 reads it as it is.
    """
    if quiet <= 0:
        return window_stats(_read(Path(log), offset)[0], bucket)
    settle(Path(log), quiet=quiet)
    return window_stats(counted_window(log, offset, bucket)[0], bucket)


def counted_window(log: Path, since: int, bucket: str | None = None) -> tuple[list[LogRecord | ByteRecord], int]:
    """The records after byte `since` once each GET served in them has its byte count (waiting at
    most LATE_COUNTS_WAIT), and the offset after the last of them: a window that ends where its
    requests' lines end, with no quiet period to wait out (see the module docstring)."""
    records, end = _read(Path(log), since)
    deadline = time.monotonic() + LATE_COUNTS_WAIT
    while _incomplete(records, bucket) and time.monotonic() < deadline:
        time.sleep(0.02)
        records, end = _read(Path(log), since)
    return records, end


def _incomplete(records: list[LogRecord | ByteRecord], bucket: str | None) -> bool:
    served, counts = _served_gets(records, bucket)
    return counts < served


def count_requests(log: Path, start: float, end: float, bucket: str | None = None, quiet: float = 0.3) -> RequestStats:
    """Requests whose timestamp (whole seconds for requests) falls in [start, end] (unix seconds)."""
    if quiet > 0 and time.time() - end < 5:
        settle(Path(log), quiet=quiet)
    records, _ = _read(Path(log))
    lo, hi = int(start), end
    late = 0.5  # byte counts arrive just after their request's response
    return window_stats([r for r in records if lo <= r.time <= hi + (late if isinstance(r, ByteRecord) else 0)], bucket)

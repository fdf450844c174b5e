"""A tiny StatsD receiver that adds byte counts to versitygw's access log.

versitygw's access log records every request but writes 0 bytes for a GetObject; its
StatsD metrics do carry the bytes of each GET (the range length). This process receives
those metrics on a loopback UDP port and appends one `#bytes` line per byte counter to the
access log itself, so one byte offset into one file still counts both requests and bytes.

Run as `python -m shotbench.store.statsd --port P --out ACCESS_LOG`; it lives and dies
with the server.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass

from shotbench.childargs import parse_or_exit
from shotbench.units import MiB

COUNTERS = ("bytes_read", "bytes_written")


def parse_packet(packet: str) -> list[tuple[str, str | None, int]]:
    """(counter, bucket, value) for the byte counters in an InfluxDB-tag-style StatsD packet."""
    out = []
    for line in packet.splitlines():
        name_tags, _, rest = line.partition(":")
        value, _, kind = rest.partition("|")
        if kind != "c":
            continue
        name, *tags = name_tags.split(",")
        counter = name.rsplit(".", 1)[-1]
        if counter not in COUNTERS:
            continue
        tagmap = dict(t.split("=", 1) for t in tags if "=" in t)
        try:
            out.append((counter, tagmap.get("bucket"), int(float(value))))
        except ValueError:
            continue
    return out


def serve(port: int, out: str) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * MiB)
    sock.bind(("127.0.0.1", port))
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    while True:
        packet, _ = sock.recvfrom(65536)
        now = time.time()
        lines = "".join(
            f"#bytes {now:.3f} {counter} {bucket or '-'} {value}\n"
            for counter, bucket, value in parse_packet(packet.decode(errors="replace"))
        )
        if lines:
            os.write(fd, lines.encode())  # one O_APPEND write: never interleaves with versitygw's lines


@dataclass(frozen=True)
class StatsdArgs:
    """Where the embedded server's statsd counter listens and writes."""

    port: int
    out: str


def main() -> None:
    args = parse_or_exit(StatsdArgs, None, "python -m shotbench.store.statsd")
    try:
        serve(args.port, args.out)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Minimal reproducer: open one S3 object N times through h5py's ROS3 driver, count what each open sends.

Needs only h5py built with ROS3 (any libhdf5 >= 1.14.3: our builds or the `h5py-s3` wheel) and
an S3-compatible endpoint reachable as http(s)://127.0.0.1:PORT (a local server; a certificate
for 127.0.0.1 when https). Credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.

A counting TCP relay sits between libhdf5 and the endpoint, so per open it reports the new
connections, the bytes received and, over http, every request line and Range header:

    python scripts/ros3-open-cost.py --endpoint http://127.0.0.1:7070 --bucket shots --key cmod/1160930001.h5 \
        --opens 10 --page-buffer 268435456

The open's time, then one read of the largest dataset (so page 2 is touched), unless --open-only:
then the file is closed straight after the open, which isolates what an open alone sends.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import re
import socket
import statistics
import threading
import time
from typing import Any
from urllib.parse import urlsplit


class Relay:
    """127.0.0.1:<port> -> endpoint; counts connections, downstream bytes and http requests.

    It runs in a child process: h5py holds the GIL through a whole ROS3 open, so a relay thread
    in this process would never get to forward the bytes the open waits for."""

    def __init__(self, host: str, port: int) -> None:
        ctx = mp.get_context("fork")
        self.connections = ctx.Value("q", 0)
        self.bytes_down = ctx.Value("q", 0)
        self.queue: Any = ctx.Queue()
        self.requests: list[str] = []
        ready, child = ctx.Pipe()
        self.proc = ctx.Process(target=self._serve, args=((host, port), child), daemon=True)
        self.proc.start()
        self.port = ready.recv()

    def snapshot(self) -> tuple[int, int, int]:
        while True:
            try:
                self.requests.append(self.queue.get(timeout=0.05))
            except queue.Empty:
                break
        return self.connections.value, self.bytes_down.value, len(self.requests)

    def _serve(self, target: tuple[str, int], ready: Any) -> None:
        server = socket.create_server(("127.0.0.1", 0))
        ready.send(server.getsockname()[1])
        while True:
            client, _ = server.accept()
            upstream = socket.create_connection(target, timeout=30)
            with self.connections.get_lock():
                self.connections.value += 1
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, up: bool) -> None:
        head = b""
        try:
            while data := src.recv(1 << 16):
                dst.sendall(data)
                if up:  # plain http: request lines and their Range headers (TLS: nothing readable)
                    head = (head + data)[-8192:]
                    for m in re.finditer(rb"(GET|HEAD) (\S+) HTTP/1\.1\r\n(.*?)\r\n\r\n", head, re.S):
                        rng = re.search(rb"(?i)\r?\nrange: *([^\r\n]+)", b"\r\n" + m.group(3))
                        self.queue.put(f"{m.group(1).decode()} {rng.group(1).decode() if rng else 'whole'}")
                    head = head[head.rfind(b"\r\n\r\n") + 4 :] if b"\r\n\r\n" in head else head
                else:
                    with self.bytes_down.get_lock():
                        self.bytes_down.value += len(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def open_file(url_base: str, bucket: str, key: str, region: str, page_buffer: int):
    """Through a FAPL built by hand: 2.x's H5Pset_fapl_ros3 turns an unset page buffer into
    64 MiB and h5py's File never sets 0, so the page buffer is set after the driver."""
    import h5py
    from h5py import h5f, h5p

    fapl = h5p.create(h5p.FILE_ACCESS)
    fapl.set_fapl_ros3(
        region.encode(),
        os.environ.get("AWS_ACCESS_KEY_ID", "").encode(),
        os.environ.get("AWS_SECRET_ACCESS_KEY", "").encode(),
    )
    fapl.set_page_buffer_size(page_buffer, 0, 0)
    if h5py.version.hdf5_version_tuple[0] >= 2:  # 2.x: s3:// URLs, the endpoint from the environment
        os.environ["AWS_ENDPOINT_URL_S3"] = url_base
        url = f"s3://{bucket}/{key}"
    else:  # 1.14: the object's own URL
        url = f"{url_base}/{bucket}/{key}"
    return h5py.File(h5f.open(url.encode(), h5f.ACC_RDONLY, fapl=fapl))


def largest_dataset(fh) -> str:
    """The dataset with the most bytes stored: a signal whose chunks lie in the raw-data page (the
    small ones are in the metadata page, read at open), so reading it touches page 2."""
    sizes: dict[str, int] = {}
    fh.visititems(lambda n, o: sizes.__setitem__(n, o.id.get_storage_size()) if hasattr(o, "shape") else None)
    return max(sizes, key=lambda n: sizes[n])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--endpoint", required=True, help="http(s)://127.0.0.1:PORT")
    p.add_argument("--bucket", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--opens", type=int, default=10)
    p.add_argument("--page-buffer", type=int, default=0, help="bytes; 0: none")
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--open-only", action="store_true", help="close right after the open: no dataset read")
    args = p.parse_args()
    ep = urlsplit(args.endpoint)
    relay = Relay(ep.hostname or "127.0.0.1", ep.port or (443 if ep.scheme == "https" else 80))  # before h5py: fork
    import h5py

    base = f"{ep.scheme}://127.0.0.1:{relay.port}"
    rows = []
    name = ""
    for i in range(args.opens):
        c0, b0, r0 = relay.snapshot()
        t0 = time.perf_counter()
        fh = open_file(base, args.bucket, args.key, args.region, args.page_buffer)
        t1 = time.perf_counter()
        if not args.open_only:
            name = name or largest_dataset(fh)
            fh[name][()]
        t2 = time.perf_counter()
        fh.close()
        time.sleep(0.05)  # let the relay see the last bytes
        c1, b1, r1 = relay.snapshot()
        rows.append(
            {
                "open": i,
                "open_ms": round((t1 - t0) * 1e3, 2),
                "read_ms": round((t2 - t1) * 1e3, 2),
                "connections": c1 - c0,
                "MB": round((b1 - b0) / 1e6, 3),
                "requests": relay.requests[r0:r1] if ep.scheme == "http" else "(https: not readable)",
            }
        )
    warm = rows[1:] or rows
    print(
        json.dumps(
            {
                "libhdf5": h5py.version.hdf5_version,
                "h5py": h5py.version.version,
                "scheme": ep.scheme,
                "page_buffer": args.page_buffer,
                "open_only": args.open_only,
                "opens": rows,
                "median_open_ms": statistics.median(r["open_ms"] for r in warm),
                "median_read_ms": statistics.median(r["read_ms"] for r in warm),
                "median_MB_per_open": statistics.median(r["MB"] for r in warm),
                "median_connections_per_open": statistics.median(r["connections"] for r in warm),
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

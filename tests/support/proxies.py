"""Real TCP proxies in front of the S3 server that misbehave on cue, and a port that never answers."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def silent_port() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never says a word (a hung server, a proxy
    whose upstream is gone); every connection is held open until the block ends."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()
        for conn in held:
            conn.close()


class StallingProxy:
    """A real TCP proxy in front of the S3 server that, once `stall` is set, stops moving bytes
    on every connection (old and new) while keeping them open: a server that accepts and hangs.
    Once `armed` is set, the next object GET sets `stall` before it is passed on: the stall then
    lands while a case reads, not in the health check (a HEAD) between two cases."""

    def __init__(self, upstream_port: int) -> None:
        import socket
        import threading

        self.upstream = upstream_port
        self.stall = threading.Event()
        self.armed = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            if self.stall.is_set():
                continue  # accepted, never answered (kept open by the reference below)
            upstream = socket.create_connection(("127.0.0.1", self.upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: Any, dst: Any) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                return
            if not data:
                return
            if self.armed.is_set() and data.startswith(b"GET /"):  # a request, and not a HEAD
                self.stall.set()
            while self.stall.is_set():
                time.sleep(0.5)
            try:
                dst.sendall(data)
            except OSError:
                return


class OneStall:
    """A real TCP proxy in front of the S3 server that, when armed, holds the answer to the next
    object GET for `seconds` (a stalled connection, as toxiproxy's `timeout` toxic makes one)."""

    def __init__(self, upstream_port: int, seconds: float) -> None:
        import socket
        import threading

        self.upstream, self.seconds = upstream_port, seconds
        self.armed = threading.Event()
        self.fired = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream))
            hold = threading.Event()
            threading.Thread(target=self._pump, args=(client, upstream, hold, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, hold, False), daemon=True).start()

    def _pump(self, src: object, dst: object, hold: object, request_side: bool) -> None:
        import time

        while True:
            try:
                data = src.recv(65536)  # type: ignore[attr-defined]
            except OSError:
                return
            if not data:
                return
            if request_side and data.startswith(b"GET /") and self.armed.is_set() and not self.fired.is_set():
                self.fired.set()
                hold.set()  # type: ignore[attr-defined]
            if not request_side and hold.is_set():  # type: ignore[attr-defined]
                time.sleep(self.seconds)
                hold.clear()  # type: ignore[attr-defined]
            try:
                dst.sendall(data)  # type: ignore[attr-defined]
            except OSError:
                return

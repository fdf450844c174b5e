"""A tiny HTTP/1.1 TCP proxy for tests: it can change a byte of every PUT body on its way to the
server, or hold each PUT back a while, and otherwise forwards bytes untouched.

Plain sockets, no HTTP library: the request line and headers pass exactly as the client signed
them (SigV4 signs Host and the checksum header, not an UNSIGNED-PAYLOAD body), so the server
sees a correctly signed request whose body no longer has the checksum the client computed
from the file: what a faulty NIC, memory or middlebox does.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field


@dataclass
class ByteProxy:
    """Listens on 127.0.0.1; `flip_puts`: XOR the middle byte of each PUT body (in the data, also
    when the body is aws-chunked with a trailer); `put_delay`: seconds each PUT waits before it is
    forwarded; `hold_puts_after`: once that many PUT bodies are through, every later PUT waits
    until the proxy closes (an upload then stays mid-way, however fast the rest would go)."""

    upstream_port: int
    flip_puts: bool = False
    put_delay: float = 0.0
    hold_puts_after: int | None = None
    puts_done: int = 0  # PUT bodies forwarded in full
    flipped: int = 0
    _sock: socket.socket = field(init=False, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._stop.set()
        self._sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            server = socket.create_connection(("127.0.0.1", self.upstream_port))
            threading.Thread(target=self._requests, args=(client, server), daemon=True).start()
            threading.Thread(target=self._copy, args=(server, client), daemon=True).start()

    @staticmethod
    def _copy(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(1 << 16):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _requests(self, client: socket.socket, server: socket.socket) -> None:
        """Client to server, one request at a time, framed by Content-Length."""
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = client.recv(1 << 16)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                method = lines[0].split(b" ", 1)[0].upper()
                headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(b":") for ln in lines[1:])}
                if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
                    server.sendall(head + b"\r\n\r\n" + buf)  # not framed by length: pass the rest untouched
                    self._copy(client, server)
                    return
                length = int(headers.get(b"content-length", b"0") or 0)
                if method == b"PUT" and self.put_delay:
                    time.sleep(self.put_delay)
                if method == b"PUT" and self.hold_puts_after is not None and self.puts_done >= self.hold_puts_after:
                    self._stop.wait()
                    return
                server.sendall(head + b"\r\n\r\n")
                middle, offset = length // 2, 0
                while length > 0:
                    if not buf:
                        buf = client.recv(1 << 16)
                        if not buf:
                            return
                    piece, buf = buf[:length], buf[length:]
                    if method == b"PUT" and self.flip_puts and offset <= middle < offset + len(piece):
                        at = middle - offset
                        piece = piece[:at] + bytes([piece[at] ^ 0x01]) + piece[at + 1 :]
                        with self._lock:
                            self.flipped += 1
                    server.sendall(piece)
                    offset += len(piece)
                    length -= len(piece)
                if method == b"PUT":
                    with self._lock:
                        self.puts_done += 1
        except OSError:
            pass
        finally:
            for s in (client, server):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

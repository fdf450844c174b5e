"""How large the TLS records are that an S3 endpoint sends: counted on the wire, for one GET.

A client pays a cost per record as well as per byte. One whose runtime hands every record from
one thread to another (obstore: reqwest, hyper and rustls on tokio) moves a quarter of the bytes
from a server that sends 4 KiB records (the embedded server: its HTTP layer writes 4 KiB at a time)
that it moves from one that sends 16 KiB records, the most TLS allows; a client that reads records
on the thread that asked (OpenSSL under boto3) loses much less. The record size is therefore part
of the path a run measured, and a run records it.

The GET goes through Python's `ssl` with memory buffers, so the ciphertext is seen before it is
decrypted: each record's 5-byte header gives its length. Only the counts are kept, never the URL.
"""

from __future__ import annotations

import socket
import ssl
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

APPLICATION_DATA = 23  # TLS content type; under TLS 1.3 every record after the hello has it
HEADER = 5
MAX_PLAINTEXT = 16384  # 2**14, the most a TLS record may carry


@dataclass(frozen=True)
class TlsRecords:
    """What one GET's connection carried in encrypted records, on the wire (header and tag
    included): the response's records and the few of the handshake, whose median they set."""

    version: str
    records: int
    median_bytes: int
    largest_bytes: int
    body_bytes: int

    @classmethod
    def of(cls, record: Mapping[str, Any] | None) -> TlsRecords | None:
        """The count a run stored (run.json `data.tls_records`); None when it has none, or only
        the reason it could not be made."""
        try:
            return cls(**record) if record else None
        except TypeError:
            return None

    @property
    def small(self) -> bool:
        """Records well below the 16 KiB a server may send: a per-record cost weighs more."""
        return self.median_bytes < MAX_PLAINTEXT // 2


def record_lengths(stream: bytes) -> list[tuple[int, int]]:
    """(content type, length on the wire) of every whole record in a ciphertext stream."""
    out, pos = [], 0
    while pos + HEADER <= len(stream):
        length = int.from_bytes(stream[pos + 3 : pos + 5], "big")
        if pos + HEADER + length > len(stream):
            break
        out.append((stream[pos], HEADER + length))
        pos += HEADER + length
    return out


def measure(url: str, ca_bundle: str | None = None, nbytes: int = 1 << 20, timeout: float = 15.0) -> TlsRecords:
    """GET the first `nbytes` of a (presigned) https URL and count the records that carried it.

    Raises OSError (ssl.SSLError included) when the endpoint cannot be reached or does not answer
    within `timeout` seconds in all, and ValueError for an answer other than 200 or 206."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError("not an https URL")
    deadline = time.monotonic() + timeout
    ctx = ssl.create_default_context(cafile=ca_bundle)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname=parts.hostname)
    ciphertext = bytearray()
    plaintext = bytearray()
    with socket.create_connection((parts.hostname, parts.port or 443), timeout=timeout) as sock:

        def receive() -> bool:
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            chunk = sock.recv(1 << 16)
            ciphertext.extend(chunk)  # all of it, handshake too: so every record header is where it is read
            if chunk:
                incoming.write(chunk)
            else:
                incoming.write_eof()
            return bool(chunk)

        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                sock.sendall(outgoing.read())
                if not receive():
                    raise ConnectionError("the endpoint closed the connection during the TLS handshake") from None
        sock.sendall(outgoing.read())
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nRange: bytes=0-{nbytes - 1}\r\n"
            "Connection: close\r\nUser-Agent: shotbench-tls-records\r\n\r\n"
        )
        tls.write(request.encode())
        sock.sendall(outgoing.read())
        while time.monotonic() < deadline:
            more = receive()
            try:
                while data := tls.read(1 << 16):
                    plaintext.extend(data)
                more = False  # b"": the server closed the TLS session
            except ssl.SSLWantReadError:
                pass
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                more = False
            if not more:
                break
        else:
            raise TimeoutError(f"the GET did not end within {timeout:.0f} s")
    head, _, body = bytes(plaintext).partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].decode(errors="replace")
    if status_line.split(" ")[1:2] not in (["200"], ["206"]):
        raise ValueError(f"the endpoint answered {status_line!r}")
    sizes = [n for kind, n in record_lengths(bytes(ciphertext)) if kind == APPLICATION_DATA]
    if not sizes:
        raise ValueError("no encrypted record was seen")
    return TlsRecords(
        version=tls.version() or "",
        records=len(sizes),
        median_bytes=int(statistics.median(sizes)),
        largest_bytes=max(sizes),
        body_bytes=len(body),
    )

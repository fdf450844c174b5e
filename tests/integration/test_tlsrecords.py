"""Counting a path's TLS records on the wire (store/tlsrecords.py), against two real servers: the
embedded versitygw over https, whose HTTP layer writes 4 KiB at a time, and Python's own HTTPS
server, whose OpenSSL fills each record up to the 16 KiB TLS allows."""

from __future__ import annotations

import http.server
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from shotbench.store import tlsrecords

pytestmark = pytest.mark.server

BODY = bytes(range(256)) * 8192  # 2 MiB


@pytest.fixture(scope="module")
def embedded_https(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    from shotbench.store.embedded import embedded_server

    with embedded_server(tmp_path_factory.mktemp("tls-server"), tls=True) as info:
        client = info.s3config().boto3_client()
        client.create_bucket(Bucket="records")
        # Each upload on a client (a connection) of its own. Twice on 2026-11-27, both times under
        # load (the suite's parallel part, a cold rehearsal), versitygw answered the second of two
        # botocore PUTs kept alive on one https connection, the one after the 2 MiB body, with
        # 400 "An error occurred when parsing the HTTP request", and the first PUT was logged
        # complete: something of the first request was left on the connection. Not reproduced on
        # demand (delayed chunk terminators and trailers, a stopped server); what these tests count
        # is the GET's TLS records, not botocore's uploads.
        for key, body in (("a shot.h5", BODY), ("tiny", b"x" * 1000)):
            info.s3config().boto3_client().put_object(Bucket="records", Key=key, Body=body)
        yield info, client


def _url(client, key: str) -> str:
    return client.generate_presigned_url("get_object", Params={"Bucket": "records", "Key": key}, ExpiresIn=300)


def test_the_embedded_server_sends_4_kib_records(embedded_https) -> None:
    info, client = embedded_https
    found = tlsrecords.measure(_url(client, "a shot.h5"), info.ca_bundle)
    assert found.body_bytes == 1 << 20 and found.version.startswith("TLSv1.")
    # one 4 KiB write of the server's HTTP layer per record, plus the record's header and tag
    assert 4096 < found.median_bytes <= 4096 + 64 and found.largest_bytes <= 4096 + 64, found
    assert found.records >= (1 << 20) // 4096 and found.small


def test_an_openssl_server_fills_its_records(embedded_https) -> None:
    info, _ = embedded_https
    tls_dir = Path(info.ca_bundle).parent  # the embedded server's private CA signs 127.0.0.1

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(206)
            self.send_header("Content-Length", str(1 << 20))
            self.end_headers()
            self.wfile.write(BODY[: 1 << 20])

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tls_dir / "server.crt", tls_dir / "server.key")
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        found = tlsrecords.measure(f"https://127.0.0.1:{server.server_port}/any?X-Amz-Signature=0", info.ca_bundle)
    finally:
        server.shutdown()
    assert found.body_bytes == 1 << 20
    assert found.median_bytes > 16384 and not found.small, found


def test_an_answer_other_than_the_bytes_is_refused_and_an_object_smaller_than_a_mib_is_counted(
    embedded_https,
) -> None:
    info, client = embedded_https
    with pytest.raises(ValueError, match="404"):
        tlsrecords.measure(_url(client, "missing"), info.ca_bundle)
    tiny = tlsrecords.measure(_url(client, "tiny"), info.ca_bundle)
    assert tiny.body_bytes == 1000 and tiny.records >= 1


def test_a_silent_endpoint_ends_within_the_timeout() -> None:
    import socket
    import time

    with socket.socket() as quiet:  # accepts the connection (the kernel's backlog) and never answers
        quiet.bind(("127.0.0.1", 0))
        quiet.listen(1)
        t0 = time.monotonic()
        with pytest.raises(OSError):
            tlsrecords.measure(f"https://127.0.0.1:{quiet.getsockname()[1]}/k", None, timeout=1.0)
        assert time.monotonic() - t0 < 3


def test_a_run_whose_count_fails_says_why_and_goes_on() -> None:
    """bench/prepare.path_records: an endpoint that cannot be counted gives its reason, never an
    exception that would end the run, and never the URL's signature or the keys."""
    import socket

    from shotbench.bench.prepare import path_records
    from shotbench.store.s3 import S3Config

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nothing listens once the socket is closed
    secret = "SBTESTSECRET" + "s" * 28
    cfg = S3Config(f"https://127.0.0.1:{port}", "us-east-1", "SBTESTKEY00000000000", secret)
    found = path_records(cfg, "bucket", "a shot.h5")
    assert found is not None and found["error"].startswith("ConnectionRefusedError"), found
    assert secret not in found["error"] and "Signature" not in found["error"]
    assert path_records(S3Config("http://127.0.0.1:1", "us-east-1", "k", secret), "bucket", "k") is None

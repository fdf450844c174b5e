"""S3 requests through awscrt's S3Client: the engine under `shotbench stage`.

The transfer benchmark measured awscrt as the fastest of obstore, awscrt and a tuned boto3
transfer manager for uploads on this kind of machine (README, "Transfer tools"): its C event
loop keeps many requests in flight without Python threads or botocore's per-request cost.
This module gives the rest of the package plain requests on it (method, key, headers, body
in, status, headers, body out) with every wait bounded and every failure one typed error.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any
from urllib.parse import quote

from shotbench.redact import scrub
from shotbench.store.clients import UNRESERVED, object_address
from shotbench.store.s3 import DEFAULT_REGION, S3Config

CONNECT_TIMEOUT_MS = 5_000


@dataclass(frozen=True)
class Reply:
    """A finished request: status, headers (lower-case names) and the body when it was kept."""

    status: int
    headers: dict[str, str]
    body: bytes = b""


@dataclass
class S3Failure(Exception):
    """A request that failed: the S3 error code when the server sent one, else the client's reason."""

    operation: str
    status: int | None
    code: str
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        where = f"HTTP {self.status} " if self.status else ""
        return f"{self.operation} failed: {where}{self.code}{': ' + self.message if self.message else ''}"


def xml_text(body: bytes, tag: str) -> str | None:
    """The text of the first element named `tag` (any namespace) in an S3 XML body."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return None
    for el in root.iter():
        if el.tag.rsplit("}", 1)[-1] == tag:
            return el.text or ""
    return None


def _xml_items(body: bytes, tag: str) -> Iterator[dict[str, str]]:
    """Each element named `tag` as {child tag: text} (namespaces dropped)."""
    root = ET.fromstring(body)
    for el in root.iter():
        if el.tag.rsplit("}", 1)[-1] == tag:
            yield {c.tag.rsplit("}", 1)[-1]: (c.text or "") for c in el}


class Engine:
    """One awscrt S3Client for one S3Config, at most `connections` connections in flight."""

    def __init__(self, cfg: S3Config, connections: int, part_size: int = 16 << 20) -> None:
        from awscrt.auth import AwsCredentialsProvider
        from awscrt.io import ClientTlsContext, TlsContextOptions
        from awscrt.s3 import S3Client, S3RequestTlsMode, create_default_s3_signing_config

        self.cfg = cfg
        if cfg.access_key:
            creds = AwsCredentialsProvider.new_static(cfg.access_key, cfg.secret_key or "", cfg.session_token)
        else:
            creds = AwsCredentialsProvider.new_default_chain()
        signing = create_default_s3_signing_config(region=cfg.region or DEFAULT_REGION, credential_provider=creds)
        plain = bool(cfg.endpoint_url and cfg.endpoint_url.startswith("http:"))
        kw: dict[str, Any] = {}
        if cfg.ca_bundle and not plain:  # the embedded server over https: trust its private CA
            opts = TlsContextOptions()
            opts.override_default_trust_store_from_path(None, cfg.ca_bundle)
            kw["tls_connection_options"] = ClientTlsContext(opts).new_connection_options()
        self.client = S3Client(
            region=cfg.region or DEFAULT_REGION,
            signing_config=signing,
            tls_mode=S3RequestTlsMode.DISABLED if plain else S3RequestTlsMode.ENABLED,
            max_active_connections_override=max(1, connections),
            part_size=part_size,
            connect_timeout_ms=CONNECT_TIMEOUT_MS,
            **kw,
        )

    def _target(self, bucket: str, key: str, query: str) -> tuple[str, str]:
        """(Host header, request path) for path-style (custom endpoint) or virtual-hosted (AWS)."""
        _, host, path = object_address(self.cfg, bucket, key, query)
        return host, path

    def start(
        self,
        method: str,
        bucket: str,
        key: str = "",
        *,
        operation: str,
        query: str = "",
        headers: Sequence[tuple[str, str]] = (),
        body: bytes | None = None,
        recv_filepath: str | None = None,
        send_filepath: str | None = None,
        send_size: int = 0,
        checksum_config: Any = None,
        part_size: int | None = None,
    ) -> Pending:
        """Send one request now; `Pending.result()` waits for it.

        A body from `send_filepath` is read by awscrt in C (one PUT of `send_size` bytes: the
        caller keeps files above the multipart threshold out of this path); `body` goes through
        a Python stream, which costs a call per chunk and is kept for small bodies and parts.
        With `part_size`, a file above it goes up as awscrt's own multipart upload in parts of
        that size, read and sent in C (and aborted by awscrt when the request fails or is cancelled).
        """
        from awscrt.http import HttpHeaders, HttpRequest
        from awscrt.s3 import S3RequestType

        host, path = self._target(bucket, key, query)
        hdrs = [("Host", host), *headers]
        if body is not None:
            hdrs.append(("Content-Length", str(len(body))))
        elif send_filepath is not None:
            hdrs.append(("Content-Length", str(send_size)))
        req = HttpRequest(method, path, HttpHeaders(hdrs), BytesIO(body) if body is not None else None)
        pending = Pending(operation, self.cfg)
        extra: dict[str, Any] = {}
        if method == "GET" and operation == "GetObject":
            kind = S3RequestType.GET_OBJECT
        elif send_filepath is not None:
            kind = S3RequestType.PUT_OBJECT
            single = max(send_size, 5 << 20) + 1
            extra = {
                "send_filepath": send_filepath,
                "multipart_upload_threshold": part_size or single,
                "part_size": part_size or single,
            }
        else:
            kind = S3RequestType.DEFAULT
        pending.request = self.client.make_request(
            type=kind,
            request=req,
            operation_name=operation if kind == S3RequestType.DEFAULT else None,
            recv_filepath=recv_filepath,
            checksum_config=checksum_config,
            on_headers=pending._on_headers,
            on_body=None if recv_filepath else pending._on_body,
            **extra,
        )
        return pending

    def call(self, method: str, bucket: str, key: str = "", *, timeout: float, **kw: Any) -> Reply:
        return self.start(method, bucket, key, **kw).result(timeout)

    def list_objects(self, bucket: str, prefix: str, timeout: float = 60) -> dict[str, tuple[int, str | None]]:
        """key -> (size, ETag without quotes) for every object under `prefix` (ListObjectsV2, paged)."""
        out: dict[str, tuple[int, str | None]] = {}
        token: str | None = None
        while True:
            query = "list-type=2&prefix=" + quote(prefix, safe=UNRESERVED)
            if token:
                query = "continuation-token=" + quote(token, safe=UNRESERVED) + "&" + query
            reply = self.call("GET", bucket, operation="ListObjectsV2", query=query, timeout=timeout)
            for item in _xml_items(reply.body, "Contents"):
                out[item.get("Key", "")] = (int(item.get("Size") or 0), (item.get("ETag") or "").strip('"') or None)
            if xml_text(reply.body, "IsTruncated") != "true":
                return out
            token = xml_text(reply.body, "NextContinuationToken")
            if not token:
                return out


class Pending:
    """A request in flight; collects the response as awscrt hands it over."""

    def __init__(self, operation: str, cfg: S3Config) -> None:
        self.operation = operation
        self.cfg = cfg
        self.request: Any = None
        self.status = 0
        self.headers: dict[str, str] = {}
        self._body: list[bytes] = []

    def _on_headers(self, status_code: int, headers: list[tuple[str, str]], **kwargs: Any) -> None:
        self.status = status_code
        self.headers.update((k.lower(), v) for k, v in headers)

    def _on_body(self, chunk: bytes, offset: int, **kwargs: Any) -> None:
        self._body.append(bytes(chunk))

    def result(self, timeout: float) -> Reply:
        """The reply, or S3Failure; never waits longer than `timeout` seconds."""
        from awscrt.s3 import S3ResponseError

        try:
            self.request.finished_future.result(timeout)
        except FutureTimeout:
            self.request.cancel()
            raise S3Failure(self.operation, None, "Timeout", f"no answer within {timeout:.0f} s") from None
        except S3ResponseError as exc:
            body = exc.body or b""
            code = xml_text(body, "Code") or exc.name
            message = xml_text(body, "Message") or ""
            raise S3Failure(
                self.operation,
                exc.status_code,
                code,
                scrub(message, self.cfg.secrets())[:200],
                {k.lower(): v for k, v in (exc.headers or [])},
            ) from None
        except Exception as exc:  # noqa: BLE001 - awscrt.exceptions.AwsCrtError and kin: the connection, not the server
            raise S3Failure(
                self.operation,
                None,
                getattr(exc, "name", type(exc).__name__),
                scrub(getattr(exc, "message", str(exc)), self.cfg.secrets())[:200],
            ) from None
        return Reply(self.status, self.headers, b"".join(self._body))

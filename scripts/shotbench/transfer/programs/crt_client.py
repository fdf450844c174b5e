"""awscrt's S3 client: the C runtime that splits and parallelises requests itself."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urlsplit

from shotbench.redact import scrub
from shotbench.store.s3 import S3Config
from shotbench.transfer.cases import FileSpec
from shotbench.transfer.programs.tool import Outcome, Tool, ToolFailed


class AwsCrt(Tool):
    """awscrt's S3Client (the C runtime behind the CRT transfer mode): every file submitted
    as one meta-request; the client splits parts and caps connections at N."""

    name = "awscrt"
    family = "awscrt"
    describe = {
        "upload": "S3Client.make_request(PUT_OBJECT, send_filepath=f) for all files",
        "download": "S3Client.make_request(GET_OBJECT, recv_filepath=f) for all files",
    }

    requires = ("awscrt.s3",)

    def _client(self, cfg: S3Config, concurrency: int):
        from awscrt.auth import AwsCredentialsProvider
        from awscrt.s3 import S3Client, S3RequestTlsMode, create_default_s3_signing_config

        if cfg.access_key:
            creds = AwsCredentialsProvider.new_static(cfg.access_key, cfg.secret_key or "", cfg.session_token)
        else:
            creds = AwsCredentialsProvider.new_default_chain()
        signing = create_default_s3_signing_config(region=cfg.region, credential_provider=creds)
        tls = (
            S3RequestTlsMode.DISABLED
            if cfg.endpoint_url and cfg.endpoint_url.startswith("http:")
            else S3RequestTlsMode.ENABLED
        )
        return S3Client(
            region=cfg.region, signing_config=signing, tls_mode=tls, max_active_connections_override=concurrency
        )

    @staticmethod
    def _host_path(cfg: S3Config, bucket: str, key: str) -> tuple[str, str]:
        if cfg.endpoint_url:
            u = urlsplit(cfg.endpoint_url)
            return u.netloc, f"{u.path.rstrip('/')}/{bucket}/{quote(key)}"
        return f"{bucket}.s3.{cfg.region}.amazonaws.com", "/" + quote(key)

    def _checksum(self):
        """The checksum the client computes while it sends (none: awscrt's own default)."""
        return None

    def _validation(self):
        """What the client checks downloads against (none: awscrt's own default)."""
        return None

    def _run(self, files, target, cfg, concurrency, method: str, local: Callable[[FileSpec], Path]) -> Outcome:
        from awscrt.http import HttpHeaders, HttpRequest
        from awscrt.s3 import S3RequestType

        client = self._client(cfg, concurrency)
        # one config for the case, before the clock
        checksum = self._checksum() if method == "PUT" else self._validation()
        validated: list[bool] = []  # per finished GET, when downloads are validated: what awscrt says it did

        def done(did_validate_checksum: bool = False, **kwargs) -> None:
            validated.append(bool(did_validate_checksum))

        t0 = time.perf_counter()
        pending = []
        for f in files:
            host, path = self._host_path(cfg, target.bucket, target.key(f.name))
            headers = [("Host", host)]
            if method == "PUT":
                headers += [("Content-Length", str(f.size)), ("Content-Type", "application/octet-stream")]
                req = client.make_request(
                    type=S3RequestType.PUT_OBJECT,
                    request=HttpRequest("PUT", path, HttpHeaders(headers)),
                    send_filepath=str(local(f)),
                    checksum_config=checksum,
                )
            else:
                req = client.make_request(
                    type=S3RequestType.GET_OBJECT,
                    request=HttpRequest("GET", path, HttpHeaders(headers)),
                    recv_filepath=str(local(f)),
                    checksum_config=checksum,
                    on_done=done if checksum is not None else None,
                )
            pending.append((f.name, req))
        out = Outcome()
        errors = []
        for name, req in pending:
            try:
                req.finished_future.result()
                out.file_seconds[name] = time.perf_counter() - t0
            except Exception as exc:  # noqa: BLE001 - a failed file is recorded with its error; the others go on
                errors.append(f"{name}: {type(exc).__name__}: {getattr(exc, 'name', '') or exc}")
        if errors:
            raise ToolFailed(scrub(f"{len(errors)} requests failed, first {errors[0]}"[:400], cfg.secrets()))
        if method == "GET" and checksum is not None:
            out.checked = sum(validated)
        return out

    def upload(self, files, src, target, cfg, concurrency):
        return self._run(files, target, cfg, concurrency, "PUT", lambda f: f.path)

    def download(self, files, target, dest, cfg, concurrency):
        return self._run(files, target, cfg, concurrency, "GET", lambda f: dest / f.name)


class AwsCrtSha256(AwsCrt):
    """awscrt making the check `shotbench stage` made before it checked with CRC64NVME (it now makes a CRC64NVME, as
    awscrt-crc64nvme does; kept to measure what SHA-256 costs): the client computes each object's SHA-256
    (per part, then the composite, for multipart) while it sends, and the server verifies it and
    refuses a body that differs. Uploads only: the time of the same check on the fastest engine,
    so a report can tell what the check costs from what the tool costs."""

    name = "awscrt-sha256"
    directions = ("upload",)
    describe = {
        "upload": "S3Client.make_request(PUT_OBJECT, send_filepath=f, checksum_config=S3ChecksumConfig(SHA256, "
        "TRAILER)) for all files: SHA-256 computed while sending, verified by the server",
    }

    def _checksum(self):
        from awscrt.s3 import S3ChecksumAlgorithm, S3ChecksumConfig, S3ChecksumLocation

        return S3ChecksumConfig(algorithm=S3ChecksumAlgorithm.SHA256, location=S3ChecksumLocation.TRAILER)

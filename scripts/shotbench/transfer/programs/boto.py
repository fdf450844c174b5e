"""boto3-based tools: the per-file loop, one shared TransferManager, shotbench's `stage`,
and the raw-get baseline."""

from __future__ import annotations

import hashlib
import time

from shotbench.store.s3 import S3Config
from shotbench.transfer.cases import FileSpec
from shotbench.transfer.programs.tool import _READ, Outcome, Tool, _timed_pool


class Boto3UploadFile(Tool):
    """`client.upload_file` / `download_file` in a loop: files one after another, parts of
    each file in parallel (TransferConfig.max_concurrency) — the common script."""

    name = "boto3-loop"
    family = "boto3"
    describe = {
        "upload": "for f: s3.upload_file(f, TransferConfig(max_concurrency=N))",
        "download": "for f: s3.download_file(…, TransferConfig(max_concurrency=N))",
    }

    def _setup(self, cfg: S3Config, concurrency: int):
        from boto3.s3.transfer import TransferConfig

        return cfg.boto3_client(max_pool_connections=max(10, concurrency)), TransferConfig(max_concurrency=concurrency)

    def upload(self, files, src, target, cfg, concurrency):
        client, tc = self._setup(cfg, concurrency)
        out = Outcome()
        for f in files:
            t = time.perf_counter()
            client.upload_file(str(f.path), target.bucket, target.key(f.name), Config=tc)
            out.file_seconds[f.name] = time.perf_counter() - t
        return out

    def download(self, files, target, dest, cfg, concurrency):
        client, tc = self._setup(cfg, concurrency)
        out = Outcome()
        for f in files:
            t = time.perf_counter()
            client.download_file(target.bucket, target.key(f.name), str(dest / f.name), Config=tc)
            out.file_seconds[f.name] = time.perf_counter() - t
        return out


class Boto3TransferManager(Tool):
    """One s3transfer TransferManager with every file submitted at once: parallel across
    files and across parts, sharing N threads (what `aws s3` does internally)."""

    name = "boto3-transfer-manager"
    family = "boto3"
    describe = {
        "upload": "TransferManager(max_concurrency=N).upload(all files)",
        "download": "TransferManager(max_concurrency=N).download(all files)",
    }

    def _manager(self, cfg: S3Config, concurrency: int):
        from boto3.s3.transfer import TransferConfig, create_transfer_manager

        client = cfg.boto3_client(max_pool_connections=max(10, concurrency))
        tc = TransferConfig(max_concurrency=concurrency)
        return create_transfer_manager(client, tc)

    def _all(self, submit) -> Outcome:
        out = Outcome()
        t0 = time.perf_counter()
        futures = submit()
        for name, fut in futures:
            fut.result()
            out.file_seconds[name] = time.perf_counter() - t0  # completion time since start
        return out

    def upload(self, files, src, target, cfg, concurrency):
        with self._manager(cfg, concurrency) as tm:
            return self._all(
                lambda: [(f.name, tm.upload(str(f.path), target.bucket, target.key(f.name))) for f in files]
            )

    def download(self, files, target, dest, cfg, concurrency):
        with self._manager(cfg, concurrency) as tm:
            return self._all(
                lambda: [(f.name, tm.download(target.bucket, target.key(f.name), str(dest / f.name))) for f in files]
            )


class RawGet(Tool):
    """Baseline, download only: N threads of whole-object GetObject read into memory, never
    written to disk — what the reading benchmark calls raw-get. The bytes are kept and hashed
    after the clock stops (rows above 4 GiB are hashed while streaming instead)."""

    name = "raw-get"
    family = "boto3"
    directions = ("download",)
    describe = {"download": "N threads: s3.get_object(…)['Body'].read() into memory (no disk)"}
    keep_limit = 4 << 30

    def download(self, files, target, dest, cfg, concurrency):
        client = cfg.boto3_client(max_pool_connections=max(10, concurrency))
        keep = sum(f.size for f in files) <= self.keep_limit
        kept: dict[str, bytes] = {}
        seen: dict[str, tuple[int, str]] = {}

        def get(f: FileSpec) -> None:
            body = client.get_object(Bucket=target.bucket, Key=target.key(f.name))["Body"]
            if keep:
                kept[f.name] = body.read()
                return
            h, n = hashlib.sha256(), 0
            for chunk in body.iter_chunks(_READ):
                h.update(chunk)
                n += len(chunk)
            seen[f.name] = (n, h.hexdigest())

        out = Outcome(_timed_pool(files, get, concurrency), seen)
        out.pending = kept
        return out


class Boto3Tuned(Boto3TransferManager):
    """The transfer manager tuned as far as its options go: a connection per thread, 16 MiB
    parts above 16 MiB, 1 MiB reads, a deep IO queue, and no request checksums beyond what S3
    requires (boto3 otherwise computes a CRC32 of every body in Python)."""

    name = "boto3-tuned"
    describe = {
        "upload": "TransferManager(max_concurrency=N, 16 MiB parts, io_chunksize 1 MiB, pool N, "
        "checksums when_required).upload(all files)",
        "download": "TransferManager(max_concurrency=N, 16 MiB parts, io_chunksize 1 MiB, pool N, "
        "checksums when_required).download(all files)",
    }

    def _manager(self, cfg: S3Config, concurrency: int):
        import boto3
        from boto3.s3.transfer import TransferConfig, create_transfer_manager
        from botocore.config import Config

        config = Config(
            region_name=cfg.region,
            signature_version="s3v4",
            max_pool_connections=max(10, concurrency),
            retries={"max_attempts": 2, "mode": "standard"},
            tcp_keepalive=True,
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
            s3={"addressing_style": "path"} if cfg.endpoint_url else {},
        )
        client = boto3.client(
            "s3",
            endpoint_url=cfg.endpoint_url,
            aws_access_key_id=cfg.access_key,
            aws_secret_access_key=cfg.secret_key,
            aws_session_token=cfg.session_token,
            config=config,
            **({"verify": cfg.ca_bundle} if cfg.ca_bundle else {}),
        )
        tc = TransferConfig(
            max_concurrency=concurrency,
            multipart_threshold=16 << 20,
            multipart_chunksize=16 << 20,
            io_chunksize=1 << 20,
            max_io_queue=1000,
        )
        return create_transfer_manager(client, tc)


class Shotbench(Tool):
    """shotbench's own: `shotbench stage` for uploads (awscrt; a whole-object CRC64NVME sent and verified by
    the server, torn files refused) and its download side (`shotbench.store.fetch`: obstore, ranged GETs of at
    most 16 MiB, each written in place as it arrives; sizes checked, and each file's CRC64NVME against the
    server's where it stores one; SHA-256 checked by the runner after the clock stops, as for every tool)."""

    name = "shotbench"
    family = "shotbench"
    describe = {
        "upload": "shotbench.store.staging.stage(dir, s3://…/, jobs=N)",
        "download": "shotbench.store.fetch.fetch_objects(keys → files, jobs=N GETs of ≤ 16 MiB: libcurl for "
        "whole objects, the stored CRC64NVME in each response; obstore ranges and one HEAD for larger ones)",
    }

    requires = ("shotbench.store.staging", "awscrt.s3", "obstore", "pycurl")

    def upload(self, files, src, target, cfg, concurrency):
        from shotbench.store.s3 import parse_location
        from shotbench.store.staging import stage

        stage(src, parse_location(target.uri()), cfg, jobs=concurrency, progress=False)
        return Outcome()

    def download(self, files, target, dest, cfg, concurrency):
        from shotbench.store.fetch import Wanted, fetch_objects

        wanted = [Wanted(target.key(f.name), dest / f.name, f.size) for f in files]
        done = fetch_objects(cfg, target.bucket, wanted, jobs=concurrency)
        return Outcome({f.name: done.finished[target.key(f.name)] for f in files}, checked=done.checked)

"""boto3-based tools: the per-file loop, one shared TransferManager, shotbench's `stage`,
and the raw-get baseline."""

from __future__ import annotations

import hashlib
import time

from shotbench.store.s3 import S3Config
from shotbench.transfer.matrix import FileSpec
from shotbench.transfer.programs.base import _READ, Outcome, Tool, _timed_pool


class Boto3UploadFile(Tool):
    """`client.upload_file` / `download_file` in a loop: files one after another, parts of
    each file in parallel (TransferConfig.max_concurrency) — the common script."""

    name = "boto3-loop"
    family = "boto3"
    describe = {"upload": "for f: s3.upload_file(f, TransferConfig(max_concurrency=N))",
                "download": "for f: s3.download_file(…, TransferConfig(max_concurrency=N))"}

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
    describe = {"upload": "TransferManager(max_concurrency=N).upload(all files)",
                "download": "TransferManager(max_concurrency=N).download(all files)"}

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
            return self._all(lambda: [(f.name, tm.upload(str(f.path), target.bucket, target.key(f.name))) for f in files])

    def download(self, files, target, dest, cfg, concurrency):
        with self._manager(cfg, concurrency) as tm:
            return self._all(lambda: [(f.name, tm.download(target.bucket, target.key(f.name), str(dest / f.name))) for f in files])


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


class Shotbench(Tool):
    """shotbench's own: `shotbench stage` for uploads; for downloads a parallel
    GetObject-to-file (shotbench has no download command, so this is the plain parallel get)."""

    name = "shotbench"
    family = "shotbench"
    describe = {"upload": "shotbench.store.stage.stage(dir, s3://…/, jobs=N)",
                "download": "N threads: s3.get_object → file (parallel boto3 get; no shotbench download command)"}

    requires = ("shotbench.store.stage",)

    def upload(self, files, src, target, cfg, concurrency):
        from shotbench.store.s3 import parse_location
        from shotbench.store.stage import stage

        stage(src, parse_location(target.uri()), cfg, jobs=concurrency, progress=False)
        return Outcome()

    def download(self, files, target, dest, cfg, concurrency):
        client = cfg.boto3_client(max_pool_connections=max(10, concurrency))

        def get(f: FileSpec) -> None:
            body = client.get_object(Bucket=target.bucket, Key=target.key(f.name))["Body"]
            with open(dest / f.name, "wb") as out:
                for chunk in body.iter_chunks(_READ):
                    out.write(chunk)

        return Outcome(_timed_pool(files, get, concurrency))

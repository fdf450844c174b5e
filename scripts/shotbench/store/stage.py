"""Upload a folder of shot files to S3 through the S3 API, in parallel, skipping what is there.

Always through the API, never by copying into the server's data directory: objects that
arrive that way have no ETag, and libhdf5 2.x's ROS3 (aws-c-s3) refuses such objects.
One transfer manager (one thread pool) serves every file, because for 16 MB shot files
the parallelism that matters is across files, not across parts of one file.
"""

from __future__ import annotations

import hashlib
import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shotbench.errors import UserError
from shotbench.store.s3 import DEFAULT_REGION, Location, S3Config, explain
from shotbench.units import MiB

MULTIPART_THRESHOLD = 64 * MiB  # one PUT per 16 MB shot file: simplest ETag, fewest requests
MULTIPART_CHUNKSIZE = 16 * MiB
_COMMON_PART_SIZES = (MULTIPART_CHUNKSIZE, 8 * MiB, 5 * MiB, 16 * MiB, 32 * MiB, 64 * MiB, 100 * MiB)


@dataclass(frozen=True)
class StageSummary:
    files: int  # uploaded
    bytes: int  # uploaded
    skipped: int  # already present with the same size (and ETag where it could be checked)
    seconds: float

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0

    def line(self, dest: str = "") -> str:
        where = f" to {dest}" if dest else ""
        return (
            f"staged {self.files} files ({self.bytes / 1e6:.1f} MB){where} in {self.seconds:.1f} s, "
            f"{self.mb_per_s:.1f} MB/s; skipped {self.skipped} already present"
        )


def local_files(src_dir: Path) -> list[Path]:
    """Every regular, non-hidden file below `src_dir` (the key keeps the relative path)."""
    src_dir = Path(src_dir)
    if not src_dir.is_dir():
        raise UserError(f"{src_dir} is not a folder; make shot files with `shotbench synth --out {src_dir}` first.")
    files = [
        p for p in sorted(src_dir.rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(src_dir).parts)
    ]
    if not files:
        raise UserError(f"{src_dir} holds no files; make shot files with `shotbench synth --out {src_dir}` first.")
    return files


def md5_etag(path: Path, part_size: int | None = None) -> str:
    """The ETag S3 gives an object uploaded from this file in one PUT, or in parts of `part_size`."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        if part_size is None:
            h = hashlib.md5()
            while chunk := fh.read(MiB):
                h.update(chunk)
            return h.hexdigest()
        digests = []
        for _ in range(max(1, math.ceil(size / part_size))):
            digests.append(hashlib.md5(fh.read(part_size)).digest())
    return f"{hashlib.md5(b''.join(digests)).hexdigest()}-{len(digests)}"


def same_object(path: Path, size: int, etag: str | None) -> bool:
    """Is the remote object this file? Size must match; the ETag must too when we can compute it."""
    if path.stat().st_size != size:
        return False
    if not etag:
        return True
    if "-" in etag:
        head, _, count = etag.partition("-")
        if not count.isdigit():
            return True
        parts = int(count)
        candidates = {ps for ps in _COMMON_PART_SIZES if max(1, math.ceil(size / ps)) == parts}
        if not candidates:
            return True  # uploaded with a part size we cannot guess: size is all we can check
        return any(md5_etag(path, ps) == etag for ps in sorted(candidates))
    if len(etag) != 32 or any(c not in "0123456789abcdef" for c in etag.lower()):
        return True  # not an MD5 ETag (e.g. server-side encryption): size only
    return md5_etag(path) == etag.lower()


def _existing(client: Any, loc: Location) -> dict[str, tuple[int, str | None]]:
    out: dict[str, tuple[int, str | None]] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=loc.bucket, Prefix=loc.prefix):
        for obj in page.get("Contents", []):
            out[obj["Key"]] = (int(obj["Size"]), (obj.get("ETag") or "").strip('"') or None)
    return out


def ensure_bucket(client: Any, loc: Location, cfg: S3Config, create: bool | None) -> None:
    """Create a missing bucket on a server on this machine (or when asked); never silently on AWS."""
    from botocore.exceptions import ClientError

    try:  # a listing, not HEAD: its error body tells a wrong secret from a missing bucket
        client.list_objects_v2(Bucket=loc.bucket, MaxKeys=1)
        return
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code not in ("404", "NoSuchBucket", "NotFound"):
            raise explain(exc, loc, cfg) from None
    if create is False or (create is None and not cfg.is_local()):
        raise UserError(
            f"bucket '{loc.bucket}' does not exist at {cfg.endpoint_url or 'AWS'}; create it, or pass "
            "--create-bucket to let `shotbench stage` create it."
        )
    kwargs: dict[str, Any] = {"Bucket": loc.bucket}
    if cfg.region != DEFAULT_REGION and not cfg.is_local():
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": cfg.region}
    client.create_bucket(**kwargs)


def stage(
    src_dir: Path,
    loc: Location,
    cfg: S3Config,
    jobs: int = 8,
    progress: bool = True,
    create_bucket: bool | None = None,
) -> StageSummary:
    """Upload `src_dir` to `loc` with `jobs` concurrent requests shared by all files."""
    from boto3.s3.transfer import TransferConfig
    from s3transfer.manager import TransferManager
    from s3transfer.subscribers import BaseSubscriber
    from tqdm import tqdm

    if loc.kind != "s3":
        raise UserError(f"the destination {loc.uri()} is not an S3 location; give s3://bucket/prefix.")
    if jobs < 1:
        raise UserError(f"--jobs must be at least 1, not {jobs}.")
    src_dir = Path(src_dir)
    files = local_files(src_dir)
    client = cfg.boto3_client(max_pool_connections=jobs + 2)
    started = time.monotonic()
    try:
        ensure_bucket(client, loc, cfg, create_bucket)
        remote = _existing(client, loc)
    except Exception as exc:  # noqa: BLE001 - explain() turns any client error into one sentence
        raise explain(exc, loc, cfg) from None

    def key_of(p: Path) -> str:
        return loc.prefix + p.relative_to(src_dir).as_posix()

    def needs_upload(p: Path) -> bool:
        have = remote.get(key_of(p))
        return have is None or not same_object(p, have[0], have[1])

    with ThreadPoolExecutor(max_workers=min(jobs, 8)) as pool:  # MD5s of re-runs, in parallel
        todo = [p for p, need in zip(files, pool.map(needs_upload, files)) if need]
    total = sum(p.stat().st_size for p in todo)
    bar = tqdm(  # disable=None: a bar on a terminal, nothing in CI logs
        total=total, unit="B", unit_scale=True, desc="stage", file=sys.stderr,
        disable=True if (not progress or not todo) else None,
    )

    class Progress(BaseSubscriber):
        def on_progress(self, future: Any, bytes_transferred: int, **kwargs: Any) -> None:
            bar.update(bytes_transferred)

    config = TransferConfig(
        multipart_threshold=MULTIPART_THRESHOLD,
        multipart_chunksize=MULTIPART_CHUNKSIZE,
        max_concurrency=jobs,
        use_threads=True,
    )
    try:
        with TransferManager(client, config) as manager:
            futures = [
                manager.upload(str(p), loc.bucket, key_of(p), subscribers=[Progress()]) for p in todo
            ]
            for fut in futures:
                fut.result()
    except Exception as exc:  # noqa: BLE001 - explain() turns any client error into one sentence
        raise explain(exc, loc, cfg) from None
    finally:
        bar.close()
    return StageSummary(
        files=len(todo), bytes=total, skipped=len(files) - len(todo), seconds=time.monotonic() - started
    )

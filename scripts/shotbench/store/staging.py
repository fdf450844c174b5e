"""Upload a folder of shot files to S3 through the S3 API, in parallel, skipping what is there.

Always through the API, never by copying into the server's data directory: objects that
arrive that way have no ETag, and libhdf5 2.x's ROS3 (aws-c-s3) refuses such objects.

`stage` uploads what is on disk, or refuses. Every file goes up through awscrt, which reads it
in C and computes its whole-object CRC64NVME (the full-object checksum S3 itself gives objects
and the AWS CLI sends by default) while it sends it, with the hardware-accelerated code awscrt
exposes: about ten times the speed of SHA-256 here. The checksum travels as a trailer the server
checks, so the server refuses a body that is not what awscrt read. Stage reads every file once
more itself, beside the upload, for its own CRC64NVME; the checksum the server then holds must
equal it. (A checksum computed before the PUT and sent in its header made every PUT wait for that
read, which cost many small files a few per cent: docs/results/2026-11-27-transfer-checks.md.)
A file of more than MULTIPART_THRESHOLD goes up as awscrt's own multipart upload in parts of
PART_SIZE: the server checks each part's trailer and combines them into the object's
FULL_OBJECT CRC64NVME, which must equal the whole file's. Where a server does not return a
multipart object's whole checksum, stage says that only the parts were checked
(`StageSummary.parts_only`); it never claims the whole-object comparison it could not make.

A body the server refuses while the file on disk still has the checksum that was sent was
changed on the way (a proxy, a NIC, memory): that is refused in one sentence, never retried
silently and never mistaken for a file that changed. Size and modification time are taken
before the read and again after the object exists: a file that changed in between (a torn
snapshot) is deleted from S3 again and reported, never counted as staged.

Multipart uploads stage starts are recorded in a journal (shotbench.store.uploads) until they
complete or are aborted; a failure or an interrupt (SIGINT, SIGTERM) cancels them (awscrt aborts
them on the server), and after a SIGKILL the next stage to the same bucket aborts the ones under
its prefix and says so.

Requests run on awscrt (shotbench.store.crt), the upload engine the transfer benchmark
measured fastest here. Every PUT is handed to awscrt at once and it keeps `jobs` connections
busy, shared with the parts of large files. A re-run skips objects
whose size and ETag already match the file, so an interrupted
stage resumes where it stopped.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import math
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shotbench.errors import UserError
from shotbench.redact import mask
from shotbench.store.crt import Engine, Pending, S3Failure
from shotbench.store.localdir import files_below, unreadable
from shotbench.store.s3 import (
    DEFAULT_REGION,
    PREFLIGHT_READ_TIMEOUT,
    Location,
    S3Config,
    check_local_folder,
    explain,
    silent,
)
from shotbench.units import MiB

MULTIPART_THRESHOLD = 64 * MiB  # one PUT per 16 MB shot file: simplest ETag, fewest requests
PART_SIZE = 16 * MiB
MULTIPART_CHUNKSIZE = PART_SIZE  # the name earlier versions used
_COMMON_PART_SIZES = (PART_SIZE, 8 * MiB, 5 * MiB, 16 * MiB, 32 * MiB, 64 * MiB, 100 * MiB)
MAX_JOBS = 1024  # connections awscrt keeps open at once: far beyond what any link or server here needs
_MIN_RATE = 1e6  # bytes/s: no request may take longer than 60 s + its bytes at this rate


@dataclass(frozen=True)
class StageSummary:
    files: int  # uploaded
    bytes: int  # uploaded
    skipped: int  # already present with the same size (and ETag where it could be checked)
    seconds: float
    # multipart objects whose every part the server checked, but whose whole-object CRC64NVME
    # it did not return, so the whole file's checksum could not be compared with it
    parts_only: int = 0
    cleaned: str = ""  # what an earlier, killed stage left and this one aborted ("" when nothing)

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0

    def line(self, dest: str = "") -> str:
        where = f" to {dest}" if dest else ""
        return (
            f"staged {self.files} files ({self.bytes / 1e6:.1f} MB){where} in {self.seconds:.1f} s, "
            f"{self.mb_per_s:.1f} MB/s; skipped {self.skipped} already present; {self.check()}"
            + (f"; {self.cleaned}" if self.cleaned else "")
        )

    def check(self) -> str:
        """What the upload check established, and no more."""
        if not self.files:
            return "nothing uploaded, nothing to check"
        whole = self.files - self.parts_only
        text = f"{whole} of {self.files} checked whole (CRC64NVME computed here, verified by the server, equal to the file's)"
        if self.parts_only:
            text += (
                f"; {self.parts_only} multipart: every part's CRC64NVME verified by the server, but it returned no "
                "whole-object checksum, so the whole file's was not compared"
            )
        return text


class FilesChanged(UserError):
    """Some files changed while they were uploading; they were not staged (the rest were)."""

    def __init__(self, names: list[str], summary: StageSummary) -> None:
        self.names = names
        self.summary = summary
        n = len(names)
        super().__init__(
            f"{n} file{'s' if n > 1 else ''} changed while {'they were' if n > 1 else 'it was'} being uploaded "
            f"and {'were' if n > 1 else 'was'} not staged ({', '.join(names[:3])}{', …' if n > 3 else ''}); "
            "run `shotbench stage` again once nothing writes to them."
        )


def local_files(src_dir: Path) -> list[Path]:
    """Every regular, non-hidden file below `src_dir` outside hidden folders (the key keeps the
    relative path): the walk `ls` and the bench share, which opened each one, so a file or folder
    that cannot be read is refused before anything is uploaded."""
    src_dir = Path(src_dir)
    check_local_folder(src_dir)
    files = [path for path, _ in files_below(src_dir)]
    if not files:
        raise UserError(f"{src_dir} holds no files; make shot files with `shotbench synth --out {src_dir}` first.")
    return files


def md5_etag(path: Path, part_size: int | None = None) -> str:
    """The ETag S3 gives an object uploaded from this file in one PUT, or in parts of `part_size`."""
    with _reading(path), open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
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


def _remote(
    engine: Engine, loc: Location, cfg: S3Config, create_bucket: bool | None
) -> dict[str, tuple[int, str | None]]:
    """What is already under the prefix. The usual case is one ListObjectsV2 on the engine; anything
    unusual (a missing bucket, refused credentials, no server) takes the botocore path, whose
    errors `explain` turns into one sentence."""
    try:
        return engine.list_objects(loc.bucket, loc.prefix, timeout=PREFLIGHT_READ_TIMEOUT)
    except S3Failure as exc:
        if exc.code == "Timeout":  # silence: the botocore path would only wait again
            raise silent(cfg) from None
    try:
        client = cfg.question_client()
        ensure_bucket(client, loc, cfg, create_bucket)
        return _existing(client, loc)
    except Exception as exc:  # noqa: BLE001 - explain() turns any client error into one sentence
        raise explain(exc, loc, cfg) from None


def crc64(data: bytes | memoryview, previous: int = 0) -> int:
    """CRC64NVME of `data` (continuing `previous`): awscrt's hardware-accelerated implementation,
    the same code that computes it inside aws-c-s3, about 15 GB/s here against SHA-256's 1.2."""
    from awscrt.checksums import crc64nvme

    return int(crc64nvme(data, previous))


def crc64_text(value: int) -> str:
    """The header and XML notation of a CRC64NVME: base64 of its 8 big-endian bytes."""
    return base64.b64encode(value.to_bytes(8, "big")).decode()


_READ = 8 * MiB
_buffers = threading.local()


def _buffer() -> memoryview:
    """This thread's read buffer, made once: a fresh 1 MiB `bytes` per small file cost more in
    page faults (the allocator maps and zeroes it anew) than reading the file did."""
    buf = getattr(_buffers, "view", None)
    if buf is None:
        buf = _buffers.view = memoryview(bytearray(_READ))
    return buf


def read_crc64(fh: io.RawIOBase) -> tuple[int, int]:
    """(CRC64NVME, bytes) of what is left in an unbuffered file, read into this thread's buffer."""
    buf = _buffer()
    value = nbytes = 0
    while n := fh.readinto(buf):
        value = crc64(buf[:n], value)
        nbytes += n
    return value, nbytes


def file_crc64(path: Path) -> int:
    """The whole file's CRC64NVME, read in pieces (a multipart file never sits in memory whole)."""
    with _reading(path), open(path, "rb", buffering=0) as fh:
        return read_crc64(fh)[0]


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[None]:
    """An OSError while stage reads `path` (an I/O error, a file removed or made unreadable
    meanwhile) is one sentence naming the file, not a traceback."""
    try:
        yield
    except OSError as exc:
        raise unreadable(path, exc) from None


def _bound(nbytes: int) -> float:
    return 60.0 + nbytes / _MIN_RATE


_REFUSED_BODY = ("BadDigest", "XAmzContentChecksumMismatch", "InvalidDigest", "XAmzContentSHA256Mismatch")


@dataclass(eq=False)
class _Upload:
    """One file on its way: what was seen of it on disk, and (multipart) its parts."""

    path: Path
    key: str
    stat: tuple[int, int]  # (size, mtime_ns) before the first read
    journal: Path | None = None  # its entry in the journal of open uploads (shotbench.store.uploads)
    opened: float = 0.0  # time.time() just before its multipart upload was asked for
    torn: bool = False  # a read found the file other than at `stat`
    sent: bool = False  # the object exists (PUT answered, or multipart completed)
    parts_only: bool = False  # the server checked each part, but returned no whole-object checksum


def _stat(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def _own_crc64(up: _Upload) -> int | None:
    """The file's CRC64NVME from a read of stage's own, beside its upload; None when that read did
    not see the file as stat saw it before the upload."""
    with _reading(up.path), open(up.path, "rb", buffering=0) as fh:
        value, nbytes = read_crc64(fh)
        after = os.fstat(fh.fileno())
    return value if (nbytes, after.st_mtime_ns) == up.stat and after.st_size == nbytes else None


class _Stager:
    """The requests of one `stage` call; every method runs on the worker pool or the caller."""

    def __init__(self, engine: Engine, loc: Location, endpoint: str, on_bytes: Callable[[int], None]) -> None:
        from awscrt.s3 import S3ChecksumAlgorithm, S3ChecksumConfig, S3ChecksumLocation

        self.engine = engine
        self.bucket = loc.bucket
        self.endpoint = endpoint
        self.on_bytes = on_bytes
        # aws-c-s3 computes each body's (each part's) CRC64NVME while it sends it, as a trailer the server checks
        self.trailer = S3ChecksumConfig(algorithm=S3ChecksumAlgorithm.CRC64NVME, location=S3ChecksumLocation.TRAILER)

    def _refused(self, up: _Upload, sent: int, exc: S3Failure) -> None:
        """The server refused a small file's body for its checksum. If the file changed, it is torn
        (reported as such); if it still has the checksum `sent` (read once more here), the bytes
        changed on the way."""
        if _stat(up.path) != up.stat or file_crc64(up.path) != sent:
            up.torn = True
            return
        raise S3Failure(
            "stage",
            exc.status,
            "CorruptedInTransit",
            f"{up.key}: the server refused the bytes it received ({exc.code}) because their CRC64NVME was not "
            f"{crc64_text(sent)}, the checksum of the file, which has not changed",
        )

    def send_small(self, up: _Upload) -> Pending:
        """One PUT, read and sent by awscrt in C, which computes the body's CRC64NVME as it sends it
        (a trailer): the server refuses a body that is not what awscrt read."""
        return self.engine.start(
            "PUT",
            self.bucket,
            up.key,
            operation="PutObject",
            send_filepath=str(up.path),
            send_size=up.stat[0],
            headers=[("Content-Type", "application/octet-stream")],
            checksum_config=self.trailer,
        )

    def finish_small(self, up: _Upload, pending: Pending) -> None:
        """Read the file once more for its own CRC64NVME while the PUT is on the wire, then wait for
        the PUT: the checksum the server stored must be the file's."""
        try:
            crc = _own_crc64(up)
        except UserError:  # the file cannot be read: whatever the PUT stored must not look staged
            with contextlib.suppress(S3Failure):
                pending.result(_bound(up.stat[0]))
                self.delete(up.key)
            raise
        if crc is None:
            up.torn = True
        try:
            reply = pending.result(_bound(up.stat[0]))
        except S3Failure as exc:
            if crc is not None and exc.code in _REFUSED_BODY:
                self._refused(up, crc, exc)  # torn, or raises: nothing was stored either way
                return
            if crc is None or _stat(up.path) != up.stat:
                up.torn = True
                return
            raise
        up.sent = True
        if crc is None:
            return  # torn: the object is deleted once every request has ended
        try:
            got = reply.headers.get("x-amz-checksum-crc64nvme")
            if got is None:  # a server that keeps no checksums: read the object back
                got = crc64_text(crc64(self._read_back(up.key, up.stat[0])))
            if got != crc64_text(crc) and _stat(up.path) != up.stat:
                up.torn = True  # the file changed between awscrt's read and ours
                return
            self._compare(up.key, got, crc)
        except S3Failure:
            self.delete(up.key)  # an object that is not the file must not look staged
            raise
        self.on_bytes(up.stat[0])

    def put_smalls(self, ups: list[_Upload], jobs: int) -> None:
        """Every small file: each PUT handed to awscrt at once, up to `window` queued (awscrt keeps
        `jobs` of them on the wire), and the files read for their own checksums here meanwhile, in
        the order their PUTs finish in: no request waits for a checksum."""
        window = max(64, 8 * jobs)
        queued: deque[tuple[_Upload, Pending]] = deque()
        for up in ups:
            while len(queued) >= window:
                self.finish_small(*queued.popleft())
            queued.append((up, self.send_small(up)))
        while queued:
            self.finish_small(*queued.popleft())

    def send_big(self, up: _Upload, part_size: int) -> Pending:
        """A file above the multipart threshold, as awscrt's own multipart upload: its parts are
        read and sent in C, each with the CRC64NVME aws-c-s3 computes while sending it (a trailer
        the server checks), and the server combines them into the object's FULL_OBJECT CRC64NVME.
        The upload is journaled by key first (awscrt does not expose its upload id), so a stage
        killed mid-upload is cleaned up by the next one."""
        from shotbench.store import uploads

        up.opened = time.time()
        up.journal = uploads.record(self.endpoint, self.bucket, up.key, "", started=up.opened)
        return self.engine.start(
            "PUT",
            self.bucket,
            up.key,
            operation="PutObject",
            send_filepath=str(up.path),
            send_size=up.stat[0],
            part_size=part_size,
            headers=[("Content-Type", "application/octet-stream")],
            checksum_config=self.trailer,
        )

    def finish_big(self, up: _Upload, pending: Pending, local: Callable[[], int | None]) -> None:
        """Wait for a multipart upload; the whole object's CRC64NVME, as the server holds it, must
        be the file's (`local()`: computed from the file while the parts were on the wire)."""

        try:
            pending.result(_bound(up.stat[0]))
        except S3Failure as exc:
            self._sweep(up)  # awscrt aborted the upload it knew; any other of ours goes too
            crc = local()
            if crc is None or _stat(up.path) != up.stat or file_crc64(up.path) != crc:
                up.torn = True
                return
            if exc.code in _REFUSED_BODY:
                raise S3Failure(
                    "stage",
                    exc.status,
                    "CorruptedInTransit",
                    f"{up.key}: the server refused a part ({exc.code}) whose bytes did not match the CRC64NVME "
                    f"awscrt computed while sending it; the file (CRC64NVME {crc64_text(crc)}) has not changed",
                ) from None
            raise
        self._sweep(up)
        up.sent = True
        try:
            crc = local()
        except UserError:  # the file cannot be read: the object must not look staged
            with contextlib.suppress(S3Failure):
                self.delete(up.key)
            raise
        if crc is None:
            up.torn = True
            return
        got = pending.headers.get("x-amz-checksum-crc64nvme") or self._head_checksum(up.key)
        try:
            if got:
                self._compare(up.key, got, crc)
            else:
                up.parts_only = True  # each part was checked by the server; the whole could not be compared
        except S3Failure:
            self.delete(up.key)
            raise
        self.on_bytes(up.stat[0])

    def _sweep(self, up: _Upload) -> None:
        """Abort any upload of this key this stage opened that is still open, then forget the entry.

        awscrt completes or aborts the upload it knows; but when it retries a CreateMultipartUpload
        whose answer was lost (seen on a loaded machine), the first upload is left open, and no
        one else knows its id. Ours: same key, initiated since the entry was written. Kept in the
        journal when the server cannot be asked, so the next stage cleans it."""
        from shotbench.store import uploads

        if up.journal is None:
            return
        try:
            for key, upload_id, initiated in uploads.list_open(self.engine, self.bucket, up.key):
                if key == up.key and initiated >= int(up.opened):
                    uploads.abort(self.engine, self.bucket, key, upload_id)
        except S3Failure:
            return
        uploads.forget(up.journal)

    def _head_checksum(self, key: str) -> str | None:
        """The object's stored CRC64NVME, asked for explicitly (HeadObject, checksum mode enabled)."""
        reply = self.engine.call(
            "HEAD", self.bucket, key, operation="HeadObject", headers=[("x-amz-checksum-mode", "ENABLED")], timeout=60
        )
        return reply.headers.get("x-amz-checksum-crc64nvme")

    def delete(self, key: str) -> None:
        self.engine.call("DELETE", self.bucket, key, operation="DeleteObject", timeout=60)

    def _compare(self, where: str, got: str, want: int) -> None:
        """The server's checksum must be the file's."""
        if got != crc64_text(want):
            raise S3Failure(
                "stage",
                None,
                "ChecksumMismatch",
                f"{where}: the server holds CRC64NVME {got}, the file read gave {crc64_text(want)}",
            )

    def _read_back(self, key: str, size: int) -> bytes:
        """The object's bytes (servers that store no checksums)."""
        reply = self.engine.call("GET", self.bucket, key, operation="GetObject", timeout=_bound(size))
        return reply.body


def stage(
    src_dir: Path,
    loc: Location,
    cfg: S3Config,
    jobs: int = 8,
    progress: bool | Callable[[int], None] = True,
    create_bucket: bool | None = None,
    part_size: int = PART_SIZE,
    multipart_threshold: int = MULTIPART_THRESHOLD,
) -> StageSummary:
    """Upload `src_dir` to `loc` with `jobs` requests in flight shared by all files.

    `progress`: a bar on a terminal (True), nothing (False), or a function called with the bytes
    of every part or file as it lands. Raises FilesChanged (after staging the others) when files
    changed while they were read or uploaded. Multipart uploads it opened are aborted on any
    failure or interrupt; those an earlier, killed stage left under the prefix are aborted first.
    """
    from tqdm import tqdm

    from shotbench.store import uploads

    if loc.kind != "s3":
        raise UserError(f"the destination {loc.uri()} is not an S3 location; give s3://bucket/prefix.")
    if not 1 <= jobs <= MAX_JOBS:
        raise UserError(f"--jobs takes a whole number from 1 to {MAX_JOBS}, not {jobs}; give e.g. --jobs 8.")
    if part_size < 5 * MiB or multipart_threshold < part_size:
        raise UserError("parts must be at least 5 MiB and the multipart threshold at least one part.")
    src_dir = Path(src_dir)
    files = local_files(src_dir)
    started = time.monotonic()
    engine = Engine(cfg, connections=jobs, part_size=part_size)
    remote = _remote(engine, loc, cfg, create_bucket)
    endpoint = cfg.endpoint_url or f"aws:{cfg.region}"
    try:
        cleaned = uploads.clean_abandoned(engine, loc.bucket, loc.prefix)
    except S3Failure as exc:
        raise _explain_failure(exc, loc, cfg) from None

    keys = {p: loc.prefix + p.relative_to(src_dir).as_posix() for p in files}

    def key_of(p: Path) -> str:
        return keys[p]

    def needs_upload(p: Path) -> bool:
        have = remote.get(key_of(p))
        return have is None or not same_object(p, have[0], have[1])

    there = [p for p in files if key_of(p) in remote]
    if there:
        with ThreadPoolExecutor(max_workers=min(jobs, 8)) as pool:  # MD5s of re-runs, in parallel
            keep = {p for p, need in zip(there, pool.map(needs_upload, there)) if not need}
    else:
        keep = set()
    ups = [_Upload(p, key_of(p), _stat(p)) for p in files if p not in keep]
    total = sum(u.stat[0] for u in ups)
    bar = None
    if callable(progress):
        on_bytes = progress
    else:
        bar = tqdm(  # disable=None: a bar on a terminal, nothing in CI logs
            total=total,
            unit="B",
            unit_scale=True,
            desc="stage",
            file=sys.stderr,
            disable=True if (not progress or not ups) else None,
        )
        on_bytes = bar.update
    stager = _Stager(engine, loc, endpoint, on_bytes)
    big = [u for u in ups if u.stat[0] > multipart_threshold]
    small = [u for u in ups if u.stat[0] <= multipart_threshold]
    changed: list[_Upload] = []
    inflight: list[tuple[_Upload, Pending]] = []
    try:
        with ThreadPoolExecutor(max_workers=2) as readers:  # the big files' own CRC64NVME, read beside the upload
            for u in big:
                inflight.append((u, stager.send_big(u, part_size)))
            local = {u: readers.submit(_own_crc64, u) for u in big}
            stager.put_smalls(small, jobs)
            while inflight:
                u, pending = inflight[0]
                stager.finish_big(u, pending, local[u].result)
                inflight.pop(0)
        for u in ups:
            if u.torn or _stat(u.path) != u.stat:
                if u.sent:
                    stager.delete(u.key)  # a torn snapshot must not look staged
                changed.append(u)
    except BaseException as exc:  # a failure, Ctrl-C or SIGTERM (Terminated): leave no upload open
        _cancel(stager, inflight)
        if isinstance(exc, S3Failure):
            raise _explain_failure(exc, loc, cfg) from None
        raise
    finally:
        if bar is not None:
            bar.close()
    done = [u for u in ups if u not in changed]
    summary = StageSummary(
        files=len(done),
        bytes=sum(u.stat[0] for u in done),
        skipped=len(keep),
        seconds=time.monotonic() - started,
        parts_only=sum(u.parts_only for u in done),
        cleaned=cleaned.line(loc.uri()) if cleaned.uploads else "",
    )
    if changed:
        raise FilesChanged([u.path.relative_to(src_dir).as_posix() for u in changed], summary)
    return summary


def _cancel(stager: _Stager, inflight: list[tuple[_Upload, Pending]]) -> None:
    """Cancel the multipart uploads still in flight, wait for awscrt to abort them on the server,
    and sweep what it could not know of; an entry stays in the journal when the server could not
    be asked (the next stage cleans it)."""
    for _, pending in inflight:
        pending.request.cancel()
    for up, pending in inflight:
        with contextlib.suppress(Exception):  # cancelled, or failed: either way the request has ended
            pending.request.finished_future.result(30)
        if pending.request.finished_future.done():
            stager._sweep(up)


def _explain_failure(exc: S3Failure, loc: Location, cfg: S3Config) -> UserError:
    """One sentence for a request that failed mid-stage."""
    where = cfg.endpoint_url or "AWS"
    if exc.code == "CorruptedInTransit":
        return UserError(
            f"the upload was refused because bytes changed between this machine and the server ({exc.message}); "
            "nothing was staged for it, so check the network path (proxies, NICs, memory) before staging again."
        )
    if exc.code == "ChecksumMismatch":
        return UserError(
            f"the server does not hold what was sent ({exc.message}); nothing was marked staged for it, "
            "check the server's storage and run `shotbench stage` again."
        )
    if exc.code == "KeyTooLongError":
        return UserError(
            f"{where} refused a key under {loc.uri()} as too long ({exc.message or exc.code}); S3 keys are at most "
            "1,024 bytes, so give a shorter prefix or shorten the file names and folders below the source."
        )
    if exc.status is None:
        return UserError(
            f"the S3 endpoint {where} stopped answering during the upload ({exc.code}); check that "
            "the server is healthy and run `shotbench stage` again (it resumes)."
        )
    if exc.code in ("SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied") or exc.status == 403:
        return UserError(
            f"{where} refused the upload to {loc.uri()} for access key {mask(cfg.access_key)} "
            f"({exc.code}); check the credentials and s3:PutObject rights."
        )
    return UserError(f"{exc}; check the location and the server, then run `shotbench stage` again (it resumes).")

"""Download objects to files, checked: the download side the transfer benchmark measures.

An object of at most CARRIED bytes is one GET on libcurl (`shotbench.store.curlget`), whose
response carries the CRC64NVME the server stores for it: the check costs no request of its own.
A larger object goes on obstore (Rust's object_store), whose GET returns no response headers, so
its stored CRC64NVME is asked for with one HEAD, sent at the start on awscrt's own connections so
that it overlaps the GETs. obstore's GETs are ranges of at most PIECE bytes, each written where it
belongs with `pwrite` as it arrives, in chunks of at least CHUNK bytes (Python is called per
chunk, never per network read): a large object is fetched on many connections at once (the way
s5cmd and the CRT split a download). Measured side by side on the embedded server (16 in
flight): one 256 MiB object took 0.17 s in 16 MiB ranges against 0.29 s as one stream (median of
5 interleaved rounds). Writing each range as it arrives, rather than once it is whole, took one
256 MiB object in 0.19 s (p25–p75 0.18–0.20) against 0.56 s (0.35–0.71), s5cmd 0.27 s
(0.25–0.30): 15 rounds, each download after a 256 MiB upload, the variants in a fresh random
order per round.

`jobs` GETs are in flight: first the small objects, then the ranges of the larger ones. Every
range must hold exactly the bytes asked for, and every file ends at the object's size. Each
range's CRC64NVME is computed as it is written (awscrt's implementation, about 15 GB/s), the
ranges' values are combined into the file's, and where the server stores a CRC64NVME for the
object the two must be equal: the download is checked against what was uploaded, not only
against its length. When the caller knows the SHA-256 a file must have, the file is hashed once
it is complete and compared.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shotbench.errors import UserError
from shotbench.store.clients import obstore_store
from shotbench.store.s3 import Location, S3Config
from shotbench.units import MiB

PIECE = 16 * MiB  # one ranged GET; an object of this size or less is one GET
# An object of this size or less goes on libcurl, whose GET carries the stored checksum; a larger
# one on obstore, with a HEAD for it. libcurl's transfers share one thread (about 1.1 GB/s here):
# 128 x 1 MiB at 16 in flight took 1.01-1.07x obstore's unchecked time on libcurl against 1.14-1.30x
# with the HEADs, but 128 x 2 MiB 1.15x against 1.08x and 16 x 16 MiB 1.50x against 1.01x
# (docs/results/2026-12-01-download-check-in-the-get.md).
CARRIED = 1 * MiB
CHUNK = 1 * MiB  # a range is written as it arrives, in pieces of at least this many bytes


@dataclass(frozen=True)
class Wanted:
    """One object to fetch: its key, the file it becomes, its size, and (if known) its SHA-256."""

    key: str
    path: Path
    size: int
    sha256: str | None = None


@dataclass(frozen=True)
class FetchSummary:
    files: int
    bytes: int
    seconds: float
    finished: dict[str, float]  # key -> seconds from its first range's start to its last range's end
    checked: int = 0  # files whose CRC64NVME equalled the one the server stores (the rest: it stores none)


@dataclass(frozen=True)
class Piece:
    """One ranged GET: `length` bytes of an object from `start`."""

    index: int  # of the object in the wanted list
    start: int
    length: int


def pieces(sizes: list[int], piece: int = PIECE) -> list[Piece]:
    """The ranged GETs that fetch objects of these sizes: whole objects up to `piece` bytes, larger
    ones in `piece`-byte ranges (the last one shorter); an empty object is one empty piece."""
    if piece < 1:
        raise ValueError("piece must be at least one byte")
    out = []
    for i, size in enumerate(sizes):
        out += [Piece(i, start, min(piece, size - start)) for start in range(0, size, piece)] or [Piece(i, 0, 0)]
    return out


@dataclass
class _Open:
    """A file being written: opened by its first range, closed by its last, so only the files in
    flight hold a descriptor (a 1000-file row stays far below the usual limit of 1024)."""

    left: int = 0
    fd: int | None = None
    started: float = 0.0
    finished: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _cannot_write(path: Path | str, exc: OSError) -> UserError:
    return UserError(f"cannot write {path} ({exc.strerror}); check the folder and its free space.")


def _local(path: Path, op: Callable[[], int]) -> int:
    """A file operation on this machine; its failure is one sentence, never obstore's."""
    try:
        return op()
    except OSError as exc:
        raise _cannot_write(path, exc) from None


def _pwrite(path: Path, fd: int, data: memoryview, at: int) -> None:
    if _local(path, lambda: os.pwrite(fd, data, at)) != len(data):
        raise UserError(f"could not write all of {path} (is the disk full?); free space and fetch again.")


def _get_into(store: Any, w: Wanted, p: Piece, fd: int) -> int:
    """GET one range and write it in place as it arrives, at least CHUNK bytes at a time, so the
    disk writes overlap the transfer and no range is held whole in memory (a range of one chunk
    or less is one call, one buffer). Exactly the range's length must arrive. Returns the range's
    CRC64NVME, computed on the bytes as they were written."""
    import obstore
    from awscrt.checksums import crc64nvme

    crc = 0
    if p.length == 0:
        return crc
    if p.length <= CHUNK:  # one chunk anyway: one call, as a whole buffer
        data = memoryview(obstore.get_range(store, w.key, start=p.start, length=p.length))
        if len(data) == p.length:
            _pwrite(w.path, fd, data, p.start)
            crc = crc64nvme(data)
        received = len(data)
    else:
        got = obstore.get(store, w.key, options={"range": (p.start, p.start + p.length)})
        received = 0
        for chunk in got.stream(min_chunk_size=CHUNK):
            data = memoryview(chunk)
            if received + len(data) <= p.length:
                _pwrite(w.path, fd, data, p.start + received)
                crc = crc64nvme(data, crc)
            received += len(data)
    if received != p.length:
        raise _short(w, p, received)
    return int(crc)


def _stored_crc64(cfg: S3Config, bucket: str, wanted: list[Wanted], jobs: int) -> Callable[[], list[str | None]]:
    """Ask the server, for every object at once, for the CRC64NVME it stores (HeadObject with
    checksum mode): returns a function that waits for the answers (None where there is none)."""
    from shotbench.store.crt import Engine, S3Failure

    # as many connections as the GETs: where every response waits (S3 from EC2, about 20 ms), HEADs
    # on fewer connections end after the GETs and the download waits for them (128 objects at 64 in
    # flight, s3-same-region: 1.52x obstore's time on 8 HEAD connections, 1.14x on 64)
    engine = Engine(cfg, connections=jobs)
    pending = [
        engine.start("HEAD", bucket, w.key, operation="HeadObject", headers=[("x-amz-checksum-mode", "ENABLED")])
        for w in wanted
    ]

    def answers() -> list[str | None]:
        out: list[str | None] = []
        for p in pending:
            try:
                out.append(p.result(60).headers.get("x-amz-checksum-crc64nvme"))
            except S3Failure:
                out.append(None)  # no answer: that file's check is the size alone, as before
        return out

    return answers


def fetch_objects(
    cfg: S3Config, bucket: str, wanted: list[Wanted], jobs: int = 8, piece: int = PIECE, stored_crc: bool = True
) -> FetchSummary:
    """Fetch every `wanted` object into its file, `jobs` GETs of at most `piece` bytes at a time;
    one sentence on the first failure. `stored_crc=False` skips the comparison with the server's
    CRC64NVME (and the HEADs of large objects): what that check costs can then be measured."""
    if jobs < 1:
        raise UserError(f"--jobs must be at least 1, not {jobs}.")
    started = time.perf_counter()
    plan = pieces([w.size for w in wanted], piece)
    asked = [i for i, w in enumerate(wanted) if w.size > min(CARRIED, piece)]  # obstore's: their checksum needs a HEAD
    heads = _stored_crc64(cfg, bucket, [wanted[i] for i in asked], jobs) if stored_crc and asked else None
    run, on_obstore = _Fetch(cfg, bucket, wanted, jobs), set(asked)
    try:
        run.whole([p for p in plan if p.index not in on_obstore])
        run.ranges([p for p in plan if p.index in on_obstore])
    except UserError:
        raise
    except OSError as exc:  # libcurl's side names the file (`curlget`)
        raise _cannot_write(exc.filename or "a file", exc) from None
    except Exception as exc:  # noqa: BLE001 - libcurl's and obstore's errors (the server or the connection) become one sentence
        text = " ".join(str(exc).split())[:200]
        raise UserError(
            f"fetching from s3://{bucket}/ failed ({type(exc).__name__}: {text}); check the location "
            "and the server, then fetch again."
        ) from None
    finally:
        for f in run.files:
            if f.fd is not None:
                os.close(f.fd)
    if heads is not None:
        for i, value in zip(asked, heads()):
            run.stored[i] = value
    checked = _check_crc64(wanted, plan, run.crcs, run.stored if stored_crc else [None] * len(wanted))
    for w in wanted:
        if (have := w.path.stat().st_size) != w.size:
            raise UserError(f"{w.path} received {have} bytes but the object {w.key} has {w.size}; fetch again.")
        if w.sha256 and _sha256(w.path) != w.sha256:
            raise UserError(
                f"{w.path} does not have the SHA-256 it must have ({w.key} changed or was damaged); fetch again."
            )
    return FetchSummary(
        len(wanted),
        sum(w.size for w in wanted),
        time.perf_counter() - started,
        {w.key: f.finished - f.started for w, f in zip(wanted, run.files)},
        checked,
    )


def _short(w: Wanted, p: Piece, received: int, more: bool = False) -> UserError:
    """A range that did not hold exactly the bytes asked for: the object is not the size listed."""
    got = f"more than {p.length}" if more else f"{received}"
    return UserError(
        f"{w.path} received {got} bytes at offset {p.start} of {w.key} where {p.length} were asked; "
        "the object is not the size listed, fetch again."
    )


@dataclass
class _Fetch:
    """One `fetch_objects` call: what it fetches and what each GET leaves (its files' descriptors
    and times, each range's CRC64NVME, each object's stored CRC64NVME)."""

    cfg: S3Config
    bucket: str
    wanted: list[Wanted]
    jobs: int
    files: list[_Open] = field(init=False)
    crcs: dict[Piece, int] = field(default_factory=dict)
    stored: list[str | None] = field(init=False)

    def __post_init__(self) -> None:
        self.files = [_Open() for _ in self.wanted]
        self.stored = [None] * len(self.wanted)

    def whole(self, plan: list[Piece]) -> None:
        """The small objects: one libcurl GET apiece, its response's stored CRC64NVME kept."""
        from shotbench.store.curlget import CurlGets, Get

        if not plan:
            return
        gets = [Get(self.wanted[p.index].key, str(self.wanted[p.index].path), p.length) for p in plan]
        for p, got in zip(plan, CurlGets(self.cfg, self.bucket, self.jobs).run(gets)):
            if got.more or got.received != p.length:
                raise _short(self.wanted[p.index], p, got.received, got.more)
            self.crcs[p], self.stored[p.index] = int(got.crc), got.stored
            self.files[p.index].started, self.files[p.index].finished = got.started, got.finished

    def ranges(self, plan: list[Piece]) -> None:
        """The larger objects' ranges on obstore, `jobs` at a time, each file open while its ranges are."""
        if not plan:
            return
        store = obstore_store(self.cfg, self.bucket)
        for p in plan:
            self.files[p.index].left += 1

        def one(p: Piece) -> None:
            w, f = self.wanted[p.index], self.files[p.index]
            with f.lock:
                if f.fd is None:
                    f.started = time.perf_counter()
                    f.fd = _local(w.path, lambda: os.open(w.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
                fd = f.fd
            self.crcs[p] = _get_into(store, w, p, fd)
            with f.lock:
                f.left -= 1
                if f.left == 0:
                    os.close(fd)
                    f.fd = None
                    f.finished = time.perf_counter()

        with ThreadPoolExecutor(self.jobs) as pool:
            list(pool.map(one, plan))


def _check_crc64(wanted: list[Wanted], plan: list[Piece], crcs: dict[Piece, int], stored: list[str | None]) -> int:
    """Each file's CRC64NVME (its ranges' combined, in order) against the server's; how many were checked."""
    import base64

    from awscrt.checksums import combine_crc64nvme

    whole = [0] * len(wanted)
    for p in sorted(plan, key=lambda p: (p.index, p.start)):
        whole[p.index] = int(combine_crc64nvme(whole[p.index], crcs[p], p.length))
    checked = 0
    for w, value, want in zip(wanted, whole, stored):
        if not want or "-" in want:  # none stored, or a composite of parts: not a whole-file value
            continue
        got = base64.b64encode(value.to_bytes(8, "big")).decode()
        if got != want:
            raise UserError(
                f"{w.path} does not have the CRC64NVME the server stores for {w.key} ({got}, not {want}): "
                "it was damaged on the way; fetch again."
            )
        checked += 1
    return checked


def fetch(loc: Location, dest: Path, cfg: S3Config, jobs: int = 8) -> FetchSummary:
    """Every object under `loc` into `dest`, keeping the key's path below the prefix."""
    import obstore

    if loc.kind != "s3":
        raise UserError(f"the source {loc.uri()} is not an S3 location; give s3://bucket/prefix.")
    store = obstore_store(cfg, loc.bucket)
    try:
        listed = [m for batch in obstore.list(store, prefix=loc.prefix or None) for m in batch]
    except Exception as exc:  # noqa: BLE001 - obstore's errors become one sentence
        raise UserError(
            f"cannot list {loc.uri()} ({type(exc).__name__}); check the location and credentials."
        ) from None
    if not listed:
        raise UserError(f"nothing is stored under {loc.uri()}; stage files there first with `shotbench stage`.")
    wanted = []
    for meta in sorted(listed, key=lambda m: m["path"]):
        path = Path(dest) / meta["path"][len(loc.prefix) :].lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        wanted.append(Wanted(meta["path"], path, int(meta["size"])))
    return fetch_objects(cfg, loc.bucket, wanted, jobs)

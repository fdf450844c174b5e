"""Download objects to files, checked: the download side the transfer benchmark measures.

Built on obstore (Rust's object_store), which the transfer benchmark measured as the fastest
downloader here (README, "Transfer tools"): `jobs` objects stream into their files at once,
each from one GET, in chunks of at least 8 MiB, so Python is called a few times per object
rather than per network read. Every file must end with the object's size; when the caller
knows the SHA-256 a file must have, it is hashed as it is written and compared.
"""

from __future__ import annotations

import hashlib
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shotbench.errors import UserError
from shotbench.store.clients import obstore_store
from shotbench.store.s3 import Location, S3Config

CHUNK = 8 << 20


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
    finished: dict[str, float]  # key -> seconds the object took


def _one(store: Any, w: Wanted) -> float:
    import obstore

    t = time.perf_counter()
    h = hashlib.sha256() if w.sha256 else None
    n = 0
    with open(w.path, "wb") as out:
        for chunk in obstore.get(store, w.key).stream(min_chunk_size=CHUNK):
            out.write(chunk)
            n += len(chunk)
            if h is not None:
                h.update(chunk)
    if n != w.size:
        raise UserError(f"{w.path} received {n} bytes but the object {w.key} has {w.size}; fetch again.")
    if h is not None and h.hexdigest() != w.sha256:
        raise UserError(
            f"{w.path} does not have the SHA-256 it must have ({w.key} changed or was damaged); fetch again."
        )
    return time.perf_counter() - t


def fetch_objects(cfg: S3Config, bucket: str, wanted: list[Wanted], jobs: int = 8) -> FetchSummary:
    """Fetch every `wanted` object into its file, `jobs` at a time; one sentence on the first failure."""
    if jobs < 1:
        raise UserError(f"--jobs must be at least 1, not {jobs}.")
    started = time.perf_counter()
    store = obstore_store(cfg, bucket)
    try:
        with ThreadPoolExecutor(jobs) as pool:
            seconds = list(pool.map(lambda w: _one(store, w), wanted))
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - obstore's errors (the server or the connection) become one sentence
        text = " ".join(str(exc).split())[:200]
        raise UserError(
            f"fetching from s3://{bucket}/ failed ({type(exc).__name__}: {text}); check the location "
            "and the server, then fetch again."
        ) from None
    return FetchSummary(
        len(wanted),
        sum(w.size for w in wanted),
        time.perf_counter() - started,
        {w.key: s for w, s in zip(wanted, seconds)},
    )


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

"""Download objects to files, checked: the download side of `stage`, on the same engine.

Every object goes straight to its file through awscrt (shotbench.store.crt), large ones in
parallel ranged parts, all of them in flight together up to `jobs` connections. awscrt checks
each response against the checksum the server keeps for it (SHA-256 for objects `stage`
wrote), and afterwards every file must have the object's size, or the fetch fails with one
sentence naming the first file that does not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from shotbench.errors import UserError
from shotbench.store.crt import Engine, S3Failure
from shotbench.store.s3 import Location, S3Config

PART_SIZE = 16 << 20


@dataclass(frozen=True)
class Wanted:
    """One object to fetch: its key, the file it becomes, and the size it must have."""

    key: str
    path: Path
    size: int


@dataclass(frozen=True)
class FetchSummary:
    files: int
    bytes: int
    seconds: float
    finished: dict[str, float]  # key -> seconds since the fetch started when it completed


def fetch_objects(cfg: S3Config, bucket: str, wanted: list[Wanted], jobs: int = 8,
                  engine: Engine | None = None) -> FetchSummary:
    """Fetch every `wanted` object into its file; UserError on the first that fails or comes out short."""
    from awscrt.s3 import S3ChecksumConfig

    if jobs < 1:
        raise UserError(f"--jobs must be at least 1, not {jobs}.")
    started = time.perf_counter()
    engine = engine or Engine(cfg, connections=jobs, part_size=PART_SIZE)
    validate = S3ChecksumConfig(validate_response=True)
    pending = [(w, engine.start("GET", bucket, w.key, operation="GetObject", recv_filepath=str(w.path),
                                checksum_config=validate)) for w in wanted]
    finished: dict[str, float] = {}
    errors: list[str] = []
    for w, p in pending:
        try:
            p.result(timeout=60.0 + w.size / 1e6)
            finished[w.key] = time.perf_counter() - started
        except S3Failure as exc:
            errors.append(f"{w.key}: {exc}")
    if errors:
        raise UserError(f"{len(errors)} of {len(wanted)} objects could not be fetched (first {errors[0]}); "
                        "check the location and the server, then fetch again.")
    for w in wanted:
        size = w.path.stat().st_size if w.path.is_file() else None
        if size != w.size:
            raise UserError(f"{w.path} holds {size} bytes but s3://{bucket}/{w.key} has {w.size}; fetch again.")
    return FetchSummary(len(wanted), sum(w.size for w in wanted), time.perf_counter() - started, finished)


def fetch(loc: Location, dest: Path, cfg: S3Config, jobs: int = 8) -> FetchSummary:
    """Every object under `loc` into `dest`, keeping the key's path below the prefix."""
    if loc.kind != "s3":
        raise UserError(f"the source {loc.uri()} is not an S3 location; give s3://bucket/prefix.")
    engine = Engine(cfg, connections=jobs, part_size=PART_SIZE)
    try:
        listed = engine.list_objects(loc.bucket, loc.prefix)
    except S3Failure as exc:
        raise UserError(f"cannot list {loc.uri()} ({exc}); check the location and credentials.") from None
    if not listed:
        raise UserError(f"nothing is stored under {loc.uri()}; stage files there first with `shotbench stage`.")
    wanted = []
    for key, (size, _) in sorted(listed.items()):
        path = Path(dest) / key[len(loc.prefix):].lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        wanted.append(Wanted(key, path, size))
    return fetch_objects(cfg, loc.bucket, wanted, jobs, engine)

"""The transfer matrix: file count x file size rows, profiles, and the deterministic test files.

Rows of one family move the same total bytes, so a row's time shows what file count costs
(per-request overhead, cross-file parallelism) rather than how much data there is.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from shotbench.diskspace import atomic_open, atomic_write
from shotbench.errors import UserError
from shotbench.units import GiB, KiB, MiB

_UNITS = {"": 1, "b": 1, "k": KiB, "kib": KiB, "m": MiB, "mib": MiB, "g": GiB, "gib": GiB}
_CHUNK = 16 * MiB


def parse_size(text: str) -> int:
    """'1MiB', '100M', '1GiB', '4096' -> bytes (binary units; 'MB' is read as MiB too)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = m.group(2).lower().replace("ib", "").rstrip("b") if m else None
    if m is None or unit not in {"", "k", "m", "g"}:
        raise UserError(f"cannot read the size {text!r}; write it like 1MiB, 100MiB or 1GiB.")
    return int(float(m.group(1)) * _UNITS[unit])


def size_label(n: int) -> str:
    """Bytes as the seed tables write them: '1 MiB', '10 GiB', '512 KiB'."""
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


@dataclass(frozen=True, order=True)
class Row:
    """One test of the matrix: `count` files of `size` bytes each."""

    count: int
    size: int

    @property
    def total(self) -> int:
        return self.count * self.size

    @property
    def key(self) -> str:
        return f"{self.count}x{size_label(self.size).replace(' ', '')}"

    @property
    def label(self) -> str:
        return f"{self.count} File/{size_label(self.size)} ea"


def parse_rows(text: str) -> tuple[Row, ...]:
    """'1000x1MiB,10x100MiB' -> rows; the --rows option."""
    rows = []
    for part in text.split(","):
        if not part.strip():
            continue
        m = re.fullmatch(r"\s*(\d+)\s*[x×]\s*(.+)", part)
        if m is None or int(m.group(1)) < 1:
            raise UserError(f"cannot read the row {part!r}; write rows like 1000x1MiB,10x100MiB.")
        size = parse_size(m.group(2))
        if size < 1:  # a row of empty files moves nothing: it only stopped at the credentials check
            raise UserError(f"the row {part.strip()!r} has files of 0 bytes; write rows like 1000x1MiB,10x100MiB.")
        rows.append(Row(int(m.group(1)), size))
    if not rows:
        raise UserError("--rows is empty; give at least one row like 100x1MiB.")
    return tuple(rows)


@dataclass(frozen=True)
class Profile:
    """What `--profile` selects: rows, concurrency sweep, trials."""

    name: str
    rows: tuple[Row, ...]
    concurrency: tuple[int, ...]
    trials: int
    note: str = ""
    sweep: tuple[int, ...] = ()  # extra concurrencies, run on sweep_rows only
    sweep_rows: tuple[Row, ...] = ()
    # sync vs async under latency (store/network.py profiles; "loopback" is the server reached directly)
    latency_networks: tuple[str, ...] = ()
    latency_tools: tuple[str, ...] = ()
    latency_concurrency: tuple[int, ...] = ()
    latency_rows: tuple[Row, ...] = ()
    latency_trials: int = 1
    max_trials: int = 0  # rows whose stage threshold is undecided get more trials, up to this many


TRANSFER_PROFILES: dict[str, Profile] = {
    # Scaled to about 15-25 minutes on a quiet 2-core machine against the embedded server, five
    # interleaved trials (more where undecided, below): a 1 MiB family at 4, 16 and 64 in flight, and 16 MiB and 256 MiB
    # files at 16 (a case lasts 0.1-1 s here, so three trials left medians that moved with one
    # slow trial). Then the sync-vs-async sweep (s3fs and obstore, each blocking and asyncio)
    # under two latency profiles, three trials: 1, 4, 16, 64 in flight x 1, 16, 256 MiB files.
    # The seeds' 1000 x 1 MiB row is in `medium`.
    "quick": Profile(
        name="quick",
        rows=(Row(128, 1 * MiB), Row(16, 16 * MiB), Row(1, 256 * MiB)),
        concurrency=(16,),
        trials=5,
        note="scaled down for a 2-core machine: 256 MiB rows at 16 in flight, 128 x 1 MiB also at 4 and 64, "
        "five trials; sync-vs-async sweep under s3-same-region and s3-cross-region, three trials",
        sweep=(4, 64),
        sweep_rows=(Row(128, 1 * MiB),),
        latency_networks=("s3-same-region", "s3-cross-region"),
        latency_tools=("s3fs", "s3fs-async", "obstore", "obstore-async"),
        latency_concurrency=(1, 4, 16, 64),
        latency_rows=(Row(32, 1 * MiB), Row(8, 16 * MiB), Row(1, 256 * MiB)),
        latency_trials=3,
        # five trials leave most 1 MiB rows' ratio of stage to the fastest tool at about 0.9-1.3
        # (shotbench.transfer.moretrials): those rows, and only those, get up to 20
        max_trials=20,
    ),
    # The seed's 1 GiB family with a thread sweep and three trials.
    "medium": Profile(
        name="medium",
        rows=(Row(1000, 1 * MiB), Row(100, 10 * MiB), Row(10, 100 * MiB), Row(1, 1 * GiB)),
        concurrency=(4, 16, 64),
        trials=3,
    ),
    # The seed matrix up to 10 x 10 GiB (needs ~250 GiB of free disk).
    "full": Profile(
        name="full",
        rows=(
            Row(1000, 1 * MiB),
            Row(100, 10 * MiB),
            Row(10, 100 * MiB),
            Row(100, 100 * MiB),
            Row(10, 1 * GiB),
            Row(1, 10 * GiB),
            Row(10, 10 * GiB),
        ),
        concurrency=(4, 16, 64),
        trials=3,
    ),
}
TRANSFER_PROFILES["default"] = TRANSFER_PROFILES["quick"]


def get_profile(name: str) -> Profile:
    try:
        return TRANSFER_PROFILES[name]
    except KeyError:
        names = ", ".join(sorted(TRANSFER_PROFILES))
        raise UserError(f"unknown transfer profile {name!r}; use one of {names}.") from None


@dataclass(frozen=True)
class FileSpec:
    """One generated file and the digest every copy of it must match."""

    name: str
    size: int
    sha256: str
    path: Path = field(compare=False)


def _file_bytes(seed: int, row: Row, index: int):
    """Seeded random bytes in chunks: incompressible, identical on every machine."""
    rng = np.random.default_rng([seed, row.count, row.size, index])
    left = row.size
    while left > 0:
        n = min(left, _CHUNK)
        yield rng.bytes(n)
        left -= n


# A row up to this size is written anew at the start of every run (rewrite=True): see ensure_files.
REWRITE_LIMIT = 2 * GiB


def ensure_files(row: Row, root: Path, seed: int = 0, rewrite: bool = False) -> list[FileSpec]:
    """The row's files under root/<row key>-s<seed>, made once; later calls reuse them.

    With `rewrite`, a row of at most REWRITE_LIMIT bytes is written again (the same bytes), so
    that every run reads its files from the page cache in one state: as the program that just
    wrote them leaves them. Reused files sit there in whatever state their history left: read
    back from disk, the kernel holds them in small pages, and reading 128 x 1 MiB of them costs
    2.5x the CPU (20 ms against 8 ms here), more for a tool that reads its files twice."""
    folder = root / f"{row.key}-s{seed}"
    manifest = folder / "manifest.json"
    if manifest.exists() and not (rewrite and row.total <= REWRITE_LIMIT):
        entries = json.loads(manifest.read_text())["files"]
        specs = [FileSpec(e["name"], e["size"], e["sha256"], folder / "files" / e["name"]) for e in entries]
        if len(specs) == row.count and all(s.path.is_file() and s.path.stat().st_size == s.size for s in specs):
            return specs
    files = folder / "files"
    files.mkdir(parents=True, exist_ok=True)
    specs = []
    width = max(5, len(str(row.count - 1)))
    for i in range(row.count):
        name = f"f{i:0{width}d}.bin"
        h = hashlib.sha256()
        with atomic_open(files / name, "wb") as out:  # a run reading the old file meanwhile keeps it whole
            for chunk in _file_bytes(seed, row, i):
                h.update(chunk)
                out.write(chunk)
        specs.append(FileSpec(name, row.size, h.hexdigest(), files / name))
    entries = [{"name": s.name, "size": s.size, "sha256": s.sha256} for s in specs]
    atomic_write(manifest, json.dumps({"seed": seed, "count": row.count, "size": row.size, "files": entries}))
    return specs

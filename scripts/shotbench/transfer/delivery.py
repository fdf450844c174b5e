"""Checking that a transfer really delivered every file, before its time is allowed to count.

A tool that reports success but leaves a short, missing or altered file would otherwise
post a fast time; downloads are compared byte for byte (size + sha256 from generation),
uploads by the object sizes the store lists.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from shotbench.transfer.cases import FileSpec


@dataclass(frozen=True)
class FileCheck:
    """The verdict on one transferred file: error is '' when size and digest match."""

    name: str
    size: int | None
    error: str

    @property
    def ok(self) -> bool:
        return not self.error


def sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def check_file(spec: FileSpec, path: Path) -> FileCheck:
    """Size first (cheap), then the digest."""
    if not path.is_file():
        return FileCheck(spec.name, None, "missing")
    size = path.stat().st_size
    if size != spec.size:
        return FileCheck(spec.name, size, f"size {size} != {spec.size}")
    if sha256_file(path) != spec.sha256:
        return FileCheck(spec.name, size, "checksum mismatch")
    return FileCheck(spec.name, size, "")


def verify_dir(files: list[FileSpec], dest: Path, jobs: int = 2) -> list[FileCheck]:
    """Every expected file under dest (flat), in the order of `files`."""
    with ThreadPoolExecutor(max(1, jobs)) as pool:  # hashlib releases the GIL
        return list(pool.map(lambda s: check_file(s, dest / s.name), files))


def verify_digests(files: list[FileSpec], seen: dict[str, tuple[int, str]]) -> list[FileCheck]:
    """For tools that stream into memory: compare the (size, sha256) they computed on the fly."""
    out = []
    for spec in files:
        got = seen.get(spec.name)
        if got is None:
            out.append(FileCheck(spec.name, None, "missing"))
        elif got[0] != spec.size:
            out.append(FileCheck(spec.name, got[0], f"size {got[0]} != {spec.size}"))
        elif got[1] != spec.sha256:
            out.append(FileCheck(spec.name, got[0], "checksum mismatch"))
        else:
            out.append(FileCheck(spec.name, got[0], ""))
    return out


def verify_sizes(files: list[FileSpec], listed: dict[str, int]) -> list[FileCheck]:
    """Uploads: each object listed under the prefix with the file's size."""
    out = []
    for spec in files:
        size = listed.get(spec.name)
        if size is None:
            out.append(FileCheck(spec.name, None, "missing"))
        elif size != spec.size:
            out.append(FileCheck(spec.name, size, f"size {size} != {spec.size}"))
        else:
            out.append(FileCheck(spec.name, size, ""))
    return out


def summarize(checks: list[FileCheck]) -> str:
    """'' when all good, else one short cell text like '3/1000 files bad: checksum mismatch (f00007.bin)'."""
    bad = [c for c in checks if not c.ok]
    if not bad:
        return ""
    return f"{len(bad)}/{len(checks)} files bad: {bad[0].error} ({bad[0].name})"

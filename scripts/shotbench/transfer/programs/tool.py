"""What every transfer tool shares: the Tool interface, its result, and small utilities.

A tool moves one case (all files of one row, one direction) and returns an Outcome; the
runner times the call and verifies the files afterwards.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from shotbench.store.s3 import S3Config
from shotbench.transfer.cases import FileSpec

_READ = 8 << 20


class ToolFailed(Exception):
    """The tool ran but did not finish the transfer (non-zero exit, exception); one line."""


@dataclass
class Target:
    """Where a case's objects go or come from: bucket plus a prefix that ends with '/'."""

    bucket: str
    prefix: str

    def key(self, name: str) -> str:
        return self.prefix + name

    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


@dataclass
class Outcome:
    """What a tool reports back: per-file seconds where it can see them, and for in-memory
    downloads the (size, sha256) it computed while streaming."""

    file_seconds: dict[str, float] = field(default_factory=dict)
    digests: dict[str, tuple[int, str]] | None = None
    pending: dict[str, bytes] = field(default_factory=dict)  # in-memory bodies, hashed after timing
    # downloads: files whose bytes the tool compared with the checksum the server stores, as the
    # tool reported it (None: the tool makes no such check, or does not say)
    checked: int | None = None

    def finish_digests(self) -> None:
        """Hash the in-memory bodies (outside the timed section) into `digests`."""
        if self.pending:
            self.digests = dict(self.digests or {})
            for name, data in self.pending.items():
                self.digests[name] = (len(data), hashlib.sha256(data).hexdigest())
            self.pending = {}


def _pkg_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _import_reason(*modules: str) -> str | None:
    """'not installed: ...' when one of the modules cannot be imported."""
    for mod in modules:
        try:
            __import__(mod)
        except Exception as exc:  # noqa: BLE001 - ImportError, or a broken native extension
            return f"not installed: cannot import {mod} ({type(exc).__name__}: {exc})"[:300]
    return None


def _last_lines(text: str, n: int = 3) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])[-400:]


class Tool:
    """One way of moving files; subclasses implement upload/download for a whole case."""

    name: str = ""
    family: str = ""  # the package or program, for run.json versions
    mode: str = "sync"  # sync | async | cli
    directions: tuple[str, ...] = ("upload", "download")
    concurrent: bool = True  # takes a thread/worker/concurrency setting
    describe: dict[str, str] = {}

    requires: tuple[str, ...] = ()  # Python modules the tool imports

    def check(self) -> str | None:
        """None when usable, else the reason it is not ('not installed: ...')."""
        return _import_reason(*self.requires)

    def version(self) -> str | None:
        return _pkg_version(self.family)

    def upload(self, files: list[FileSpec], src: Path, target: Target, cfg: S3Config, concurrency: int) -> Outcome:
        raise NotImplementedError

    def download(self, files: list[FileSpec], target: Target, dest: Path, cfg: S3Config, concurrency: int) -> Outcome:
        raise NotImplementedError


def _timed_pool(items: list, fn: Callable, jobs: int) -> dict[str, float]:
    """Run fn(item) on a thread pool; per-item seconds; the first exception aborts the case."""

    def one(item):
        t = time.perf_counter()
        fn(item)
        return item.name, time.perf_counter() - t

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        return dict(pool.map(one, items))


async def _timed_gather(items: list, coro: Callable, limit: int) -> dict[str, float]:
    """Async counterpart of _timed_pool: at most `limit` coroutines in flight."""
    sem = asyncio.Semaphore(max(1, limit))

    async def one(item):
        async with sem:
            t = time.perf_counter()
            await coro(item)
            return item.name, time.perf_counter() - t

    return dict(await asyncio.gather(*(one(i) for i in items)))

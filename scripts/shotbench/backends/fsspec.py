"""h5py over an s3fs file object; block size and cache type are the knobs that matter.

s3fs's default (a 50 MiB read-ahead) over-reads badly for HDF5's scattered small reads,
and so do page-sized (8 MB) blocks when a task reads one signal per file. The default here
is a 1 MiB block cache: few enough GETs for whole-file reads on a high-latency link, small
enough that opening a file to read one signal moves about a megabyte.
"""

from __future__ import annotations

import logging
from typing import Any

from shotbench.backends import limits
from shotbench.backends.base import Backend
from shotbench.store.clients import s3fs_filesystem
from shotbench.units import MiB

_FILESYSTEMS: dict[tuple[Any, ...], Any] = {}


class _RetryLog(logging.Handler):
    """Counts s3fs's own retries: its retry loop says so only in a debug log line."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0
        self.installed = False

    def emit(self, record: logging.LogRecord) -> None:
        if "retryable" in str(record.msg).lower() and "nonretryable" not in str(record.msg).lower():
            self.count += 1

    def install(self) -> None:
        if not self.installed:
            log = logging.getLogger("s3fs")
            log.setLevel(logging.DEBUG)
            log.addHandler(self)
            self.installed = True


_S3FS_RETRIES = _RetryLog()


class Attempts:
    """Requests an s3fs filesystem's client sent again: botocore's retries (attempts beyond
    one per call, from its before-send / before-call hooks) plus s3fs's own (a call made
    again after a retryable error, e.g. a body cut short). Cumulative; rows take differences."""

    def __init__(self, fs: Any) -> None:
        self.sent = self.calls = 0
        events = fs.s3.meta.events
        events.register("before-send.s3", self._count_sent)
        events.register("before-call.s3", self._count_call)
        self._s3fs_base = _S3FS_RETRIES.count
        _S3FS_RETRIES.install()

    def _count_sent(self, **_: Any) -> None:
        self.sent += 1

    def _count_call(self, **_: Any) -> None:
        self.calls += 1

    def retries(self) -> int:
        return self.sent - self.calls + _S3FS_RETRIES.count - self._s3fs_base


def make_filesystem(s3: Any) -> Any:
    """One S3FileSystem per process and S3 settings: dropping one makes s3fs close its
    aiohttp session from the wrong event loop, and a real application keeps one anyway."""
    key = (s3.endpoint_url, s3.region, s3.access_key, s3.secret_key, s3.session_token, s3.ca_bundle)
    fs = _FILESYSTEMS.get(key)
    if fs is not None:
        return fs
    fs = s3fs_filesystem(s3, config_kwargs=limits.botocore_config_kwargs(), use_listings_cache=False)
    fs.retries = limits.MAX_RETRIES  # s3fs's own retry loop, on top of botocore's
    _FILESYSTEMS[key] = fs
    return fs


class FsspecBackend(Backend):
    name = "fsspec"
    description = "h5py over an s3fs file object (block_size, cache_type)"
    defaults = {"block_size": MiB, "cache_type": "blockcache"}

    def setup(self, s3: Any) -> None:
        super().setup(s3)
        self.fs = make_filesystem(s3)
        # s3fs builds its aiobotocore client and loads the S3 model on first use (~0.5 s):
        # a long-lived application pays that once, so it happens here, before any clock.
        self.fs.connect()
        if self.meter is not None:
            from shotbench.backends.meters import attach_botocore

            attach_botocore(self.fs.s3, self.meter)
        self.attempts = Attempts(self.fs)
        try:
            self.fs.info(self.source.bucket)
        except Exception:  # noqa: BLE001 - a real failure shows up in the measured reads
            pass

    def retries(self) -> int | None:
        return self.attempts.retries()

    def open(self, key: str, size: int) -> Any:
        fobj = self.fs.open(
            f"{self.source.bucket}/{key}",
            "rb",
            block_size=int(self.options["block_size"]),
            cache_type=str(self.options["cache_type"]),
            size=size,
        )
        return self.h5file(fobj)

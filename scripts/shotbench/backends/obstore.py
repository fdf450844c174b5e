"""h5py over an obstore (Rust object_store) reader.

obstore returns its own `Bytes` buffer type while h5py's file-object driver wants `bytes`
from read() (the well-known TypeError); this reader implements `readinto`, which h5py
prefers, and copies obstore's buffer through a memoryview.

Retries stay unknown (`Backend.retries` None, an empty cell) for every obstore backend
(obstore, download, raw-get): object_store retries inside Rust, and obstore 0.12 forwards no
log to Python (no pyo3-log, no tracing subscriber, so RUST_LOG does nothing) and offers no
per-request hook; only the error raised after giving up names its retries.
"""

from __future__ import annotations

import io
from typing import Any

from shotbench.backends import limits
from shotbench.backends.base import Backend
from shotbench.store.clients import obstore_store
from shotbench.units import MiB


def make_store(s3: Any, bucket: str) -> Any:
    """An obstore S3Store for `bucket`, with the benchmark's bounded waits and retries."""
    return obstore_store(s3, bucket, limits.obstore_client_options(), limits.obstore_retry_config())


def nbytes(data: Any) -> int:
    return len(memoryview(data))


def get_object(store: Any, key: str, meter: Any = None) -> Any:
    """The whole object's bytes in one GET, counted by `meter` when given."""
    import obstore

    def call() -> Any:
        return obstore.get(store, key).bytes()

    return meter.timed(call, nbytes) if meter is not None else call()


STREAM_CHUNK = MiB  # stream_object_to writes at least this many bytes per call


def stream_object_to(store: Any, key: str, path: str, meter: Any = None) -> int:
    """GET the whole object and write it to `path` as it arrives; the bytes written. One request,
    counted by `meter` from its start to its last byte."""
    import obstore

    def call() -> int:
        written = 0
        with open(path, "wb") as fh:
            for chunk in obstore.get(store, key).stream(min_chunk_size=STREAM_CHUNK):
                written += fh.write(memoryview(chunk))
        return written

    return meter.timed(call, int) if meter is not None else call()


class ObstoreFile(io.RawIOBase):
    """Seekable read-only file over ranged GETs, with an optional aligned block cache."""

    def __init__(self, store: Any, key: str, size: int, block_size: int = 0, meter: Any = None) -> None:
        self._store, self._key, self._size = store, key, size
        self._meter = meter
        self._pos = 0
        self._block = int(block_size)
        self._cache: dict[int, memoryview] = {}

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = base + offset
        return self._pos

    def _get(self, start: int, length: int) -> memoryview:
        import obstore

        def call() -> Any:
            return obstore.get_range(self._store, self._key, start=start, length=length)

        data = self._meter.timed(call, nbytes) if self._meter is not None else call()
        return memoryview(data)

    def _block_view(self, index: int) -> memoryview:
        view = self._cache.get(index)
        if view is None:
            start = index * self._block
            view = self._get(start, min(self._block, self._size - start))
            self._cache[index] = view
        return view

    def readinto(self, buffer: Any) -> int:
        out = memoryview(buffer).cast("B")
        want = min(len(out), max(0, self._size - self._pos))
        if want <= 0:
            return 0
        if not self._block:
            out[:want] = self._get(self._pos, want)
        else:
            done = 0
            while done < want:
                pos = self._pos + done
                index, off = divmod(pos, self._block)
                view = self._block_view(index)
                n = min(want - done, len(view) - off)
                out[done : done + n] = view[off : off + n]
                done += n
        self._pos += want
        return want

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = self._size - self._pos
        buf = bytearray(max(0, min(size, self._size - self._pos)))
        n = self.readinto(buf)
        return bytes(buf[:n])


class ObstoreBackend(Backend):
    name = "obstore"
    description = "h5py over an obstore ranged-GET file object (block_size 0 = no cache)"
    defaults = {"block_size": 0}

    def setup(self, s3: Any) -> None:
        super().setup(s3)
        import obstore  # noqa: F401 - imported in setup, before any clock starts, so a missing library fails here

        self.store = make_store(s3, self.source.bucket)

    def open(self, key: str, size: int) -> Any:
        return self.h5file(ObstoreFile(self.store, key, size, int(self.options["block_size"]), self.meter))

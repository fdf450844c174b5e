"""The S3 ceiling: GET the same objects' bytes at the same concurrency, no HDF5 at all.

Every HDF5 case is compared with the time this takes for the same work (shots: the one
file's bytes split across the workers; signals: every file once, split across workers).
"""

from __future__ import annotations

from typing import Any

from shotbench.backends.base import Backend
from shotbench.backends.obstore import get_object, make_store, nbytes


class RawGetBackend(Backend):
    name = "raw-get"
    reads_hdf5 = False
    needs_s3 = False  # on a local folder it reads the files: the disk ceiling
    description = "obstore GETs of the objects' full bytes (no HDF5): the S3 ceiling"

    def setup(self, s3: Any) -> None:
        self.s3 = s3
        self.meter = self.make_meter(s3)
        if self.source.kind == "s3":
            import obstore  # noqa: F401 - imported in setup, before any clock starts, so a missing library fails here

            self.store = make_store(s3, self.source.bucket)

    def fetch(self, key: str, start: int, length: int) -> Any:
        if self.source.kind != "s3":
            with open(self.source.local_path(key), "rb") as fh:
                fh.seek(start)
                return fh.read(length if length >= 0 else -1)
        import obstore

        if start == 0 and length < 0:
            return get_object(self.store, key, self.meter)
        return self.meter.timed(lambda: obstore.get_range(self.store, key, start=start, length=length), nbytes)

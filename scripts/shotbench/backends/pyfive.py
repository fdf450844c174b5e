"""pyfive: a pure-Python HDF5 reader (no libhdf5), reading through an s3fs file object.

pyfive mirrors h5py's reading API, but its dimension proxies are sequences (no `.values()`),
and it does not implement every storage layout: version-4 layout messages (chunked datasets
written with libver v110 and later) raise, which the worker records as `unsupported`.
"""

from __future__ import annotations

from typing import Any

from shotbench.backends.readers import ReadersBackend, signal_path
from shotbench.backends.unsupported import Unsupported, translate
from shotbench.units import MiB


class PyfiveBackend(ReadersBackend):
    name = "pyfive"
    reader = "pyfive"
    description = "pyfive (pure Python HDF5) over an s3fs file object (block_size, cache_type)"
    defaults = {"block_size": MiB, "cache_type": "blockcache"}

    def setup(self, s3: Any) -> None:
        import pyfive  # noqa: F401 - imported in setup, before any clock starts, so a missing library fails here

        from shotbench.backends.fsspec import make_filesystem

        self.s3 = s3
        self.fs = make_filesystem(s3)
        self.fs.connect()
        self.count_s3fs(s3, self.fs)
        from shotbench.backends.fsspec import Attempts

        self.attempts = Attempts(self.fs)

    def retries(self) -> int | None:
        """The same s3fs counters as the fsspec backend (`shotbench.backends.fsspec.Attempts`)."""
        return self.attempts.retries()

    def open(self, key: str, size: int) -> Any:
        import pyfive

        fobj = self.fs.open(
            f"{self.source.bucket}/{key}",
            "rb",
            size=size,
            block_size=int(self.options["block_size"]),
            cache_type=str(self.options["cache_type"]),
        )
        try:
            return pyfive.File(fobj)
        except Exception as exc:
            fobj.close()
            raise translate(self.reader, exc) from exc

    def arrays(self, fh: Any, shot: str, name: str, scales: bool = True) -> list[Any]:
        dset = fh[signal_path(shot, name)]
        out = [dset[()]]
        if not scales:
            return out
        try:
            found = [scale for dim in dset.dims for scale in dim]
        except ValueError as exc:  # pyfive's dereference walks the tree and may not find a scale
            raise Unsupported(f"pyfive: dimension scale of {name} ({exc})") from exc
        out.extend(scale[()] for scale in found)
        return out

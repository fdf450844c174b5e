"""h5py over s3fs with the settings the cloud-native HDF5 guides recommend for paged files.

Blocks the size of the file's page (8,000,000 bytes in the upstream files; `block_size`),
a block cache that keeps every block it fetched, and a libhdf5 page buffer (`page_buf`,
used when the case sets none) so that metadata pages are fetched once per open file. A
file written without paged aggregation cannot take a page buffer: it is opened without
one, and the row says so only through its timing (the library refuses, it does not guess).
"""

from __future__ import annotations

from typing import Any

from shotbench.backends.fsspec import FsspecBackend


class FsspecTunedBackend(FsspecBackend):
    name = "fsspec-tuned"
    description = "h5py over s3fs, page-sized blocks (block_size), blockcache, page buffer (page_buf)"
    defaults = {"block_size": 8_000_000, "cache_type": "blockcache", "page_buf": 16_000_000}

    def h5file(self, target: Any) -> Any:
        import h5py

        kw = self.settings.h5_kwargs()
        kw.setdefault("page_buf_size", int(self.options["page_buf"]))
        if not kw["page_buf_size"]:
            kw.pop("page_buf_size")
        try:
            return h5py.File(target, "r", **kw)
        except OSError as exc:
            if "page_buf_size" not in kw or "page" not in str(exc).lower():
                raise
            kw.pop("page_buf_size")  # not a paged file: libhdf5 refuses a page buffer
            target.seek(0)
            return h5py.File(target, "r", **kw)

"""h5coro-hidefix: a prebuilt chunk index, then obstore ranged GETs and hidefix's Rust decoder.

The index is built once per file, untimed (`shotbench.backends.chunkindex`): h5py walks the file
over counted obstore GETs and hands each dataset's chunk table to `Index.from_chunks`, which is
saved beside the run (hidefix's own `Index(path)` needs the file on local disk, which would make
the one-time cost a whole download). A contiguous dataset is one chunk the size of the dataset; a
compact one has no byte range and is kept in the index. A read is `read_plan` (the chunks' byte
ranges), one `obstore.get_ranges` call, and `read_from_buffers` (gzip + shuffle decoded in
parallel, without the GIL). Filters other than deflate and shuffle are `unsupported`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from shotbench.backends import chunkindex
from shotbench.backends.readers import Handle, ReadersBackend, signal_path
from shotbench.backends.unsupported import Unsupported, translate

KNOWN_FILTERS = {1, 2}  # H5Z_FILTER_DEFLATE, H5Z_FILTER_SHUFFLE: what hidefix decodes


class HidefixBackend(ReadersBackend):
    name = "h5coro-hidefix"
    reader = "h5coro-hidefix"
    builds_index: ClassVar[bool] = True
    description = "h5coro-hidefix: chunk index built once (untimed), chunks by obstore get_ranges, Rust decode"
    defaults = {"index_dir": ""}

    def setup(self, s3: Any) -> None:
        import h5coro_hidefix  # noqa: F401 - imported in setup, before any clock starts, so a missing library fails here
        import obstore  # noqa: F401 - imported in setup, before any clock starts, so a missing library fails here

        from shotbench.backends.obstore import make_store

        self.s3 = s3
        self.store = make_store(s3, self.source.bucket)
        self.meter = None  # get_ranges coalesces ranges itself: its requests are not countable here
        self.folder = chunkindex.IndexFolder(str(self.options["index_dir"]), self.name)

    # --- the index -------------------------------------------------------------------
    def build_index(self, key: str, size: int) -> None:
        """Survey `key` over obstore and save its hidefix index, unless already stored."""
        if self.folder.built(key):
            return
        import numpy as np
        from h5coro_hidefix import Index

        from shotbench.backends.meters import Meter

        tables: dict[str, dict[str, Any]] = {}

        def record(path: str, dset: Any, info: chunkindex.DatasetInfo) -> None:
            if info.layout == "compact":
                return
            shape = tuple(dset.shape) or (1,)  # a scalar: one element, the same bytes
            if info.layout == "contiguous":
                offset = dset.id.get_offset()
                if offset is None:
                    raise Unsupported(f"h5coro-hidefix: {path} has no storage allocated")
                tables[path] = {
                    "dtype": dset.dtype.str,
                    "shape": list(shape),
                    "chunk_shape": list(shape),
                    "gzip": None,
                    "shuffle": False,
                    "addrs": np.array([offset], np.uint64),
                    "sizes": np.array([dset.id.get_storage_size()], np.uint64),
                    "offsets": np.zeros((1, len(shape)), np.uint64),
                }
                return
            if info.layout != "chunked":
                raise Unsupported(f"h5coro-hidefix: {info.layout} layout of {path}")
            dcpl = dset.id.get_create_plist()
            filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
            if set(filters) - KNOWN_FILTERS:
                raise Unsupported(f"h5coro-hidefix: filter {sorted(set(filters) - KNOWN_FILTERS)} of {path}")
            chunks = [dset.id.get_chunk_info(i) for i in range(dset.id.get_num_chunks())]
            tables[path] = {
                "dtype": dset.dtype.str,
                "shape": list(dset.shape),
                "chunk_shape": list(dset.chunks),
                "gzip": int(dset.compression_opts) if 1 in filters else None,
                "shuffle": 2 in filters,
                "addrs": np.array([c.byte_offset for c in chunks], np.uint64),
                "sizes": np.array([c.size for c in chunks], np.uint64),
                "offsets": np.array([c.chunk_offset for c in chunks], np.uint64).reshape(len(chunks), len(dset.shape)),
            }

        meter = Meter()
        watch = chunkindex.Stopwatch()
        try:
            import h5py

            with h5py.File(chunkindex.obstore_file(self.store, key, size, meter), "r") as fh:
                sv = chunkindex.survey(fh, record)
            idx = Index.from_chunks(key, tables)
            binary = self.folder.path(key, ".hidefix")
            tmp = binary.with_name(binary.name + ".tmp")
            idx.save(str(tmp))
            tmp.replace(binary)
        except Exception as exc:
            raise translate(self.reader, exc) from exc
        stored = binary.stat().st_size + self.folder.write_survey(key, sv)
        counts = meter.drain()
        self.folder.write_meta(key, watch.seconds(), stored, counts.gets, counts.bytes)

    def index_stats(self, key: str) -> tuple[float, int] | None:
        return self.folder.stats(key)

    # --- reading -----------------------------------------------------------------------
    def open(self, key: str, size: int) -> Any:
        from h5coro_hidefix import Index

        if not self.folder.built(key):
            self.build_index(key, size)  # only when the untimed pass could not (its error is here)
        datasets, inline = self.folder.read_survey(key)
        idx = Index.load(str(self.folder.path(key, ".hidefix")), source=key)
        return Handle((key, idx, datasets, inline))

    def arrays(self, fh: Any, shot: str, name: str, scales: bool = True) -> list[Any]:
        import obstore

        key, idx, datasets, inline = fh.obj

        def read(path: str) -> Any:
            addrs, sizes, _ = idx.read_plan(path)
            starts = [int(a) for a in addrs]
            buffers = obstore.get_ranges(self.store, key, starts=starts, lengths=[int(s) for s in sizes])
            out = idx.read_from_buffers(path, buffers)
            return out

        return chunkindex.with_scales(read, datasets, inline, "/" + signal_path(shot, name), scales)

"""HSDS: libhdf5's work moved to a server. The files are loaded as `hsload --link` does (metadata
into HSDS, chunks left in the original HDF5 objects on S3) and read through h5pyd, the h5py-like
REST client; HSDS's data node fetches the chunk bytes by range and decodes them.

The service (`shotbench.store.hsds_service`: one service node, one data node, Unix sockets only) is started
on the orchestrator the first time a run or a byte check asks for this backend's worker
environment, and stopped when that process ends (it cannot outlive it). The load is the one-time
cost, built untimed per file: h5pyd's `load_file(..., dataload="link")` reading the file with h5py
over counted obstore GETs (`hsload` itself opens s3:// paths with TLS switched off, which the
embedded server's https refuses). Each domain lives under `/shotbench/<run tag>/` in the files'
bucket. Runs in `.envs/hsds`: HSDS's own pins (aiohttp, numcodecs) are not the readers'.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from shotbench.backends import chunkindex
from shotbench.backends.readers import Handle, ReadersBackend
from shotbench.backends.unsupported import translate

ENV = "hsds"
TOP = "/shotbench/"
_STARTED: list[Path] = []  # state folders whose service this process started (stopped at exit)


@contextlib.contextmanager
def fixed_maxshape(group_cls: Any) -> Iterator[None]:
    """During a load, a dataset whose maximum shape is its shape is created without one.

    hsload copies every dataset's `maxshape`, and h5pyd 1.0 sends it as `maxdims`, which its
    h5json refuses for any layout but chunked ("Only datasets with 'H5D_CHUNKED' layout can be
    resizable"): every contiguous dataset, linked or not, fails to load. A fixed-size dataset
    means the same without a maximum shape, so the load goes through; the service is unchanged."""
    original = group_cls.create_dataset

    def create_dataset(self: Any, name: Any, shape: Any = None, dtype: Any = None, data: Any = None, **kw: Any) -> Any:
        most = kw.get("maxshape")
        if most is not None and shape is not None and tuple(most) == tuple(shape):
            kw["maxshape"] = None
        return original(self, name, shape, dtype, data, **kw)

    group_cls.create_dataset = create_dataset
    try:
        yield
    finally:
        group_cls.create_dataset = original


class HsdsBackend(ReadersBackend):
    name = "hsds"
    reader = "hsds"
    env: ClassVar[str | None] = ENV
    builds_index: ClassVar[bool] = True
    via_endpoint: ClassVar[bool] = False  # its service reads S3, started once with the run's endpoint
    description = "HSDS server (1 SN + 1 DN) with files loaded by hsload --link (untimed), read through h5pyd"
    defaults = {"index_dir": ""}

    @classmethod
    def python(cls) -> Path:
        from shotbench.backends import readers_env

        return readers_env.ensure(ENV, ENV)

    @classmethod
    def process_env(cls, s3: Any) -> dict[str, str]:
        """Start (once per process) the service the workers talk to; its endpoint and login."""
        from shotbench.paths import state_dir
        from shotbench.store import hsds_service as service

        state = state_dir() / "hsds"
        info = service.status(state)
        if info is None:
            info = service.start(state, s3, cls.python(), private=True)
            if state not in _STARTED:
                _STARTED.append(state)
                atexit.register(service.stop, state)
        return info.client_env()

    def setup(self, s3: Any) -> None:
        import h5pyd  # noqa: F401 - imported in setup, before any clock starts, so a missing library fails here
        from h5pyd._apps import utillib  # noqa: F401 - hsload's loader, imported before any clock starts

        from shotbench.backends.obstore import make_store

        self.s3 = s3
        self.store = make_store(s3, self.source.bucket)
        self.meter = None  # the data node fetches the chunks: the client sees only REST calls
        self.folder = chunkindex.IndexFolder(str(self.options["index_dir"]), self.name)
        self.tag = hashlib.sha256(str(self.folder.dir.resolve()).encode()).hexdigest()[:12]
        self.login = {
            "endpoint": os.environ.get("HS_ENDPOINT"),
            "username": os.environ.get("HS_USERNAME"),
            "password": os.environ.get("HS_PASSWORD"),
            "bucket": self.source.bucket,
        }

    def domain(self, key: str) -> str:
        return f"{TOP}{self.tag}/{chunkindex.index_name(key)}"

    def _folders(self) -> None:
        """`/shotbench/` and this run's folder (another worker may make them first)."""
        import h5pyd

        for path in (TOP, f"{TOP}{self.tag}/"):
            try:
                h5pyd.Folder(path, mode="x", **self.login).close()
            except OSError:
                h5pyd.Folder(path, mode="r", **self.login).close()  # exists: any other error shows here

    # --- the load ----------------------------------------------------------------------
    def build_index(self, key: str, size: int) -> None:
        """Load `key` into HSDS with linked chunks, unless this run already did."""
        if self.folder.built(key):
            return
        import logging

        import h5py
        import h5pyd
        from h5pyd._apps import utillib

        from shotbench.backends.meters import Meter

        logging.getLogger().setLevel(logging.WARNING)  # load_file logs every object at INFO
        meter = Meter()
        watch = chunkindex.Stopwatch()
        try:
            self._folders()
            fobj = chunkindex.obstore_file(self.store, key, size, meter)
            with (
                h5py.File(fobj, "r") as fin,
                h5pyd.File(self.domain(key), "w", **self.login) as fout,
                fixed_maxshape(h5pyd.Group),
            ):
                sv = chunkindex.survey(fin)
                utillib.load_file(fin, fout, dataload="link", s3path=f"s3://{self.source.bucket}/{key}")
            stored = 0  # HSDS's own objects are not counted: see `index_stats`
        except Exception as exc:
            raise translate(self.reader, exc) from exc
        stored += self.folder.write_survey(key, sv)
        counts = meter.drain()
        self.folder.write_meta(key, watch.seconds(), stored, counts.gets, counts.bytes)

    def index_stats(self, key: str) -> tuple[float, int] | None:
        """(load seconds, bytes of the local survey). The objects HSDS writes for a domain reach S3
        later, written back by its data node under keys of its own scheme, so they are not counted."""
        return self.folder.stats(key)

    # --- reading -----------------------------------------------------------------------
    def open(self, key: str, size: int) -> Any:
        import h5pyd

        if not self.folder.built(key):
            self.build_index(key, size)  # only when the untimed pass could not (its error is here)
        fh = h5pyd.File(self.domain(key), "r", **self.login)
        return Handle(fh, fh.close)

    def arrays(self, fh: Any, shot: str, name: str, scales: bool = True) -> list[Any]:
        from shotbench.backends.readers import h5py_arrays

        return h5py_arrays(fh.obj, shot, name, scales)

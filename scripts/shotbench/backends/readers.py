"""Shared base of the alternative readers: their environment and the h5py-free read path.

These backends run in `.envs/readers` (see `shotbench.backends.readers_env`), installed on first use.
A reader whose file handle is not an h5py.File overrides `arrays`: the signal's data and
then each attached dimension scale, in the order `shotbench.hdf5.shotfile.read_signal` reads
them, so datasets and payload bytes compare one for one with the h5py backends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from shotbench.backends.base import Backend
from shotbench.backends.unsupported import translate
from shotbench.hdf5.shotfile import SHOTS_GROUP, SIGNALS_GROUP


def signal_path(shot: str, name: str) -> str:
    return f"{SHOTS_GROUP}/{shot}/{SIGNALS_GROUP}/{name}"


class ReadersBackend(Backend):
    """A backend whose libraries live in the `readers` dependency group."""

    env: ClassVar[str | None] = "readers"
    reader: ClassVar[str] = ""  # the library's name, for `unsupported: <reader>: …` cells

    @classmethod
    def python(cls) -> Path:
        from shotbench.backends import readers_env

        return readers_env.ensure()

    def count_s3fs(self, s3: Any, fs: Any) -> None:
        """Client-side request accounting for readers that go through s3fs (botocore events)."""
        self.meter = self.make_meter(s3)
        if self.meter is not None:
            from shotbench.backends.meters import attach_botocore

            attach_botocore(fs.s3, self.meter)

    def arrays(self, fh: Any, shot: str, name: str, scales: bool = True) -> list[Any]:
        """The signal's values, then (unless `scales` is False) its dimension scales' values."""
        return h5py_arrays(fh, shot, name, scales)

    def read_signal(self, fh: Any, shot: str, name: str) -> tuple[int, int]:
        try:
            out = self.arrays(fh, shot, name)
        except Exception as exc:
            raise translate(self.reader, exc) from exc
        return len(out), sum(int(a.nbytes) if a.size else 0 for a in out)

    def read_signal_crc(self, fh: Any, shot: str, name: str) -> tuple[int, int, int]:
        """The same CRC-32 as h5py's `read_signal_crc`, over the values this reader handed back."""
        from shotbench.hdf5.shotfile import arrays_crc

        try:
            out = self.arrays(fh, shot, name)
        except Exception as exc:
            raise translate(self.reader, exc) from exc
        return (len(out), *arrays_crc(out))


def h5py_arrays(fh: Any, shot: str, name: str, scales: bool = True) -> list[Any]:
    """What `shotbench.hdf5.shotfile.read_signal` reads from an h5py.File, as arrays."""
    dset = fh[signal_path(shot, name)]
    return [dset[()]] + ([scale[()] for dim in dset.dims for scale in dim.values()] if scales else [])


class Handle:
    """A reader's open file as a context manager (the worker opens files with `with`)."""

    def __init__(self, obj: Any, close: Any = None) -> None:
        self.obj = obj
        self._close = close

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._close is not None:
            self._close()

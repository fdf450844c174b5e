"""Reading one shot file the way the upstream harness did, whatever transport opened it.

Every backend (ROS3, fsspec, obstore, download, local) hands an `h5py.File` to these
functions inside a Dask worker, so the HDF5 work per task is identical and only the
byte transport differs between backends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # h5py is loaded by whoever opened the file; the signature check needs none
    import h5py

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
SHOTS_GROUP = "shots"
SIGNALS_GROUP = "signals"


def shot_ids(f: h5py.File) -> list[str]:
    """Shot ids stored in the file (one for the C-Mod single-shot layout)."""
    import h5py

    shots = f.get(SHOTS_GROUP)
    if not isinstance(shots, h5py.Group):
        return []
    return sorted(shots.keys())


def signal_names(f: h5py.File, shot: str) -> list[str]:
    """Signal dataset names of one shot, in the file's (alphabetical) link order."""
    import h5py

    signals = f.get(f"{SHOTS_GROUP}/{shot}/{SIGNALS_GROUP}")
    if not isinstance(signals, h5py.Group):
        return []
    return list(signals.keys())  # names only: opening each object would cost requests


def read_signal(f: h5py.File, shot: str, name: str) -> tuple[int, int]:
    """Read a signal and every dimension scale attached to it, all in full.

    Shared scales are read again for each signal that uses them, as the upstream harness
    did, so `num-dsets` and the bytes moved stay comparable with its CSVs.
    Returns (datasets read, payload bytes).
    """
    dset = f[f"{SHOTS_GROUP}/{shot}/{SIGNALS_GROUP}/{name}"]
    datasets = 1
    payload = _read_all(dset)
    for dim in dset.dims:
        for scale in dim.values():
            datasets += 1
            payload += _read_all(scale)
    return datasets, payload


def read_signal_crc(f: h5py.File, shot: str, name: str) -> tuple[int, int, int]:
    """`read_signal`, plus a CRC-32 of every value read (the signal, then its scales in order):
    compared with the same CRC from a local copy, it says whether the bytes were right."""
    dset = f[f"{SHOTS_GROUP}/{shot}/{SIGNALS_GROUP}/{name}"]
    objs = [dset] + [scale for dim in dset.dims for scale in dim.values()]
    payload, crc = arrays_crc(obj[()] for obj in objs if obj.shape is not None and obj.size)
    return len(objs), payload, crc


def arrays_crc(arrays: Any) -> tuple[int, int]:
    """(payload bytes, CRC-32) of arrays read in order: the same number whichever library read
    them, as long as it handed back the same values in the same dtype."""
    import zlib

    import numpy as np

    payload = crc = 0
    for a in arrays:
        values = np.ascontiguousarray(a)
        if not values.size:
            continue
        payload += int(values.nbytes)
        crc = zlib.crc32(values.view(np.uint8).reshape(-1).data, crc)
    return payload, crc


def _read_all(dset: h5py.Dataset) -> int:
    """Read the whole dataset into memory and return its in-memory size in bytes."""
    if dset.shape is None:  # null dataspace: nothing to read
        return 0
    return int(dset[()].nbytes) if dset.size else 0


def looks_like_hdf5(first_bytes: bytes) -> bool:
    """True when the HDF5 signature sits at 0 or at a user-block offset (512, 1024, 2048, ...).

    Lets a preflight check reject a non-HDF5 object from its first bytes, without libhdf5.
    """
    offset = 0
    while offset + len(HDF5_SIGNATURE) <= len(first_bytes):
        if first_bytes[offset : offset + len(HDF5_SIGNATURE)] == HDF5_SIGNATURE:
            return True
        offset = 512 if offset == 0 else offset * 2
    return False

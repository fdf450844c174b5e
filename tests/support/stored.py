"""Stored bytes of a shot file counted independently of `shotbench.hdf5.storage`: headers, chunks,
contiguous data, each once."""

from __future__ import annotations

import h5py
from h5py import h5d, h5o


def chunk_bytes(d: h5py.Dataset) -> int:
    """Every chunk's stored (compressed) bytes as read_direct_chunk returns them."""
    total = 0
    for sel in d.iter_chunks():
        _, raw = d.id.read_direct_chunk(tuple(s.start for s in sel))
        total += len(raw)
    return total


def _stored(d: h5py.Dataset) -> int:
    """Header plus data outside it, independently of hdf5/storage.py."""
    layout = d.id.get_create_plist().get_layout()
    data = 0 if layout == h5d.COMPACT else chunk_bytes(d) if d.chunks else d.dtype.itemsize * int(d.size)
    return int(h5o.get_info(d.id).hdr.space.total) + data


def expected_bytes(path, shot: str, signals: list[str]) -> int:
    """Superblock (its version byte read off the file) + root, /shots, /shots/<id>, signals headers
    + each dataset the signals touch, shared scales once."""
    version = path.read_bytes()[8]
    total = {0: 96, 1: 100, 2: 48, 3: 48}[version]
    with h5py.File(path) as f:
        for g in (f, f["shots"], f[f"shots/{shot}"], f[f"shots/{shot}/signals"]):
            total += int(h5o.get_info(g.id).hdr.space.total)
        seen: dict[str, int] = {}
        for name in signals:
            d = f[f"shots/{shot}/signals/{name}"]
            seen[d.name] = _stored(d)
            for dim in d.dims:
                for s in dim.values():
                    seen[s.name] = _stored(s)
        return total + sum(seen.values())

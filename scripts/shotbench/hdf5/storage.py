"""What reading a signal must touch in the file, in stored bytes, from the file's own index.

Amplification is bytes moved ÷ the bytes a read cannot avoid. Those are the signal's and its
dimension scales' stored data (each chunk as the chunk index records it, compressed; contiguous
data as its storage size; compact data lives in its object header) and the metadata a reader must
see on the way: the superblock and the object headers of every group and dataset on the path.
Chunk-index nodes, link heaps and the superblock extension are not counted, so the sum is a lower
bound of what any reader has to fetch, and amplification can never honestly fall below 1.

Reads metadata only (no dataset values), whatever transport opened the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # h5py is loaded by whoever opened the file
    import h5py

from shotbench.hdf5.shotfile import SHOTS_GROUP, SIGNALS_GROUP

# the fixed part of each superblock version (version 0: 56 bytes and the root group's 40-byte
# symbol table entry; version 1 adds 4; versions 2 and 3 are 48 bytes)
SUPERBLOCK_BYTES = {0: 96, 1: 100, 2: 48, 3: 48}


def header_bytes(obj: h5py.HLObject) -> int:
    """Bytes of an object's header (all its chunks: messages, attributes, compact data, gaps)."""
    from h5py import h5o

    return int(h5o.get_info(obj.id).hdr.space.total)


def data_bytes(dset: h5py.Dataset) -> int:
    """Stored bytes of a dataset's values outside its header: the sum of its chunks as the chunk
    index records them (compressed), the storage size of contiguous data, 0 for compact data."""
    from h5py import h5d

    layout = dset.id.get_create_plist().get_layout()
    if layout == h5d.COMPACT:
        return 0
    if layout == h5d.CHUNKED:
        dsid = dset.id
        return sum(int(dsid.get_chunk_info(i).size) for i in range(dsid.get_num_chunks()))
    return int(dset.id.get_storage_size())


def superblock_bytes(f: h5py.File) -> int:
    return SUPERBLOCK_BYTES.get(f.id.get_create_plist().get_version()[0], 48)


def file_metadata(f: h5py.File) -> int:
    """What any read of the file must see: the superblock, the root group's and /shots' headers."""
    return superblock_bytes(f) + header_bytes(f) + header_bytes(f[SHOTS_GROUP])


def shot_metadata(f: h5py.File, shot: str) -> int:
    """What any read of one shot must see: /shots/<shot> and its signals group's headers."""
    group = f[f"{SHOTS_GROUP}/{shot}"]
    return header_bytes(group) + header_bytes(group[SIGNALS_GROUP])


def signal_datasets(f: h5py.File, shot: str, name: str) -> dict[str, int]:
    """The datasets reading a signal touches (it and its dimension scales), by path: header plus
    stored data bytes of each. A scale shared by several signals has one path, so a task that
    reads them all counts it once."""
    dset = f[f"{SHOTS_GROUP}/{shot}/{SIGNALS_GROUP}/{name}"]
    out = {dset.name: header_bytes(dset) + data_bytes(dset)}
    for dim in dset.dims:
        for scale in dim.values():
            out[scale.name] = header_bytes(scale) + data_bytes(scale)
    return out

"""The ROS3 block cache of libhdf5 2.2, set and read through the libhdf5 that h5py loaded.

h5py does not wrap `H5Pset_fapl_ros3_block_caching`, so it is called with ctypes on the very
library h5py's extension modules are linked against (found in this process's memory map, opened
with RTLD_NOLOAD so a second copy can never be loaded by mistake). Declarations, from 2.2's
`H5FDros3.h`:

    herr_t H5Pset_fapl_ros3_block_caching(hid_t fapl_id, size_t block_size,
                                          size_t block_cache_size, bool lock_superblock);
    herr_t H5Pget_fapl_ros3_block_caching(hid_t fapl_id, size_t *block_size,
                                          size_t *block_cache_size, bool *lock_superblock);

The driver only uses the cache on files that are not paged; 0 for either size turns it off.
"""

from __future__ import annotations

import ctypes
import os
from functools import lru_cache
from typing import Any

from shotbench.units import MiB

# HDF5_ROS3_VFD_DEFAULT_BLOCK_SIZE and HDF5_ROS3_VFD_DEFAULT_BLOCK_CACHE_SIZE in H5FDros3.h:
# what the 2.2 driver uses when the FAPL sets nothing (H5FD__ros3_open).
DEFAULT_BLOCK_SIZE = 16 * MiB
DEFAULT_CACHE_SIZE = 128 * MiB
SET = "H5Pset_fapl_ros3_block_caching"
GET = "H5Pget_fapl_ros3_block_caching"


def loaded_libhdf5() -> str:
    """Path of the libhdf5 shared library mapped into this process (h5py imported first)."""
    import h5py  # noqa: F401 - maps libhdf5 into the process

    from shotbench.hdf5.library import mapped_libhdf5

    for path in mapped_libhdf5():
        return path
    raise RuntimeError("h5py is imported but no libhdf5 shared library is mapped into this process")


@lru_cache(maxsize=1)
def _lib() -> Any:
    return ctypes.CDLL(loaded_libhdf5(), mode=os.RTLD_NOLOAD | ctypes.RTLD_GLOBAL)


def available() -> bool:
    """True when the loaded libhdf5 has the 2.2 block-cache API."""
    try:
        return hasattr(_lib(), SET) and hasattr(_lib(), GET)
    except (OSError, RuntimeError):
        return False


def set_block_caching(fapl_id: int, block_size: int, cache_size: int, lock_superblock: bool = True) -> None:
    """Set the block cache on a FAPL (its `.id` from h5py); raises if libhdf5 refuses."""
    fn = getattr(_lib(), SET)
    fn.argtypes = [ctypes.c_int64, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_bool]
    fn.restype = ctypes.c_int
    if fn(int(fapl_id), int(block_size), int(cache_size), bool(lock_superblock)) < 0:
        raise RuntimeError(f"{SET}(block_size={block_size}, cache={cache_size}) failed")


def get_block_caching(fapl_id: int) -> tuple[int, int, bool]:
    """(block size, cache size, lock superblock) as libhdf5 reports them for a FAPL."""
    fn = getattr(_lib(), GET)
    fn.argtypes = [
        ctypes.c_int64,
        ctypes.POINTER(ctypes.c_size_t),
        ctypes.POINTER(ctypes.c_size_t),
        ctypes.POINTER(ctypes.c_bool),
    ]
    fn.restype = ctypes.c_int
    block, cache, lock = ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_bool()
    if fn(int(fapl_id), ctypes.byref(block), ctypes.byref(cache), ctypes.byref(lock)) < 0:
        raise RuntimeError(f"{GET} failed")
    return int(block.value), int(cache.value), bool(lock.value)


def apply(fapl_id: int, setting: int, block_size: int = DEFAULT_BLOCK_SIZE) -> None:
    """Apply one block-cache setting of the case matrix.

    `setting` -1 ("default") sets the driver's own defaults explicitly: the 2.2 getter reports
    a 64 MiB cache when nothing was set, although the driver then uses 128 MiB, so an explicit
    setting is the only way the read-back value is what the driver does. 0 turns it off.
    """
    if setting < 0:
        set_block_caching(fapl_id, DEFAULT_BLOCK_SIZE, DEFAULT_CACHE_SIZE, True)
    elif setting == 0:
        set_block_caching(fapl_id, 0, 0, True)
    else:
        set_block_caching(fapl_id, min(int(block_size), int(setting)), int(setting), True)

"""Which libhdf5 a process really loaded: one rule for recognising it among the mapped files.

The builds' check (does an environment's h5py load the libhdf5 of its build?) and the block-cache
setter (which needs the library's symbols through ctypes) both ask this question, the same way.
"""

from __future__ import annotations

import os


def is_libhdf5(path: str) -> bool:
    """libhdf5.so[.N] of a build, or a wheel's vendored libhdf5-<hash>.so[.N]; not libhdf5_hl."""
    name = os.path.basename(path)
    return name.startswith("libhdf5.so") or (name.startswith("libhdf5-") and ".so" in name)


def mapped_libhdf5() -> list[str]:
    """Paths of the libhdf5 shared libraries mapped into this process (import h5py first)."""
    found: set[str] = set()
    with open("/proc/self/maps") as fh:
        for line in fh:
            fields = line.split()
            if len(fields) >= 6 and is_libhdf5(fields[-1]):
                found.add(fields[-1])
    return sorted(found)

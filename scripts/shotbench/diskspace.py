"""Free-space checks before writing many bytes (synthetic files, downloads, local copies).

Running out of disk half-way left dozens of tracebacks and a crashed libhdf5; checking first
turns it into one sentence that says how much is needed where.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from shotbench.errors import UserError
from shotbench.units import MiB

HEADROOM = 64 * MiB  # never fill a disk to the last byte


def free_bytes(folder: Path) -> int:
    """Free bytes on the filesystem of `folder` (or of its nearest existing parent)."""
    folder = Path(folder).absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return shutil.disk_usage(folder).free


def require(folder: Path, needed: int, what: str, fix: str) -> None:
    """Raise UserError when writing `needed` more bytes into `folder` would fill its disk."""
    free = free_bytes(folder)
    if needed + HEADROOM > free:
        raise UserError(f"{what} needs {needed / 1e9:.2f} GB in {folder} but only {free / 1e9:.2f} GB is free; {fix}.")


def writable(folder: Path, what: str) -> None:
    """Fail before any work when results could not be written into `folder` (created if missing)."""
    import os

    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the {what} {folder} ({exc.strerror}); choose a writable folder.") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"the {what} {folder} is not writable; fix its permissions or choose another folder.")

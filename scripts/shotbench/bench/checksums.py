"""Bytes read are checked, not trusted: CRC-32s of what a task read against the local copy.

With faults injected (or `verify = true`), a backend that retries badly could hand h5py
wrong bytes and still look fast. Each worker row carries a CRC-32 per signal it read (raw
GETs: per byte range); here the same CRC is computed once from the local copy of the file
(untimed, in the orchestrator) and the row is marked `verified` yes or no. A mismatch fails
the task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

YES, NO = "yes", "no"
BYTES = "<bytes>"  # in place of a shot: the CRC is of a raw byte range, named "start:length"


def byte_range(start: int, length: int) -> str:
    return f"{int(start)}:{int(length)}"


def _range_crc(path: Path, what: str) -> int:
    import zlib

    start, length = (int(v) for v in what.split(":"))
    with open(path, "rb") as fh:
        fh.seek(start)
        return zlib.crc32(fh.read(length if length >= 0 else -1))


class Checksums:
    """Expected CRC-32 per (file, shot, signal), read from the local copies on first use."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.known: dict[tuple[str, str, str], int | None] = {}

    def expected(self, key: str, shot: str, signal: str) -> int | None:
        """The CRC of the local copy's signal, or None when there is no local copy to check against."""
        k = (key, shot, signal)
        if k not in self.known:
            path = Path(self.source.local_path(key)) if self.source.local_dir or self.source.kind == "local" else None
            if path is None or not path.is_file():
                self.known[k] = None
            elif shot == BYTES:
                self.known[k] = _range_crc(path, signal)
            else:
                import h5py

                from shotbench.hdf5.shotfile import read_signal_crc

                with h5py.File(path, "r") as fh:
                    self.known[k] = read_signal_crc(fh, shot, signal)[2]
        return self.known[k]

    def verdict(self, row: dict[str, Any]) -> tuple[str, str]:
        """(`yes`/`no`/"" when nothing could be checked, the first wrong signal's error text)."""
        checked = False
        for key, shot, signal, crc in row.get("crcs") or []:
            want = self.expected(key, shot, signal)
            if want is None:
                continue
            checked = True
            if int(crc) != want:
                what = f"bytes {signal}" if shot == BYTES else f"signal {signal}"
                return (
                    NO,
                    f"{key}: wrong bytes: {what} differs from the local copy (CRC-32 {int(crc):08x}, expected {want:08x})",
                )
        return (YES if checked and not row.get("error") else ""), ""

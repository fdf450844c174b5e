"""Bytes read are checked, not trusted: CRC-32s of what a task read against the local copy.

With faults injected (or `verify = true`), a backend that retries badly could hand h5py
wrong bytes and still look fast. Each worker row carries a CRC-32 per signal it read; here
the same CRC is computed once from the local copy of the file (untimed, in the orchestrator)
and the row is marked `verified` yes or no. A mismatch fails the task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

YES, NO = "yes", "no"


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
            else:
                import h5py

                from shotbench.read.shotfile import read_signal_crc

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
                return NO, f"{key}: wrong bytes: signal {signal} differs from the local copy (CRC-32 {int(crc):08x}, expected {want:08x})"
        return (YES if checked and not row.get("error") else ""), ""

"""The floor: the same shot files read by h5py from local disk."""

from __future__ import annotations

from typing import Any

from shotbench.backends.base import Backend


class LocalBackend(Backend):
    name = "local"
    needs_s3 = False
    via_endpoint = False
    description = "h5py on local copies of the same files (no network)"

    @classmethod
    def signs_with(cls, options: dict[str, Any]) -> str:
        return ""  # local copies: no request, no credentials

    def make_meter(self, s3: Any) -> None:
        """Local copies cost no requests: the client columns stay empty, not zero."""
        return None

    def open(self, key: str, size: int) -> Any:
        return self.h5file(self.source.local_path(key))

    def fetch(self, key: str, start: int, length: int) -> bytes:
        with open(self.source.local_path(key), "rb") as fh:
            fh.seek(start)
            return fh.read(length if length >= 0 else -1)

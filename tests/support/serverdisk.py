"""Damage an object where the embedded server keeps it: its bytes change on disk while its ETag and
stored checksum stay as they were, as bit rot would leave them. Only a checksum of the bytes tells."""

from __future__ import annotations

from typing import Any


def flip_stored_byte(server: Any, bucket: str, key: str, at: int) -> None:
    """XOR one byte, at offset `at`, of the object `key` in the server's data folder."""
    stored = server.root / bucket / key
    assert stored.is_file(), stored
    with open(stored, "r+b") as fh:
        fh.seek(at)
        byte = fh.read(1)
        fh.seek(at)
        fh.write(bytes([byte[0] ^ 0x01]))

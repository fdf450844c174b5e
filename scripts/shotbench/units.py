"""Binary sizes, written once: a MiB is 1,048,576 bytes wherever the package speaks of page
buffers, chunk caches, blocks, file sizes or read buffers ("MB" in upstream names is this too)."""

from __future__ import annotations

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

"""The transfer benchmark's source files: made once from the seed, written anew at each run's start."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from shotbench.transfer import cases
from shotbench.transfer.cases import Row, ensure_files
from shotbench.units import KiB


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_files_are_reused_unless_rewritten_and_a_rewrite_gives_the_same_bytes(tmp_path: Path) -> None:
    row = Row(3, 64 * KiB)
    first = ensure_files(row, tmp_path, seed=2)
    assert [_digest(f.path) for f in first] == [f.sha256 for f in first]
    written = [f.path.stat().st_mtime_ns for f in first]
    # a byte changed on disk, size kept: only a rewrite puts the seed's bytes back
    data = bytearray(first[0].path.read_bytes())
    data[100] ^= 0xFF
    first[0].path.write_bytes(bytes(data))
    changed = first[0].path.stat().st_mtime_ns

    reused = ensure_files(row, tmp_path, seed=2)
    assert reused == first and reused[0].path.stat().st_mtime_ns == changed
    assert [f.path.stat().st_mtime_ns for f in reused[1:]] == written[1:]

    with open(first[1].path, "rb") as reader:  # a run that has the file open while another rewrites it
        fresh = ensure_files(row, tmp_path, seed=2, rewrite=True)
        assert hashlib.sha256(reader.read()).hexdigest() == first[1].sha256  # whole, never half-written
        assert os.fstat(reader.fileno()).st_ino != fresh[1].path.stat().st_ino  # a new file took its name
    assert fresh == first  # same names, sizes and SHA-256: the seed's bytes
    assert [_digest(f.path) for f in fresh] == [f.sha256 for f in first]
    assert all(f.path.stat().st_mtime_ns > m for f, m in zip(fresh[1:], written[1:]))


def test_a_row_above_the_rewrite_limit_is_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    row = Row(2, 64 * KiB)
    first = ensure_files(row, tmp_path, seed=1)
    before = [f.path.stat().st_mtime_ns for f in first]
    monkeypatch.setattr(cases, "REWRITE_LIMIT", row.total - 1)
    again = ensure_files(row, tmp_path, seed=1, rewrite=True)
    assert [f.path.stat().st_mtime_ns for f in again] == before

"""Reading a shot file counts datasets and bytes the way the upstream harness did.

The benchmark's `num-dsets` and bytes columns come from `read_signal`, so its counts must
match what is in the file: each signal, plus every attached dimension scale, shared
scales counted again for every signal that uses them, whichever driver opened the file.
"""

from __future__ import annotations

import io
from pathlib import Path

import h5py
import numpy as np
import pytest

from shotbench.hdf5.shotfile import looks_like_hdf5, read_signal, shot_ids, signal_names
from shotbench.hdf5.synthesis import make_dataset


@pytest.fixture(scope="module")
def shot_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    (path,) = make_dataset(
        tmp_path_factory.mktemp("shots"), shots=1, signals=12, file_size=2_000_000,
        page_size=1_000_000, seed=0,
    )  # fmt: skip
    return path


def test_lists_the_shot_and_its_signals(shot_file: Path) -> None:
    with h5py.File(shot_file, "r") as f:
        assert shot_ids(f) == [shot_file.stem]
        names = signal_names(f, shot_file.stem)
        assert names == sorted(f[f"shots/{shot_file.stem}/signals"].keys())
        assert len(names) == 12
        assert signal_names(f, "1000000000") == []


def test_read_signal_counts_the_signal_and_each_attached_scale(shot_file: Path) -> None:
    shot = shot_file.stem
    with h5py.File(shot_file, "r") as f:
        signals = f[f"shots/{shot}/signals"]
        expected = {
            "pcs_s1start": 1,  # a scalar: no dimension scale
            "mag_ip": 2,  # a time trace
            "cmod_ts_te": 3,  # a profile: time and radius
        }
        for name, count in expected.items():
            dset = signals[name]
            payload = dset.nbytes + sum(s.nbytes for dim in dset.dims for s in dim.values())
            assert read_signal(f, shot, name) == (count, payload)


def test_shared_scales_are_read_again_for_every_signal(shot_file: Path) -> None:
    shot = shot_file.stem
    with h5py.File(shot_file, "r") as f:
        names = signal_names(f, shot)
        datasets = sum(read_signal(f, shot, n)[0] for n in names)
        stored = sum(isinstance(v, h5py.Dataset) for v in f[f"shots/{shot}"].values())
        assert datasets > len(names) + stored  # more reads than objects: scales re-read


def test_same_counts_through_other_drivers_and_the_page_buffer(shot_file: Path) -> None:
    """Backends that read through fsspec/obstore hand h5py a file-like object."""
    shot = shot_file.stem
    with h5py.File(shot_file, "r") as f:
        local = [read_signal(f, shot, n) for n in signal_names(f, shot)]
    with h5py.File(io.BytesIO(shot_file.read_bytes()), "r") as f:
        assert [read_signal(f, shot, n) for n in signal_names(f, shot)] == local
    with h5py.File(shot_file, "r", driver="core") as f:
        assert [read_signal(f, shot, n) for n in signal_names(f, shot)] == local
    with h5py.File(shot_file, "r", page_buf_size=2_000_000) as f:  # as the pb-size cases do
        assert [read_signal(f, shot, n) for n in signal_names(f, shot)] == local


def test_looks_like_hdf5_finds_the_signature_at_0_or_after_a_user_block(shot_file: Path, tmp_path: Path) -> None:
    assert looks_like_hdf5(shot_file.read_bytes()[:8])
    with_block = tmp_path / "ub.h5"
    with h5py.File(with_block, "w", userblock_size=1024) as f:
        f["x"] = np.arange(3)
    assert looks_like_hdf5(with_block.read_bytes()[:2048])
    assert not looks_like_hdf5(with_block.read_bytes()[:1024])  # signature not reached yet
    assert not looks_like_hdf5(b"PK\x03\x04" + bytes(4000))  # a zip file
    assert not looks_like_hdf5(b"<?xml version='1.0'?><Error>NoSuchKey</Error>")
    assert not looks_like_hdf5(b"")

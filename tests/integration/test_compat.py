"""The `compat` family: single-16MB's signals and sizes in the oldest format, which every reader reads.

The digests come from `shotbench.bench.bytecheck` (each reader in its own environment, against the
real embedded S3 server) and are compared with h5py's on the local copies.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from shotbench.backends.base import Source
from shotbench.bench import bytecheck
from shotbench.hdf5.synthesis import make_dataset
from shotbench.plan import families

READERS = ["fsspec-tuned", "remfile", "kerchunk", "pyfive", "h5coro"]


def test_compat_is_single_16mb_in_the_earliest_format(tmp_path: Path) -> None:
    fam = families.family(families.COMPAT, families.Sizes(single_shots=2))
    base = families.family(families.DEFAULT, families.Sizes(single_shots=2))
    assert (fam.file_size, fam.signals, fam.shots, fam.layout) == (
        base.file_size,
        base.signals,
        base.shots,
        base.layout,
    )
    assert (fam.paging, fam.libver, base.libver) == ("unpaged", "earliest", "v110")
    old = make_dataset(
        tmp_path / "c",
        shots=2,
        signals=12,
        file_size=2_000_000,
        page_size=1_000_000,
        paging="unpaged",
        libver="earliest",
    )
    new = make_dataset(tmp_path / "v", shots=2, signals=12, file_size=2_000_000, page_size=1_000_000, paging="unpaged")
    for a, b in zip(old, new):
        assert a.stat().st_size == 2_000_000
        assert a.read_bytes()[8] == 0 and b.read_bytes()[8] == 3  # superblock versions
        with h5py.File(a) as fa, h5py.File(b) as fb:  # same signals, same values
            names: list[str] = []
            fb.visit(names.append)
            for n in names:
                if isinstance(fb[n], h5py.Dataset):
                    np.testing.assert_array_equal(fa[n][()], fb[n][()])
    again = make_dataset(
        tmp_path / "c2",
        shots=2,
        signals=12,
        file_size=2_000_000,
        page_size=1_000_000,
        paging="unpaged",
        libver="earliest",
    )
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in old]  # same seed, same bytes


@pytest.fixture(scope="module")
def compat_files(s3_server, s3_bucket, tmp_path_factory):
    """Two compat files at the family's real size (16 MB, 61 signals), staged under compat/."""
    from shotbench.hdf5.shotfile import shot_ids, signal_names
    from shotbench.plan.matrix import ShotFile
    from shotbench.store.s3 import list_shot_files, parse_location
    from shotbench.store.staging import stage

    fam = families.family(families.COMPAT, families.Sizes(single_shots=2))
    folder = tmp_path_factory.mktemp("compat")
    make_dataset(
        folder,
        shots=fam.shots,
        signals=fam.signals,
        file_size=fam.file_size,
        page_size=fam.page_size,
        paging=fam.paging,
        libver=fam.libver,
    )
    cfg = s3_server.s3config()
    loc = parse_location(f"s3://{s3_bucket}/compat-test/")
    stage(folder, loc, cfg, jobs=2, progress=False)
    files = []
    for o in list_shot_files(loc, cfg):
        with h5py.File(folder / Path(o.key).name) as fh:
            shot = shot_ids(fh)[0]
            files.append(ShotFile(o.key, o.size, shot, tuple(signal_names(fh, shot))))
    return cfg, Source("s3", loc.bucket, loc.prefix, str(folder)), files


@pytest.mark.slow
def test_every_reader_returns_h5pys_bytes_on_compat(compat_files, tmp_path) -> None:
    """pyfive, remfile, kerchunk, fsspec-tuned: data and dimension scales, digest for digest.
    h5coro cannot decode the object references of DIMENSION_LIST: told to skip scales, its
    signal data matches; told to read them, it says `unsupported` and why."""
    cfg, source, files = compat_files
    options = {"kerchunk": {"index_dir": str(tmp_path / "index")}, "h5coro": {"scales": "skip"}}
    picked = {"compat": files[0], "compat-2": files[1]}
    verdicts = bytecheck.check(READERS, options, source, cfg, picked, say=lambda _: None)
    assert {(v.backend, v.family) for v in verdicts} == {(b, f) for b in READERS for f in picked}
    assert all(v.status == "ok" and v.signals > 0 for v in verdicts), [v for v in verdicts if v.status != "ok"]
    assert {v.backend for v in verdicts if not v.scales} == {"h5coro"}
    strict = bytecheck.check(["h5coro"], {}, source, cfg, picked, say=lambda _: None)
    assert {v.status for v in strict} == {"unsupported"}
    assert all("object references" in v.reason for v in strict), strict

"""`shotbench synth` writes files with the properties of the upstream C-Mod shot files.

Every check reads the real files back with h5py: page strategy and size, exact file size,
hierarchy and `shot` attributes, shared dimension scales, deflate level 4 above 8 kB,
and byte-identical output for the same seed.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from pathlib import Path

import h5py
import numpy as np
import pytest

from shotbench import cli
from shotbench.hdf5.synthesis import CATALOG, COMPRESS_ABOVE, make_dataset

SMALL = {"signals": 12, "file_size": 2_000_000, "page_size": 1_000_000}
SMALL_ARGS = ["--signals", "12", "--file-size", "2000000", "--page-size", "1000000"]


@pytest.fixture(scope="module")
def paged(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return make_dataset(tmp_path_factory.mktemp("paged"), shots=4, seed=0, **SMALL)


def _shot(f: h5py.File) -> tuple[str, h5py.Group, h5py.Group]:
    (shot,) = f["shots"].keys()
    return shot, f[f"shots/{shot}"], f[f"shots/{shot}/signals"]


def _datasets(f: h5py.File) -> list[h5py.Dataset]:
    found: list[h5py.Dataset] = []
    f.visititems(lambda _, obj: found.append(obj) if isinstance(obj, h5py.Dataset) else None)
    return found


def test_paged_files_use_page_aggregation_and_are_exactly_the_file_size(paged: list[Path]) -> None:
    assert len(paged) == 4
    for path in paged:
        assert path.stat().st_size == 2_000_000
        with h5py.File(path, "r") as f:
            fcpl = f.id.get_create_plist()
            assert fcpl.get_file_space_strategy()[0] == h5py.h5f.FSPACE_STRATEGY_PAGE
            assert fcpl.get_file_space_page_size() == 1_000_000


def test_default_sizes_match_upstream_16_mb_files_with_8_mb_pages(tmp_path: Path) -> None:
    (path,) = make_dataset(tmp_path, shots=1)
    assert path.stat().st_size == 16_000_000
    with h5py.File(path, "r") as f:
        assert f.id.get_create_plist().get_file_space_page_size() == 8_000_000
        _, _, signals = _shot(f)
        assert len(signals) == 61
        assert set(signals) == {s.name for s in CATALOG}


def test_one_shot_per_file_with_shot_attribute_on_every_signal(paged: list[Path]) -> None:
    for path in paged:
        with h5py.File(path, "r") as f:
            shot, _, signals = _shot(f)
            assert path.name == f"{shot}.h5"
            assert len(shot) == 10 and shot.startswith("1")  # C-Mod style 1YYMMDDNNN
            for name, dset in signals.items():
                assert name in {s.name for s in CATALOG}
                assert int(dset.attrs["shot"]) == int(shot)


def test_some_files_carry_fewer_signals(paged: list[Path]) -> None:
    counts = []
    for path in paged:
        with h5py.File(path, "r") as f:
            counts.append(len(_shot(f)[2]))
    assert max(counts) == 12
    assert min(counts) < 12


def test_dimension_scales_live_beside_signals_and_are_shared_not_duplicated(
    paged: list[Path],
) -> None:
    for path in paged:
        with h5py.File(path, "r") as f:
            shot, group, signals = _shot(f)
            users: Counter[str] = Counter()
            for dset in signals.values():
                for dim in dset.dims:
                    for scale in dim.values():
                        assert scale.parent.name == f"/shots/{shot}"
                        assert h5py.h5ds.is_scale(scale.id)
                        users[scale.name] += 1
            assert users, "no dimension scales attached"
            assert max(users.values()) >= 2, "no scale shared by several signals"
            scales = [d for d in group.values() if isinstance(d, h5py.Dataset)]
            digests = {hashlib.sha1(d[()].tobytes() + d.dtype.str.encode()).hexdigest() for d in scales}
            assert len(digests) == len(scales), "identical scales stored twice"
            assert set(users) == {d.name for d in scales}, "unattached scale stored"


def test_datasets_above_8_kb_are_deflated_at_level_4_and_small_ones_are_not_chunked(
    paged: list[Path],
) -> None:
    layouts = Counter()
    for path in paged:
        with h5py.File(path, "r") as f:
            for dset in _datasets(f):
                layout = dset.id.get_create_plist().get_layout()
                layouts[layout] += 1
                if dset.nbytes > COMPRESS_ABOVE:
                    assert dset.compression == "gzip" and dset.compression_opts == 4, dset.name
                    assert layout == h5py.h5d.CHUNKED
                else:
                    assert layout in (h5py.h5d.COMPACT, h5py.h5d.CONTIGUOUS), dset.name
    assert layouts[h5py.h5d.CHUNKED] and layouts[h5py.h5d.COMPACT] and layouts[h5py.h5d.CONTIGUOUS]


def test_signals_look_like_measurements(paged: list[Path]) -> None:
    """Varied 1-D traces, some 2-D profiles, and data that compresses like real signals."""
    with h5py.File(paged[0], "r") as f:
        _, _, signals = _shot(f)
        dsets = list(signals.values())
        traces = [d for d in dsets if d.ndim == 1 and d.dtype.kind == "f" and d.size > 10]
        assert len({d.shape[0] for d in traces}) >= 3
        assert {d.dtype for d in traces} >= {np.dtype("f4"), np.dtype("f8")}
        profiles = [d for d in dsets if d.ndim == 2]
        assert profiles and all(len(d.dims[0]) and len(d.dims[1]) for d in profiles)
        for dset in dsets:
            if dset.compression:
                ratio = dset.id.get_storage_size() / dset.nbytes
                assert 0.01 < ratio < 0.95, dset.name
        ip = signals["mag_ip"][()]
        assert np.ptp(ip) > 0 and np.count_nonzero(ip) > ip.size // 2


def test_same_seed_gives_byte_identical_files_and_another_seed_does_not(tmp_path: Path) -> None:
    first = make_dataset(tmp_path / "a", shots=2, seed=7, **SMALL)
    time.sleep(1.1)  # libhdf5 timestamps have one-second resolution
    again = make_dataset(tmp_path / "b", shots=2, seed=7, **SMALL)
    other = make_dataset(tmp_path / "c", shots=2, seed=8, **SMALL)
    assert [p.name for p in first] == [p.name for p in again]
    for a, b in zip(first, again):
        assert a.read_bytes() == b.read_bytes()
    assert {p.read_bytes() for p in first}.isdisjoint({p.read_bytes() for p in other})


def test_files_written_side_by_side_are_the_files_written_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    both = make_dataset(tmp_path / "a", shots=3, seed=7, **SMALL)  # one process per core
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    alone = make_dataset(tmp_path / "b", shots=3, seed=7, **SMALL)  # in this process, in turn
    assert [p.read_bytes() for p in both] == [p.read_bytes() for p in alone]


def test_default_layout_is_not_paged_but_same_size_and_same_data(paged: list[Path], tmp_path: Path) -> None:
    default = make_dataset(tmp_path, shots=4, seed=0, paging="unpaged", **SMALL)
    assert [p.name for p in default] == [p.name for p in paged]
    for d, p in zip(default, paged):
        assert d.stat().st_size == 2_000_000
        with h5py.File(d, "r") as fd, h5py.File(p, "r") as fp:
            strategy = fd.id.get_create_plist().get_file_space_strategy()[0]
            assert strategy != h5py.h5f.FSPACE_STRATEGY_PAGE
            _, _, sd = _shot(fd)
            _, _, sp = _shot(fp)
            assert list(sd) == list(sp)
            for name in sd:
                np.testing.assert_array_equal(sd[name][()], sp[name][()])


def test_rerun_keeps_good_files_and_replaces_broken_ones(tmp_path: Path) -> None:
    paths = make_dataset(tmp_path, shots=2, seed=3, **SMALL)
    before = [p.stat().st_mtime_ns for p in paths]
    paths[1].write_bytes(paths[1].read_bytes()[:1000])  # an interrupted copy
    again = make_dataset(tmp_path, shots=2, seed=3, **SMALL)
    assert again == paths
    assert paths[0].stat().st_mtime_ns == before[0]
    assert paths[1].stat().st_size == 2_000_000
    with h5py.File(paths[1], "r") as f:
        assert len(_shot(f)[2]) > 0
    assert not list(tmp_path.glob(".*partial"))


def test_cli_writes_files_and_prints_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "shots"
    argv = ["synth", "--out", str(out), "--shots", "2", "--signals", "6",
            "--file-size", "2000000", "--page-size", "1000000"]  # fmt: skip
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "2 shot files" in printed and "2 written" in printed
    assert sorted(p.stat().st_size for p in out.glob("*.h5")) == [2_000_000, 2_000_000]
    assert cli.main(argv) == 0
    assert "2 kept" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args",
    [
        ["--shots", "0"],
        ["--shots", "1", "--signals", "62"],
        ["--shots", "1", "--seed", "-1"],
        ["--shots", "1", "--file-size", "1500000", "--page-size", "1000000"],
        ["--shots", "1", "--file-size", "1000000", "--page-size", "1000000"],
    ],
)
def test_cli_rejects_bad_parameters_with_one_sentence(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert cli.main(["synth", "--out", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("shotbench: ") and err.count("\n") == 0
    assert not list(tmp_path.glob("*.h5"))


@pytest.mark.parametrize("layout", ["single", "shot"])
def test_earliest_libver_with_paging_is_refused_up_front(
    layout: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Page aggregation is a 1.10 format feature: h5py used to fail with a traceback about a
    "File space info message's version"."""
    out = tmp_path / "shots"
    assert cli.main(["synth", "--out", str(out), "--shots", "1", "--libver", "earliest", "--layout", layout]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--libver earliest" in err and "--paging unpaged" in err
    assert not out.exists()


@pytest.mark.parametrize("out", ["", " ", "~", "~/shots", "~/"])
def test_empty_or_unexpanded_tilde_out_is_refused(
    out: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """`--out ""` wrote into the current folder, and `--out=~/shots` (no ~ expansion after `=`)
    made a folder named `~` there, one `rm -rf ~` away from a disaster."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["synth", f"--out={out}", "--shots", "1", *SMALL_ARGS]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("shotbench: --out") and err.count("\n") == 0
    assert ("empty" in err) if not out.strip() else ("did not expand" in err and "full path" in err)
    assert not list(tmp_path.iterdir())


def test_partial_files_of_a_killed_run_are_swept_by_the_next(tmp_path: Path) -> None:
    out = tmp_path / "shots"
    out.mkdir()
    stale = [out / ".1160703001.h5.partial", out / ".shot2_sig12_shot.h5.partial"]
    for path in stale:
        path.write_bytes(b"half a file")
    assert cli.main(["synth", "--out", str(out), "--shots", "1", *SMALL_ARGS]) == 0
    assert not [p for p in stale if p.exists()]
    assert [p.name for p in out.iterdir()] == ["1160703001.h5"]


# ---------------------------------------------------------------------------------------
# File shapes where the drivers differ: larger files, 4 MB pages, no paging, many-shot files.


@pytest.mark.parametrize(
    ("file_size", "page_size", "paging"),
    [(16_000_000, 4_000_000, "paged"), (64_000_000, 8_000_000, "paged"), (32_000_000, 4_000_000, "unpaged")],
)
def test_larger_sizes_and_page_sizes_are_what_libhdf5_reads_back(
    tmp_path: Path, file_size: int, page_size: int, paging: str
) -> None:
    (path,) = make_dataset(tmp_path, shots=1, file_size=file_size, page_size=page_size, paging=paging)
    assert path.stat().st_size == file_size
    with h5py.File(path, "r") as f:
        fcpl = f.id.get_create_plist()
        paged = fcpl.get_file_space_strategy()[0] == h5py.h5f.FSPACE_STRATEGY_PAGE
        assert paged == (paging == "paged")
        if paged:
            assert fcpl.get_file_space_page_size() == page_size
        _, _, signals = _shot(f)
        assert len(signals) == 61
        stored = sum(d.id.get_storage_size() for d in _datasets(f))
    # the payload grows with the file: a good part of the raw-data space holds signal bytes
    assert stored > 0.35 * (file_size - page_size)


def _storage_order(path: Path) -> list[tuple[int, str, str]]:
    """(file offset, shot, signal) of every signal stored outside its object header, by offset."""
    found: list[tuple[int, str, str]] = []

    def visit(name: str, obj: object) -> None:
        if isinstance(obj, h5py.Dataset) and "/signals/" in name:
            offset = obj.id.get_offset()
            if offset is None and obj.chunks:
                offset = obj.id.get_chunk_info(0).byte_offset
            if offset is not None:
                parts = name.split("/")
                found.append((offset, parts[1], parts[3]))

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return sorted(found)


def _runs(order: list[tuple[int, str, str]], field: int) -> int:
    """Stretches of consecutive datasets on disk with the same shot (1) or signal (2)."""
    return 1 + sum(a[field] != b[field] for a, b in zip(order, order[1:]))


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("many")
    return {layout: make_dataset(out, shots=8, seed=0, layout=layout, **SMALL)[0] for layout in ("shot", "signal")}


def test_many_shot_files_store_data_shot_by_shot_or_signal_by_signal(many: dict[str, Path]) -> None:
    by_shot = _storage_order(many["shot"])
    by_signal = _storage_order(many["signal"])
    assert len(by_shot) == len(by_signal) > 40
    shots = len({o[1] for o in by_shot})
    names = len({o[2] for o in by_shot})
    # about one stretch per shot in shot layout (small datasets may fill the end of an earlier
    # page), one per signal in signal layout; the other key changes at almost every dataset
    assert _runs(by_shot, 1) <= 2 * shots and 3 * _runs(by_shot, 1) < _runs(by_signal, 1)
    assert _runs(by_signal, 2) <= names + 2 and 3 * _runs(by_signal, 2) < _runs(by_shot, 2)


def test_many_shot_file_holds_the_single_shot_files_shots_with_shared_scales(
    many: dict[str, Path], paged: list[Path]
) -> None:
    assert many["shot"].name == "shot8_sig12_shot.h5"
    with h5py.File(many["signal"], "r") as f:
        fcpl = f.id.get_create_plist()
        assert fcpl.get_file_space_strategy()[0] == h5py.h5f.FSPACE_STRATEGY_PAGE
        assert fcpl.get_file_space_page_size() == SMALL["page_size"]
        assert len(f["shots"]) == 8
        for single in paged:  # the first 4 of the same seed's shots, same data
            with h5py.File(single, "r") as g:
                shot, _, signals = _shot(g)
                packed = f[f"shots/{shot}/signals"]
                assert list(packed) == list(signals)
                for name in signals:
                    np.testing.assert_array_equal(packed[name][()], signals[name][()])
                    assert packed[name].attrs["shot"] == int(shot)
        shot = next(iter(f["shots"]))
        scales = [k for k in f[f"shots/{shot}"] if k.startswith("time_")]
        dsets = f[f"shots/{shot}/signals"].values()
        users = [d for d in dsets if d.ndim and d.dims[0].keys() == ["time"]]
        assert 0 < len(scales) < len(users)  # one time scale per distinct clock, shared by signals


def test_many_shot_files_are_byte_identical_for_the_same_seed(tmp_path: Path, many: dict[str, Path]) -> None:
    time.sleep(1.1)  # libhdf5 timestamps have one-second resolution
    (again,) = make_dataset(tmp_path, shots=8, seed=0, layout="signal", **SMALL)
    assert again.read_bytes() == many["signal"].read_bytes()
    assert again.read_bytes() != many["shot"].read_bytes()


def test_too_little_disk_space_is_refused_before_writing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for layout in ("single", "shot"):
        argv = ["synth", "--out", str(tmp_path / layout), "--shots", "1000000",
                "--file-size", "1000000000", "--layout", layout]  # fmt: skip
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "GB are free" in err and "--shots" in err
        assert not list(tmp_path.rglob("*.h5*")) and not list(tmp_path.rglob(".*partial"))


def _kernel_folder() -> Path:
    """/sys/kernel where it is sysfs (a filesystem of size 0 that takes no file); else the test is skipped."""
    folder = Path("/sys/kernel")
    try:
        if os.statvfs(folder).f_blocks == 0:
            return folder
    except OSError:
        pass
    pytest.skip("no sysfs at /sys/kernel here")


@pytest.mark.parametrize("below", ["", "shots"], ids=["the folder", "a folder inside"])
def test_out_on_the_kernels_filesystem_is_named_as_such_not_as_a_full_disk(
    below: str, capsys: pytest.CaptureFixture
) -> None:
    """`--out /sys/kernel` said the files needed 0.02 GB and only 0.00 GB were free; a folder inside
    it said "Operation not permitted"."""
    out = _kernel_folder() / below if below else _kernel_folder()
    assert cli.main(["synth", "--out", str(out), "--shots", "1", *SMALL_ARGS]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"shotbench: {out} cannot hold files: it is on a filesystem of size 0 that takes none (the kernel's, like "
        "/sys and /proc); choose a folder on a disk."
    ), err


def test_the_runs_folders_on_the_kernels_filesystem_are_named_as_such() -> None:
    """Every check of space before work (bench's run folder, its shot files, a report) says so too."""
    from shotbench.diskspace import require
    from shotbench.errors import UserError

    with pytest.raises(UserError, match="cannot hold files: it is on a filesystem of size 0"):
        require(_kernel_folder() / "runs", 1, "a run folder", "free space there or pass --runs-dir on another disk")

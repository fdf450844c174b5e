"""The alternative readers return h5py's exact bytes, or say `unsupported: …` for a file shape.

Each reader runs in its own environment (`.envs/readers`, made from uv.lock on first use)
against the real embedded S3 server; `shotbench.backends.readcheck` prints one digest per signal
(data and dimension scales) and h5py computes the same digests from the local files.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from shotbench.backends import registry
from shotbench.backends.base import Source
from shotbench.backends.readcheck import digest

READERS = ["fsspec-tuned", "remfile", "kerchunk", "pyfive", "h5coro"]


def h5py_digests(folder: Path, files: list[dict], scales: bool = True) -> dict[str, str]:
    import h5py

    from shotbench.backends.readers import h5py_arrays

    out = {}
    for f in files:
        with h5py.File(folder / Path(f["key"]).name, "r") as fh:
            for name in f["signals"]:
                out[f"{f['key']}/{name}"] = digest(h5py_arrays(fh, f["shot"], name, scales))
    return out


def inventory(folder: Path, objs) -> list[dict]:
    import h5py

    from shotbench.hdf5.shotfile import shot_ids, signal_names

    files = []
    for o in objs:
        with h5py.File(folder / Path(o.key).name, "r") as fh:
            shot = shot_ids(fh)[0]
            files.append({"key": o.key, "size": o.size, "shot": shot, "signals": signal_names(fh, shot)})
    return files


def readcheck(name: str, cfg, source: Source, files: list[dict], tmp_path: Path, scales: bool = True) -> dict[str, str]:
    from shotbench.backends.base import child_env

    python = registry.get(name).python()
    req = {
        "backend": name,
        "source": source.to_dict(),
        "files": files,
        "scales": scales,
        "options": {"index_dir": str(tmp_path / "index")} if name == "kerchunk" else {},
    }
    proc = subprocess.run(
        [str(python), "-m", "shotbench.backends.readcheck"],
        input=json.dumps(req),
        text=True,
        capture_output=True,
        env=child_env(cfg.env_vars()),
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_readers_are_registered_in_their_environment() -> None:
    assert set(READERS) <= set(registry.names())
    assert registry.get("pyfive").env_key() == "readers"
    assert registry.get("fsspec-tuned").env_key() == "main"  # only s3fs and h5py: no extra packages


@pytest.mark.slow
def test_the_readers_environment_is_compiled_so_no_worker_compiles_at_start() -> None:
    """A worker in the readers' environment imports Dask, xarray, zarr and virtualizarr: compiled
    when the environment is made, not by every worker started under PYTHONDONTWRITEBYTECODE."""
    from shotbench.backends import readers_env

    python = readers_env.ensure()
    site = next((python.parent.parent / "lib").glob("python3*/site-packages"))
    for module in (
        "distributed/worker",
        "xarray/core/dataset",
        "zarr/api/asynchronous",
        "virtualizarr/manifests/array",
    ):
        folder, _, stem = module.rpartition("/")
        assert list((site / folder / "__pycache__").glob(f"{stem}.cpython-*.pyc")), f"no bytecode of {module}"


def test_default_matrix_leaves_the_readers_out() -> None:
    """`make bench-ros3` without --backends must not install or run the readers."""
    from shotbench.plan.profiles import BenchConfig

    assert not set(READERS) & set(BenchConfig().backends)
    assert {"ros3-1.14", "fsspec", "local", "raw-get"} <= set(BenchConfig().backends)


@pytest.mark.slow
@pytest.mark.parametrize("name", READERS)
def test_reader_matches_h5py_or_says_unsupported(name, staged_shots, shot_dir, tmp_path) -> None:
    """Paged files written with libver v110 (superblock 3, version-4 chunk layouts)."""
    loc, cfg, objs = staged_shots
    files = inventory(shot_dir, objs)
    want = h5py_digests(shot_dir, files)
    got = readcheck(name, cfg, Source("s3", loc.bucket, loc.prefix, str(shot_dir)), files, tmp_path)
    assert set(got) == set(want)
    same = [k for k in want if got[k] == want[k]]
    other = {k: got[k] for k in want if got[k] != want[k]}
    assert all(v.startswith("unsupported: ") for v in other.values()), other
    if name in ("fsspec-tuned", "remfile", "kerchunk"):
        assert not other and len(same) == len(want)
    elif name == "pyfive":  # reads compact/contiguous signals, not v4 chunk indexes
        assert same and other and all("layout class 4" in v for v in other.values())
    else:  # h5coro
        assert not same and all("superblock version: 3" in v for v in other.values())
    if name == "kerchunk":
        metas = list((tmp_path / "index").glob("*.meta.json"))
        assert len(metas) == len(objs)
        meta = json.loads(metas[0].read_text())
        assert meta["index-time"] > 0 and meta["index-bytes"] > 1000


@pytest.fixture(scope="module")
def default_layout_shots(s3_server, s3_bucket, tmp_path_factory):
    """Two shot files in libhdf5's default (non-paged) layout, staged under their own prefix."""
    from shotbench.hdf5.synthesis import make_dataset
    from shotbench.store.s3 import list_shot_files, parse_location
    from shotbench.store.staging import stage

    folder = tmp_path_factory.mktemp("default-layout")
    make_dataset(folder, shots=2, signals=12, file_size=2_000_000, page_size=1_000_000, seed=1, paging="unpaged")
    cfg = s3_server.s3config()
    loc = parse_location(f"s3://{s3_bucket}/default-layout/")
    stage(folder, loc, cfg, jobs=2, progress=False)
    return loc, cfg, list_shot_files(loc, cfg), folder


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fsspec-tuned", "remfile", "kerchunk"])
def test_reader_reads_non_paged_files(name, default_layout_shots, tmp_path) -> None:
    """A file without paged aggregation: no page to align to, no page buffer libhdf5 accepts."""
    loc, cfg, objs, folder = default_layout_shots
    files = inventory(folder, objs)
    got = readcheck(name, cfg, Source("s3", loc.bucket, loc.prefix, str(folder)), files, tmp_path)
    assert got == h5py_digests(folder, files)


@pytest.mark.slow
def test_kerchunk_case_reports_index_columns_not_in_read_time(staged_shots, shot_dir, tmp_path) -> None:
    """A kerchunk case through the real driver and Dask workers: the index is built before the
    clock, each row carries its files' index build time and size, and the reads match h5py,
    down to the CRC-32 of every signal the rows carry when verifying."""
    from shotbench.backends.base import child_env
    from shotbench.bench.driverpool import DriverProc
    from shotbench.bench.inventory import inventory as list_files
    from shotbench.bench.protocol import Prepare, Run, Spec
    from shotbench.plan import matrix as plan

    cls = registry.get("kerchunk")
    loc, cfg, objs = staged_shots
    source = Source("s3", loc.bucket, loc.prefix, str(shot_dir))
    files = list_files(source, objs, cfg)
    drv = DriverProc("readers", cls.python(), child_env(cfg.env_vars()), tmp_path / "d.log", None)
    drv.start()
    try:
        spec = Spec("kerchunk", source, 0, 1 << 20, {"index_dir": str(tmp_path / "index")}, verify=True)
        drv.request(Prepare(1, spec))
        out = drv.request(Run(plan.signals_tasks(files, 1)))
    finally:
        drv.stop()
    rows = out.rows
    assert not [r["error"] for r in rows if r["error"]]
    import h5py

    from shotbench.hdf5.shotfile import read_signal

    expected = [0, 0]
    for f in files:
        with h5py.File(shot_dir / Path(f.key).name, "r") as fh:
            for n in f.signals:
                d, b = read_signal(fh, f.shot, n)
                expected[0] += d
                expected[1] += b
    assert expected[0] > 0 and [sum(r["dsets"] for r in rows), sum(r["bytes"] for r in rows)] == expected
    assert all(r["index-time"] > 0 and r["index-bytes"] > 1000 for r in rows)
    from shotbench.bench.checksums import Checksums

    checks = Checksums(source)
    assert all(r["crcs"] for r in rows) and {checks.verdict(r) for r in rows} == {("yes", "")}
    assert len(list((tmp_path / "index").glob("*.meta.json"))) == len(objs)
    # every index was written before the clock started: its build is not in the read time
    assert all(p.stat().st_mtime < out.started for p in (tmp_path / "index").glob("*.json"))


def rewrite_earliest(src: Path, dst: Path) -> None:
    """The same shot (data, chunking, deflate, dimension scales) written with libver earliest:
    superblock 0 and version-3 layouts, the shape h5coro and pyfive read."""
    import h5py

    with h5py.File(src, "r") as s, h5py.File(dst, "w", libver="earliest") as d:
        made = {}
        items: list = []
        s.visititems(lambda n, o: items.append(o) if isinstance(o, h5py.Dataset) else None)
        for obj in sorted(items, key=lambda o: not o.is_scale):  # scales first
            kw = (
                dict(chunks=obj.chunks, compression=obj.compression, compression_opts=obj.compression_opts)
                if obj.chunks
                else {}
            )
            new = d.create_dataset(obj.name, data=obj[()], track_times=False, **kw)
            for k, v in obj.attrs.items():
                if k not in ("DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME"):
                    new.attrs[k] = v
            if obj.is_scale:
                new.make_scale(h5py.h5ds.get_scale_name(obj.id).decode())
            made[obj.name] = new
        for obj in items:
            for i, dim in enumerate(obj.dims):
                for scale in dim.values():
                    made[obj.name].dims[i].attach_scale(made[scale.name])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["h5coro", "pyfive"])
def test_pure_python_readers_on_earliest_format(name, s3_server, s3_bucket, shot_dir, tmp_path) -> None:
    """On a shape they implement, h5coro and pyfive return h5py's exact bytes; what they cannot
    resolve (dimension-scale references) is an `unsupported` cell, never wrong data."""
    from shotbench.store.s3 import list_shot_files, parse_location
    from shotbench.store.staging import stage

    folder = tmp_path / "early"
    folder.mkdir()
    for src in sorted(shot_dir.glob("*.h5"))[:2]:
        rewrite_earliest(src, folder / src.name)
    cfg = s3_server.s3config()
    loc = parse_location(f"s3://{s3_bucket}/early-{name}/")
    stage(folder, loc, cfg, jobs=2, progress=False)
    objs = list_shot_files(loc, cfg)
    files = inventory(folder, objs)
    want = h5py_digests(folder, files)
    source = Source("s3", loc.bucket, loc.prefix, str(folder))
    # every signal's own data: byte for byte h5py's
    assert readcheck(name, cfg, source, files, tmp_path, scales=False) == h5py_digests(folder, files, scales=False)
    # with dimension scales: h5py's bytes, or `unsupported` for a scale the reader cannot resolve
    got = readcheck(name, cfg, source, files, tmp_path)
    other = [got[k] for k in want if got[k] != want[k]]
    assert all(v.startswith(f"unsupported: {name}: ") for v in other), other

"""Every backend reads the same shot files to the same datasets and bytes as local disk."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from shotbench.backends import registry
from shotbench.backends.base import ReadSettings, Source

MAIN_ENV = ["fsspec", "obstore", "download", "local"]


def read_everything(backend, objs) -> tuple[int, int]:
    from shotbench.hdf5.shotfile import read_signal, shot_ids, signal_names

    dsets = nbytes = 0
    for o in objs:
        with backend.open(o.key, o.size) as fh:
            shot = shot_ids(fh)[0]
            for name in signal_names(fh, shot):
                d, n = read_signal(fh, shot, name)
                dsets, nbytes = dsets + d, nbytes + n
    backend.end_task()
    return dsets, nbytes


@pytest.fixture(scope="module")
def expected(staged_shots, shot_dir):
    loc, cfg, objs = staged_shots
    local = registry.get("local")(Source("s3", loc.bucket, loc.prefix, str(shot_dir)), ReadSettings())
    local.setup(cfg)
    return read_everything(local, objs)


def test_registry_lists_every_backend() -> None:
    assert set(registry.names()) >= {
        "ros3-1.14",
        "ros3-2.0",
        "ros3-2.2",
        "fsspec",
        "obstore",
        "download",
        "local",
        "raw-get",
    }
    assert registry.get("raw-get").reads_hdf5 is False
    assert registry.get("ros3-2.0").env == "hdf5-2.0"
    assert registry.get("fsspec").python() == Path(sys.executable)


@pytest.mark.parametrize("name", MAIN_ENV)
@pytest.mark.parametrize("pb", [0, 2_000_000])
def test_main_env_backends_read_same_data(name, pb, staged_shots, shot_dir, expected) -> None:
    loc, cfg, objs = staged_shots
    b = registry.get(name)(Source("s3", loc.bucket, loc.prefix, str(shot_dir)), ReadSettings(page_buf_size=pb))
    b.setup(cfg)
    assert read_everything(b, objs) == expected
    assert expected[0] > len(objs)  # signals plus their dimension scales


def test_obstore_reader_block_cache_and_direct_agree(staged_shots, shot_dir) -> None:
    from shotbench.backends.obstore import ObstoreFile, make_store

    loc, cfg, objs = staged_shots
    store = make_store(cfg, loc.bucket)
    raw = Path(shot_dir, Path(objs[0].key).name).read_bytes()
    for block in (0, 4096, 1_000_000):
        f = ObstoreFile(store, objs[0].key, objs[0].size, block)
        f.seek(1234)
        assert f.read(10_000) == raw[1234:11234]
        f.seek(-5, os.SEEK_END)
        buf = bytearray(100)
        assert f.readinto(buf) == 5 and bytes(buf[:5]) == raw[-5:]


def test_raw_get_fetches_full_bytes(staged_shots, shot_dir) -> None:
    loc, cfg, objs = staged_shots
    b = registry.get("raw-get")(Source("s3", loc.bucket, loc.prefix, str(shot_dir)), ReadSettings())
    b.setup(cfg)
    o = objs[0]
    assert memoryview(b.fetch(o.key, 0, -1)).nbytes == o.size
    tail = memoryview(b.fetch(o.key, 10, 1000)).tobytes()
    assert tail == (shot_dir / Path(o.key).name).read_bytes()[10:1010]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ros3-1.14", "ros3-2.0", "ros3-2.0-zlibng", "ros3-2.2", "ros3-wheel"])
def test_ros3_backends_run_in_their_env(name, staged_shots, shot_dir, expected, tmp_path) -> None:
    """A ROS3 case through its environment's driver: real Dask workers, that env's libhdf5."""
    from shotbench.backends.base import child_env
    from shotbench.plan import matrix as plan
    from shotbench.read.drivers import DriverProc
    from shotbench.read.protocol import Prepare, Run, Spec

    cls = registry.get(name)
    try:
        python = cls.python()
    except Exception as exc:  # noqa: BLE001 - env_python raises a UserError naming `make envs`
        pytest.skip(f".envs/{cls.env} is not built ({exc}); `make test` builds it first")
    if not Path(python).exists():
        pytest.skip(f".envs/{cls.env} is not built; `make test` builds it first")
    loc, cfg, objs = staged_shots
    from shotbench.read.inventory import inventory

    source = Source("s3", loc.bucket, loc.prefix, str(shot_dir))
    files = inventory(source, objs, cfg)
    drv = DriverProc(name, python, child_env({**cfg.env_vars(), **cls.process_env(cfg)}), tmp_path / "d.log", None)
    drv.start()
    try:
        from shotbench.builds.specs import BUILDS
        from shotbench.builds.wheels import WHEELS

        spec = BUILDS.get(cls.env) or WHEELS[cls.env]
        assert drv.versions["hdf5"] == spec.hdf5_version  # the libhdf5 of that environment, exactly
        drv.request(Prepare(1, Spec(name, source, 0, 1 << 20)))
        out = drv.request(Run(plan.signals_tasks(files, 1)))
    finally:
        drv.stop()
    assert not [r["error"] for r in out.rows if r["error"]]
    assert (sum(r["dsets"] for r in out.rows), sum(r["bytes"] for r in out.rows)) == expected

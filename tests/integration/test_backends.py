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
    from shotbench.bench.driverpool import DriverProc
    from shotbench.bench.protocol import Prepare, Run, Spec
    from shotbench.plan import matrix as plan

    cls = registry.get(name)
    try:
        python = cls.python()
    except Exception as exc:  # noqa: BLE001 - env_python raises a UserError naming `make envs`
        pytest.skip(f".envs/{cls.env} is not built ({exc}); `make test` builds it first")
    if not Path(python).exists():
        pytest.skip(f".envs/{cls.env} is not built; `make test` builds it first")
    loc, cfg, objs = staged_shots
    from shotbench.bench.inventory import inventory

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


@pytest.mark.parametrize("write", ["stream", "whole"])
def test_download_copy_is_the_object_in_one_counted_get(write, staged_shots, shot_dir) -> None:
    """Streamed to disk as it arrives or written once whole, the copy is the object byte for byte,
    fetched by one GET whose bytes the meter counts; an object shorter than its listing is refused."""
    loc, cfg, objs = staged_shots
    o = objs[0]
    b = registry.get("download")(
        Source("s3", loc.bucket, loc.prefix, str(shot_dir)), ReadSettings(options={"write": write})
    )
    b.setup(cfg)
    path = b._download(o.key, o.size)
    assert Path(path).read_bytes() == (shot_dir / Path(o.key).name).read_bytes()
    counts = b.meter.drain()
    assert (counts.gets, counts.bytes) == (1, o.size)
    with pytest.raises(OSError, match=f"{o.size} bytes arrived where the object has {o.size + 1}"):
        b._download(o.key, o.size + 1)


def test_download_leaves_no_folder_behind(staged_shots, shot_dir, tmp_path) -> None:
    """The copies' folder goes with the backend, and with the process that held it when it exits
    (a Dask worker keeps its backend until then): none is left in the temporary directory."""
    import dataclasses
    import gc
    import json
    import subprocess

    loc, cfg, objs = staged_shots
    b = registry.get("download")(Source("s3", loc.bucket, loc.prefix, str(shot_dir)), ReadSettings())
    b.setup(cfg)
    with b.open(objs[0].key, objs[0].size):
        pass
    folder = Path(b._tmp)
    assert any(folder.iterdir())  # the copy, kept until the task ends
    del b
    gc.collect()
    assert not folder.exists()

    script = (
        "import json, sys\n"
        "from shotbench.backends import registry\n"
        "from shotbench.backends.base import ReadSettings, Source\n"
        "from shotbench.store.s3 import S3Config\n"
        "a = json.load(sys.stdin)\n"
        "b = registry.get('download')(Source('s3', a['bucket'], a['prefix'], a['dir']), ReadSettings())\n"
        "b.setup(S3Config(**a['cfg']))\n"
        "b.open(a['key'], a['size']).close()\n"
        "print(b._tmp)\n"  # exits with the backend alive and its copy in place
    )
    arg = {"bucket": loc.bucket, "prefix": loc.prefix, "dir": str(shot_dir), "key": objs[0].key, "size": objs[0].size}
    arg["cfg"] = dataclasses.asdict(cfg)  # on stdin: credentials never on a command line
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps(arg), env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).parent == tmp_path
    assert not list(tmp_path.glob("shotbench-dl-*"))


def test_a_twin_is_its_backend_under_another_name() -> None:
    """`download@b` measures `download` again as a configuration of its own (an A/A control)."""
    from shotbench.errors import UserError

    assert registry.get("download@b") is registry.get("download")
    assert registry.twin_of("ros3-2.0@aa") == "ros3-2.0" and registry.twin_of("ros3-2.0") == "ros3-2.0"
    with pytest.raises(UserError, match="names no twin"):
        registry.get("download@")
    with pytest.raises(UserError, match="unknown backend"):
        registry.get("nope@b")

"""The readers that skip libhdf5 on the read path return h5py's exact bytes through real
Dask workers against the real embedded S3 server, with their one-time index built before the clock.

The files are the `compat` family's shape (libver earliest, unpaged) and the default shape (v110,
paged): compact, contiguous and deflated chunked datasets, with shared dimension scales.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from shotbench.backends import registry
from shotbench.backends.base import Source

if TYPE_CHECKING:
    from shotbench.bench.driverpool import DriverProc

INDEXED = ["virtualizarr", "h5coro-hidefix", "icechunk-virtual"]


@pytest.fixture(scope="module")
def compat_shots(s3_server, s3_bucket, tmp_path_factory):
    """Two files shaped as the `compat` family (libver earliest, unpaged), staged under their own prefix."""
    from shotbench.hdf5.synthesis import make_dataset
    from shotbench.store.s3 import list_shot_files, parse_location
    from shotbench.store.staging import stage

    folder = tmp_path_factory.mktemp("compat-shape")
    make_dataset(
        folder,
        shots=2,
        signals=12,
        file_size=2_000_000,
        page_size=1_000_000,
        seed=5,
        paging="unpaged",
        libver="earliest",
    )
    cfg = s3_server.s3config()
    loc = parse_location(f"s3://{s3_bucket}/compat-shape/")
    stage(folder, loc, cfg, jobs=2, progress=False)
    return loc, cfg, list_shot_files(loc, cfg), folder


def test_indexed_readers_are_registered_opt_in() -> None:
    from shotbench.plan.profiles import BenchConfig

    assert set(INDEXED) <= set(registry.names())
    assert registry.get("virtualizarr").env_key() == registry.get("h5coro-hidefix").env_key() == "readers"
    assert registry.get("icechunk-virtual").env_key() == "icechunk"
    assert all(getattr(registry.get(n), "builds_index", False) for n in INDEXED)
    assert not set(INDEXED) & set(BenchConfig().backends)


def start_driver(name: str, env: dict[str, str], log: Path) -> DriverProc:
    """The driver of `name`'s environment, started as a run starts it."""
    from shotbench.backends.base import child_env
    from shotbench.bench.driverpool import DriverProc

    cls = registry.get(name)
    drv = DriverProc(cls.env_key(), cls.python(), child_env(env), log, None)
    drv.start()
    return drv


@pytest.fixture(scope="module")
def drivers(s3_server, tmp_path_factory) -> Iterator[Callable[[str], DriverProc]]:
    """One driver per environment for the whole module, as a run keeps one for all its cases: each
    test prepares its own case on it (a Prepare replaces the last one) and the warm 2-worker cluster
    is reused, so the module starts two drivers instead of one per test. Starting a cluster is not
    what these tests test."""
    logs = tmp_path_factory.mktemp("drivers")
    started: dict[str, DriverProc] = {}

    def driver_for(name: str) -> DriverProc:
        cls = registry.get(name)
        key = cls.env_key()
        if key not in started:
            env = {**s3_server.s3config().env_vars(), **cls.process_env(s3_server.s3config())}
            started[key] = start_driver(name, env, logs / f"{key}.log")
        return started[key]

    yield driver_for
    for drv in started.values():
        drv.stop()


def run_case(name: str, source: Source, files, tmp_path: Path, drv: DriverProc, workers: int = 2):
    """One verified `signals` case of `name` on the driver `drv` and its Dask workers."""
    from shotbench.bench.protocol import Prepare, Run, Spec
    from shotbench.plan import matrix as plan

    spec = Spec(name, source, 0, 1 << 20, {"index_dir": str(tmp_path / "index" / name)}, verify=True)
    drv.request(Prepare(workers, spec))
    return drv.request(Run(plan.signals_tasks(files, workers)))


def expected_totals(folder: Path, files) -> list[int]:
    import h5py

    from shotbench.hdf5.shotfile import read_signal

    total = [0, 0]
    for f in files:
        with h5py.File(folder / Path(f.key).name, "r") as fh:
            for n in f.signals:
                d, b = read_signal(fh, f.shot, n)
                total[0] += d
                total[1] += b
    return total


@pytest.mark.slow
@pytest.mark.server
@pytest.mark.parametrize("shape", ["compat", "default"])
@pytest.mark.parametrize("name", INDEXED)
def test_indexed_reader_through_dask_matches_h5py(
    name, shape, compat_shots, staged_shots, shot_dir, drivers, tmp_path
) -> None:
    """Every row error-free, datasets and bytes as h5py reads them, each signal's CRC-32 equal to
    the local copy's; the index was built before the clock and its one-time cost is recorded."""
    from shotbench.bench.checksums import Checksums
    from shotbench.bench.inventory import inventory as list_files

    if name == "icechunk-virtual":
        from shotbench.backends.readers_env import python_at_least
        from shotbench.errors import UserError

        try:
            python_at_least("3.12")  # Icechunk 2.x wheels need it; uv downloads no interpreter
        except UserError as exc:
            pytest.skip(f"icechunk-virtual needs Python >= 3.12 on the machine: {exc}")
    if shape == "compat":
        loc, cfg, objs, folder = compat_shots
    else:
        (loc, cfg, objs), folder = staged_shots, shot_dir
    source = Source("s3", loc.bucket, loc.prefix, str(folder))
    files = list_files(source, objs, cfg)
    out = run_case(name, source, files, tmp_path, drivers(name))
    rows = out.rows
    assert rows and not [r["error"] for r in rows if r["error"]]
    want = expected_totals(folder, files)
    assert want[0] > 0 and [sum(r["dsets"] for r in rows), sum(r["bytes"] for r in rows)] == want
    checks = Checksums(source)
    assert all(r["crcs"] for r in rows) and {checks.verdict(r) for r in rows} == {("yes", "")}
    assert all(r["index-time"] > 0 and r["index-bytes"] > 100 for r in rows)
    index = tmp_path / "index" / name
    metas = sorted(index.glob("*.meta.json"))
    assert len(metas) == len(objs)
    for m in metas:
        meta = json.loads(m.read_text())
        assert meta["index-gets"] >= 1 and 0 < meta["index-get-bytes"] <= max(o.size for o in objs)
    assert all(p.stat().st_mtime < out.started for p in index.iterdir())


def processes_naming(text: str) -> list[int]:
    """Live processes whose command line holds `text`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if text.encode() in cmdline and state != "Z":
            found.append(int(proc.name))
    return found


class _Gone(threading.Event):
    """Set, with the time, once no live process names the text (zombies count as ended)."""

    at = 0.0


def _when_none_left(text: str, every: float = 0.05) -> _Gone:
    """Watch, from a thread, for the moment the last live process naming `text` has ended."""
    gone = _Gone()

    def watch() -> None:
        deadline = time.monotonic() + 120
        while processes_naming(text) and time.monotonic() < deadline:
            time.sleep(every)
        gone.at = time.monotonic()
        gone.set()

    threading.Thread(target=watch, daemon=True).start()
    return gone


@pytest.mark.slow
@pytest.mark.server
def test_hsds_loads_linked_files_reads_them_through_dask_and_stops(compat_shots, tmp_path) -> None:
    """A real HSDS (one service node, one data node) on the embedded server: `--link` loads, reads
    through h5pyd in Dask workers with h5py's bytes, and after the block no HSDS process is left."""
    from shotbench.bench.checksums import Checksums
    from shotbench.bench.inventory import inventory as list_files
    from shotbench.store import hsds_service as service

    loc, cfg, objs, folder = compat_shots
    cls = registry.get("hsds")
    state = tmp_path / "hsds-state"
    source = Source("s3", loc.bucket, loc.prefix, str(folder))
    files = list_files(source, objs, cfg)
    with service.hsds_server(state, cfg, cls.python()) as info:
        sockets = json.loads((state / "hsds.json").read_text())["socket_dir"]
        assert len(processes_naming(Path(sockets).name)) == 2  # its service node and its data node
        assert info.password() not in (state / "hsds.out").read_text()
        drv = start_driver("hsds", {**cfg.env_vars(), **info.client_env()}, tmp_path / "hsds.log")
        try:
            out = run_case("hsds", source, files, tmp_path, drv)
        finally:
            drv.stop()
        gone = _when_none_left(Path(sockets).name)
    stopped = time.monotonic()
    # The stop returns as soon as both nodes have ended, not at the SIGKILL deadline: an unreaped
    # data node kept the group "alive" until service.STOP_TIMEOUT (10 s) every stop. How long HSDS
    # takes to end is its own (on SIGTERM its data node first finishes its writes to S3): under the
    # suite's load it once outlasted the 10 s, scanning a freshly linked domain, and the SIGKILL ended it.
    assert gone.wait(1) and -0.5 < stopped - gone.at < 1.0, (stopped, gone.at)
    assert processes_naming(Path(sockets).name) == [] and not Path(sockets).exists()
    assert service.status(state) is None
    rows = out.rows
    assert rows and not [r["error"] for r in rows if r["error"]]
    want = expected_totals(folder, files)
    assert [sum(r["dsets"] for r in rows), sum(r["bytes"] for r in rows)] == want
    checks = Checksums(source)
    assert {checks.verdict(r) for r in rows} == {("yes", "")}
    index = tmp_path / "index" / "hsds"
    metas = {m.name.removesuffix(".meta.json"): json.loads(m.read_text()) for m in index.glob("*.meta.json")}
    assert len(metas) == len(objs) and all(m["index-time"] > 0 for m in metas.values())
    for meta in metas.values():  # the load fetched the file's metadata over counted GETs
        assert meta["index-gets"] >= 1 and meta["index-bytes"] > 100


@pytest.mark.slow
@pytest.mark.server
@pytest.mark.parametrize(
    ("name", "feature", "reason"),
    [
        ("virtualizarr", "virtual", "virtualizarr: virtual layout of /shots/1/signals/vds"),
        ("h5coro-hidefix", "lzf", "h5coro-hidefix: filter [32000] of /shots/1/signals/lzf"),
        ("h5coro-hidefix", "virtual", "h5coro-hidefix: virtual layout of /shots/1/signals/vds"),
    ],
)
def test_indexed_reader_says_unsupported_with_the_reason(name, feature, reason, s3_server, s3_bucket, tmp_path) -> None:
    """A layout or filter the reader cannot read is an `unsupported: <reader>: <what>` cell for every
    signal of that file, never wrong bytes and never a crash."""
    import h5py
    import numpy as np

    from shotbench.backends.base import child_env
    from shotbench.store.s3 import list_shot_files, parse_location
    from shotbench.store.staging import stage

    folder = tmp_path / "odd"
    folder.mkdir()
    with h5py.File(folder / "1.h5", "w") as fh:
        sig = fh.create_group("shots/1/signals")
        sig["plain"] = np.arange(100, dtype="f4")
        if feature == "lzf":
            sig.create_dataset("lzf", data=np.arange(5000, dtype="f8"), chunks=(1000,), compression="lzf")
        else:
            layout = h5py.VirtualLayout(shape=(100,), dtype="f4")
            layout[:] = h5py.VirtualSource(".", "/shots/1/signals/plain", shape=(100,))
            sig.create_virtual_dataset("vds", layout)
    cfg = s3_server.s3config()
    loc = parse_location(f"s3://{s3_bucket}/odd-{name}-{feature}/")
    stage(folder, loc, cfg, jobs=1, progress=False)
    (obj,) = list_shot_files(loc, cfg)
    cls = registry.get(name)
    req = {
        "backend": name,
        "source": Source("s3", loc.bucket, loc.prefix, str(folder)).to_dict(),
        "files": [{"key": obj.key, "size": obj.size, "shot": "1", "signals": ["plain"]}],
        "options": {"index_dir": str(tmp_path / "index")},
    }
    import subprocess

    proc = subprocess.run(
        [str(cls.python()), "-m", "shotbench.backends.readcheck"],
        input=json.dumps(req),
        text=True,
        capture_output=True,
        env=child_env({**cfg.env_vars(), **cls.process_env(cfg)}),
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == {f"{obj.key}/plain": f"unsupported: {reason} ({obj.key})"}

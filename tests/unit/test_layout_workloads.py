"""The `layouts` workloads: many-shot files read in upstream's two orders, the partial read,
and gather-time; planned as pure functions, read for real with h5py from real files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from shotbench.backends.base import ReadSettings, Source
from shotbench.backends.local import LocalBackend
from shotbench.bench import worker
from shotbench.bench.inventory import inventory
from shotbench.bench.protocol import Spec
from shotbench.hdf5.synthesis import make_dataset
from shotbench.plan import matrix as plan
from shotbench.plan import profiles
from shotbench.plan.families import NAMES

SMALL = {"signals": 12, "file_size": 2_000_000, "page_size": 1_000_000}


@pytest.fixture(scope="module", autouse=True)
def private_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The inventory cache goes to a scratch state folder, not the checkout's."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SHOTBENCH_STATE", str(tmp_path_factory.mktemp("state")))
        yield


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[plan.ShotFile]]:
    """A real 6-shot file in signal layout and what the inventory pass finds in it."""
    path = make_dataset(tmp_path_factory.mktemp("many"), shots=6, seed=0, layout="signal", **SMALL)[0]
    obj = SimpleNamespace(key=str(path), size=path.stat().st_size, etag=None)
    return path, inventory(Source("local"), [obj], None, say=lambda _: None)


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> plan.ShotFile:
    path = make_dataset(tmp_path_factory.mktemp("single"), shots=1, seed=0, **SMALL)[0]
    obj = SimpleNamespace(key=str(path), size=path.stat().st_size, etag=None)
    (f,) = inventory(Source("local"), [obj], None, say=lambda _: None)
    return f


def _backend() -> LocalBackend:
    b = LocalBackend(Source("local"), ReadSettings())
    b.setup(None)
    return b


def test_inventory_lists_every_shot_of_a_many_shot_file(many: tuple[Path, list[plan.ShotFile]]) -> None:
    path, shots = many
    assert len(shots) == 6 and {f.key for f in shots} == {str(path)}
    assert plan.is_many_shot(shots) and all(len(f.signals) >= 10 for f in shots)


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_many_shot_orders_cover_every_object_once_split_across_workers(
    many: tuple[Path, list[plan.ShotFile]], workers: int
) -> None:
    _, shots = many
    for mode, expected in (("shots", sorted(f.shot for f in shots)), ("signals", plan.all_signals(shots))):
        tasks = plan.many_shot_tasks(mode, shots, workers, seed=0, trial=1)
        assert len(tasks) == workers and all(t.whole and not t.reopen for t in tasks)
        objs = [p.obj_id for t in tasks for p in t.parts]
        assert sorted(objs) == sorted(expected)  # every shot / signal exactly once
        reads = sorted((it.shot, it.signal) for t in tasks for p in t.parts for it in p.items)
        assert reads == sorted((f.shot, s) for f in shots for s in f.signals)
        assert tasks == plan.many_shot_tasks(mode, shots, workers, seed=0, trial=1)  # seeded
    by_signal = plan.many_shot_objects("signals", shots)
    assert all(len({it.shot for it in p.items}) == len(p.items) for p in by_signal)  # one signal, across shots


def test_a_many_shot_task_opens_the_file_once_and_reads_all_its_objects(many: tuple[Path, list[plan.ShotFile]]) -> None:
    _, shots = many
    for mode in ("shots", "signals"):
        (task,) = plan.many_shot_tasks(mode, shots, 1, seed=0, trial=1)
        (row,) = worker.execute(_backend(), task)
        assert row["error"] == "" and row["opens"] == 1
        assert row["objs"] == len(task.parts) and row["dsets"] > sum(len(f.signals) for f in shots)
        assert 0 < row["open"] < row["time"] and row["read"] == pytest.approx(row["time"] - row["open"])


def test_partial_read_opens_once_or_once_per_signal(single: plan.ShotFile) -> None:
    rows = {}
    for mode in plan.PARTIAL_MODES:
        (task,) = plan.partial_tasks(mode, single, 1, seed=0, trial=1, k=5)
        assert [p.obj_id for p in task.parts] == sorted(p.obj_id for p in task.parts)
        (rows[mode],) = worker.execute(_backend(), task)
    once, each = rows["partial-once"], rows["partial-each"]
    assert once["opens"] == 1 and each["opens"] == 5
    assert once["objs"] == each["objs"] == 5 and once["dsets"] == each["dsets"] and once["bytes"] == each["bytes"]
    assert not once["error"] and not each["error"]


def test_gather_time_lists_signal_datasets_of_the_file(many: tuple[Path, list[plan.ShotFile]], tmp_path: Path) -> None:
    path, _ = many
    spec = Spec("local", Source("local"), 0, 1 << 20)
    assert worker.gather_time(spec, str(path), path.stat().st_size) > 0
    import h5py

    empty = tmp_path / "empty.h5"
    with h5py.File(empty, "w") as f:
        f.create_dataset("x", data=[1, 2, 3])
    with pytest.raises(RuntimeError, match="no signal datasets"):
        worker.gather_time(spec, str(empty), empty.stat().st_size)


def test_layouts_profile_plans_every_family_with_fitting_page_buffers() -> None:
    cfg = profiles.load("layouts", overrides={"backends": ["ros3-2.0", "local", "raw-get"]})
    reads = {"ros3-2.0": True, "local": True, "raw-get": False}
    cases = plan.plan_cases(cfg.matrix(), cfg.seed, reads)
    fams = {c.family for c in cases}
    assert fams == set(NAMES)
    assert all(c.pb_size == 0 for c in cases if c.family == "single-big-unpaged")  # libhdf5 refuses a pb there
    assert not {c.mode for c in cases if c.family.startswith("many")} & set(plan.PARTIAL_MODES)
    assert {c.mode for c in cases if c.family == "single-16MB"} == set(plan.ALL_MODES)
    assert len({c.case_id for c in cases}) == len(cases)


def test_an_unknown_family_is_one_sentence() -> None:
    from shotbench.errors import UserError

    with pytest.raises(UserError, match="unknown file family 'many-zarr'; families are single-16MB"):
        profiles.load("layouts", overrides={"families": ["many-zarr"]})

"""bytes-needed is what a read cannot avoid, in stored bytes: on a synthetic shot file it equals
the chunks, contiguous data and headers counted here another way, each once per task, so
amplification (bytes moved ÷ bytes needed) is never below 1."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from h5py import h5d

from shotbench.backends.meters import case_columns
from shotbench.bench import inventory as runner
from shotbench.hdf5 import storage
from shotbench.hdf5.synthesis import make_shot_file
from shotbench.plan import matrix as plan
from support.stored import chunk_bytes as _chunk_bytes
from support.stored import expected_bytes as _expected


@pytest.fixture(scope="module")
def shot(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    path = tmp_path_factory.mktemp("needed") / "shot.h5"
    make_shot_file(path, 1160930001, signals=20, file_size=2_000_000, page_size=1_000_000)
    with h5py.File(path) as f:
        (sf,) = runner.describe(f, "shot.h5", path.stat().st_size, list(f["shots"]))
    return path, sf


def test_a_whole_shot_needs_its_stored_bytes_and_metadata_once(shot: tuple) -> None:
    path, sf = shot
    with h5py.File(path) as f:  # the synthetic family: compressed chunks, contiguous and compact data
        layouts = {f[f"shots/{sf.shot}/signals/{n}"].id.get_create_plist().get_layout() for n in sf.signals}
    assert layouts == {h5d.COMPACT, h5d.CONTIGUOUS, h5d.CHUNKED}
    needed = plan.needed_bytes(plan.shots_tasks(sf, 1), [sf])
    assert needed == _expected(path, sf.shot, list(sf.signals))
    # stored is compressed: below the payload the task hands back (what bytes-needed used to be)
    assert needed < sum(sf.weights) and needed < path.stat().st_size


def test_each_task_counts_its_own_reads_shared_scales_once(shot: tuple) -> None:
    path, sf = shot
    tasks = plan.shots_tasks(sf, 2)
    per_task = [_expected(path, sf.shot, [it.signal for p in t.parts for it in p.items]) for t in tasks]
    assert plan.needed_bytes(tasks, [sf]) == sum(per_task)
    # two tasks each open the file: more than one task needs, never less
    assert plan.needed_bytes(tasks, [sf]) > plan.needed_bytes(plan.shots_tasks(sf, 1), [sf])


def test_unknown_storage_gives_no_number() -> None:
    f = plan.ShotFile("k", 10, "1", ("a",))
    assert plan.needed_bytes(plan.shots_tasks(f, 1), [f]) is None


def test_case_columns_keep_the_payload_apart_and_divide_by_what_is_needed() -> None:
    raw = [
        {"bytes": 100, "client-gets": 2, "client-heads": 1, "client-bytes": 4000, "request-ms": [1.0, 3.0]},
        {"bytes": 300, "client-gets": 1, "client-heads": 0, "client-bytes": 6000, "request-ms": [2.0]},
    ]
    cols = case_columns(raw, needed=5000)
    assert cols["bytes-returned"] == 400 and cols["bytes-needed"] == 5000 and cols["amplification"] == 2.0
    assert case_columns([{"bytes": 5}], needed=7) == {"bytes-returned": 5, "bytes-needed": 7}  # local: no meter
    assert case_columns([{"bytes": 5, "client-gets": 1, "client-bytes": 9}])["amplification"] == ""


def test_storage_of_each_layout(tmp_path) -> None:
    with h5py.File(tmp_path / "x.h5", "w") as f:
        c = f.create_dataset("c", data=np.arange(10_000.0), chunks=(1000,), compression="gzip")
        n = f.create_dataset("n", data=np.arange(1000.0))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        k = f.create_dataset("k", data=np.arange(10.0), dcpl=dcpl)
        assert storage.data_bytes(c) == c.id.get_storage_size() == _chunk_bytes(c) < 80_000
        assert storage.data_bytes(n) == 8000
        assert storage.data_bytes(k) == 0 and storage.header_bytes(k) > 80  # compact values live in the header


def test_the_readme_example(tmp_path) -> None:
    """The README's worked example: two signals of 100,000 float32 (2 chunks of 200,000 bytes) sharing a
    100,000-value float64 time scale (4 chunks of 200,000 bytes), uncompressed: 1,600,000 data bytes."""
    path = tmp_path / "ex.h5"
    with h5py.File(path, "w", libver="latest") as f:
        t = f.create_dataset("shots/1/time", data=np.arange(100_000, dtype="f8"), chunks=(25_000,))
        t.make_scale("time")
        for name in ("a", "b"):
            d = f.create_dataset(f"shots/1/signals/{name}", data=np.zeros(100_000, "f4"), chunks=(50_000,))
            d.dims[0].attach_scale(t)
    with h5py.File(path) as f:
        (sf,) = runner.describe(f, "ex.h5", path.stat().st_size, ["1"])
        headers = sum(
            storage.header_bytes(o)
            for o in (
                f,
                f["shots"],
                f["shots/1"],
                f["shots/1/signals"],
                f["shots/1/time"],
                f["shots/1/signals/a"],
                f["shots/1/signals/b"],
            )
        )
    one, two = plan.needed_bytes(plan.shots_tasks(sf, 1), [sf]), plan.needed_bytes(plan.shots_tasks(sf, 2), [sf])
    assert one == 48 + headers + 1_600_000
    # two tasks, one signal each: the second opens the file too and reads the shared scale again
    assert two == one + sf.file_meta + sf.shot_meta + dict(sf.stored)["/shots/1/time"]
    assert sum(sf.weights) == 2_400_000  # bytes-returned: the scale counted once per signal
    assert one <= path.stat().st_size  # a whole-file GET moves at least this: amplification ≥ 1


# ------------------------------------------------------------------ slow: a real bench run

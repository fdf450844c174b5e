"""Effective settings and page-buffer statistics: read back from real files, labelled truthfully."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from shotbench.analyse import analysis
from shotbench.backends.base import ReadSettings, Source
from shotbench.backends.local import LocalBackend
from shotbench.errors import UserError
from shotbench.hdf5.effective import COLUMNS, PartReadback, hit_rate
from shotbench.hdf5.shotfile import read_signal, shot_ids, signal_names
from shotbench.plan import matrix as plan
from shotbench.plan import profiles
from shotbench.records.schema import WORKER_COLUMNS
from support.synthetic import synthetic_workers


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from shotbench.hdf5.synthesis import make_shot_file

    out = tmp_path_factory.mktemp("eff")
    return {
        "paged": make_shot_file(out / "paged.h5", 1160505001, signals=12, file_size=2_000_000, page_size=1_000_000),
        "flat": make_shot_file(
            out / "flat.h5", 1160505002, signals=12, file_size=2_000_000, page_size=1_000_000, paging="unpaged"
        ),
    }


def _read(path: Path, pb: int, signals: int = 3) -> dict:
    backend = LocalBackend(Source("local"), ReadSettings(pb))
    backend.setup(None)
    acc = PartReadback()
    with backend.open(str(path), 0) as fh:
        shot = shot_ids(fh)[0]
        for name in list(signal_names(fh, shot))[:signals]:
            read_signal(fh, shot, name)
        acc.add(*backend.read_back(fh))
    return acc.columns()


def test_page_buffer_on_a_paged_file_is_read_back_with_statistics(files) -> None:
    row = _read(files["paged"], 2_000_000)
    assert row["pb-effective"] == 2_000_000
    assert (row["file-space-strategy"], row["file-page-size"]) == ("page", 1_000_000)
    assert row["chunk-cache-effective"] == 1024 * 1024
    assert row["pb-meta-accesses"] > 0 and 0 <= row["pb-meta-hitrate"] <= 100
    assert row["pb-raw-accesses"] != "" and row["pb-meta-evicts"] == 0


def test_no_page_buffer_means_effective_zero_and_empty_statistics(files) -> None:
    for pb in (0, -1):
        row = _read(files["paged"], pb)
        assert row["pb-effective"] == 0
        assert all(row[c] == "" for c in COLUMNS if c.startswith("pb-") and c != "pb-effective")


def test_page_buffer_asked_on_an_unpaged_file_is_shown_as_not_given(files) -> None:
    row = _read(files["flat"], 2_000_000)
    assert row["file-space-strategy"] == "fsm-aggr"
    assert row["pb-effective"] == 0  # libhdf5 2.x drops it; the row says so
    label = analysis.effective_label({"pb-size": 2_000_000, **row, "hdf5-version": "2.0.0"})
    assert label == "page buffer off (asked 1.91 MiB; file not paged)"


def test_hit_rate_is_upstreams_formula() -> None:
    assert hit_rate(100, 45, 10) == 50.0
    assert hit_rate(5, 0, 5) == ""
    acc = PartReadback()
    acc.add({"pb-effective": 8}, ((10, 9, 1, 0, 0), (4, 1, 3, 2, 2)))
    acc.add({"pb-effective": 16}, ((10, 5, 5, 1, 0), (0, 0, 0, 0, 0)))
    row = acc.columns()
    assert row["pb-effective"] == "8|16"  # files that differ are shown, not averaged away
    assert (row["pb-meta-accesses"], row["pb-meta-hitrate"], row["pb-meta-evicts"]) == (20, 70.0, 1)
    assert (row["pb-raw-accesses"], row["pb-raw-hitrate"], row["pb-raw-evicts"]) == (4, 50.0, 2)


def test_new_columns_follow_the_existing_ones() -> None:
    assert tuple(WORKER_COLUMNS[:12]) == analysis.UPSTREAM_COLUMNS
    start = WORKER_COLUMNS.index(COLUMNS[0])
    assert start > WORKER_COLUMNS.index("error")
    assert WORKER_COLUMNS[start : start + len(COLUMNS)] == COLUMNS


@pytest.mark.parametrize(
    ("row", "label"),
    [
        ({"pb-size": 0, "pb-effective": "0"}, ""),
        ({"pb-size": 0, "pb-effective": "67108864", "file-space-strategy": "page"}, "page buffer 64 MiB (asked off)"),
        ({"pb-size": -1, "pb-effective": "64000000", "hdf5-version": "2.0.0"}, "page buffer 64 MB (2.x default)"),
        ({"pb-size": -1, "pb-effective": "0", "hdf5-version": "1.14.6"}, "page buffer off (1.14 default)"),
        ({"pb-size": 0, "pb-effective": "0", "block-cache-size": "0", "block-size": "0"}, "block cache off"),
        (
            {
                "pb-size": 0,
                "pb-effective": "0",
                "file-space-strategy": "fsm-aggr",
                "block-cache-size": "134217728",
                "block-size": "16777216",
            },
            "block cache 128 MiB in 16 MiB blocks",
        ),
        (
            {
                "pb-size": 0,
                "pb-effective": "0",
                "file-space-strategy": "page",
                "block-cache-size": "134217728",
                "block-size": "16777216",
            },
            "block cache 128 MiB in 16 MiB blocks (paged file: first block only)",
        ),
        ({"pb-size": 0}, ""),  # an older run: nothing read back, nothing claimed
    ],
)
def test_effective_label(row: dict, label: str) -> None:
    assert analysis.effective_label(row) == label


def _run_folder(tmp_path: Path, rows: list[dict]) -> Path:
    """A run folder with one case per row (workers and cases agree)."""
    from shotbench.records.schema import CASE_COLUMNS

    folder = tmp_path / "run"
    folder.mkdir()
    with open(folder / "workers.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, WORKER_COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in WORKER_COLUMNS})
    with open(folder / "cases.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, CASE_COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in CASE_COLUMNS})
    return folder


def test_series_and_summary_are_labelled_by_effective_settings(tmp_path: Path) -> None:
    base = {
        "worker#": 1,
        "obj-id": "s",
        "open+read-data-time": 1.0,
        "wrkr-num-objs": 1,
        "mean-obj-time": 1.0,
        "num-dsets": 2,
        "mean-dset-time": 0.5,
        "num-workers": 1,
        "obj-type": "shots",
        "tot-num-obj": 1,
        "trial": 1,
        "hdf5-version": "2.2.0",
        "file-space-strategy": "fsm-aggr",
    }
    rows = [
        {
            **base,
            "backend": "ros3-2.2",
            "case-id": "a",
            "pb-size": 0,
            "pb-effective": 0,
            "total-runtime": 2.0,
            "block-cache-size": 0,
            "block-size": 0,
        },
        {
            **base,
            "backend": "ros3-2.2",
            "case-id": "b",
            "pb-size": 0,
            "pb-effective": 0,
            "total-runtime": 1.0,
            "block-cache-size": 134217728,
            "block-size": 16777216,
        },
        {
            **base,
            "backend": "ros3-2.0",
            "case-id": "c",
            "pb-size": 0,
            "pb-effective": 67108864,
            "total-runtime": 3.0,
            "hdf5-version": "2.0.0",
        },
    ]
    folder = _run_folder(tmp_path, rows)
    table = analysis.summary([f"r={folder}"])
    assert list(table["series"]) == [
        "ros3-2.2 · block cache off",
        "ros3-2.2 · block cache 128 MiB in 16 MiB blocks",
        "ros3-2.0 · page buffer 64 MiB (asked off)",
    ]
    assert list(table["total-runtime"]) == [2.0, 1.0, 3.0]  # never merged into one median
    eff = analysis.effective_table(analysis.load([f"r={folder}"]))
    assert list(eff["block-cache-size"]) == ["0", "134217728", ""]
    assert list(eff["pb-effective"]) == ["0", "0", "67108864"]
    assert eff["pb-meta-hitrate"].isna().all()  # no page buffer ran, so no statistics are claimed


def test_old_runs_without_read_back_keep_their_series(tmp_path: Path) -> None:
    df = pd.DataFrame(synthetic_workers(40))
    ds = analysis.from_frames({"old": df})
    assert ds.series == ["old"]


def test_matrix_accepts_default_and_off() -> None:
    cfg = profiles.load(
        "quick",
        overrides={
            "page_buffers": ["0", "default", "268435456"],
            "block_caches": ["off", "default", "268435456"],
            "backends": ["ros3-2.2", "ros3-2.0"],
        },
    )
    m = cfg.matrix()
    assert m.page_buffers == [0, -1, 268435456] and m.block_caches == [0, -1, 268435456]
    cases = plan.plan_cases(m, 0, {"ros3-2.2": True, "ros3-2.0": True}, {"ros3-2.2": True, "ros3-2.0": False})
    ids = {c.case_id for c in cases}
    assert "t1-ros3-2.2-shots-w1-pbdefault-cc1048576-bc0" in ids
    assert "t1-ros3-2.2-shots-w1-pb0-cc1048576" in ids  # the default block cache keeps the old id
    assert {c.block_cache for c in cases if c.backend == "ros3-2.0"} == {None}
    assert len([c for c in cases if c.backend == "ros3-2.2"]) == 3 * len([c for c in cases if c.backend == "ros3-2.0"])
    with pytest.raises(UserError, match="not a size"):
        profiles.load("quick", overrides={"block_caches": ["lots"]})

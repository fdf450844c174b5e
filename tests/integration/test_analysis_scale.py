"""Summaries of a million rows stay fast, in memory and from CSV."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shotbench.analyse import analysis
from support.synthetic import synthetic_workers


@pytest.mark.slow
def test_million_rows_summary_in_memory_is_fast(tmp_path: Path) -> None:
    frame = synthetic_workers(1_000_000)
    t0 = time.perf_counter()
    ds = analysis.from_frames({"synthetic": frame})
    s = analysis.summary(ds)
    analysis.write_summary(s, tmp_path)
    elapsed = time.perf_counter() - t0
    assert s["count"].sum() == 1_000_000
    assert elapsed < 30, f"summary of 1M rows took {elapsed:.1f} s"


@pytest.mark.slow
def test_million_rows_summary_from_csv_under_30s(tmp_path: Path) -> None:
    block = synthetic_workers(10_000).to_csv(index=False)
    header, body = block.split("\n", 1)
    path = tmp_path / "million.csv"
    path.write_text(header + "\n" + body * 100)
    t0 = time.perf_counter()
    s = analysis.summary([f"million={path}"])
    analysis.write_summary(s, tmp_path)
    elapsed = time.perf_counter() - t0
    assert s["count"].sum() == 1_000_000
    assert elapsed < 30, f"load + summary of a 1M-row CSV took {elapsed:.1f} s"

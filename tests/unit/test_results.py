"""How a case's timing is summarized from its task rows."""

from __future__ import annotations

import pytest

from shotbench.records.schema import efficiency, harness_overhead, task_time_sum

# Two workers: worker 1 read two signals (0.3 s + 0.2 s), worker 2 one (0.4 s).
ROWS = [{"worker#": 1, "time": 0.3}, {"worker#": 1, "time": 0.2}, {"worker#": 2, "time": 0.4}]


def test_overhead_is_runtime_beyond_the_slowest_task() -> None:
    assert harness_overhead(ROWS, total=0.52) == pytest.approx(0.02)


def test_uneven_work_lowers_efficiency_but_is_not_overhead() -> None:
    assert efficiency(task_time_sum(ROWS), workers=2, total=0.5) == pytest.approx(0.9)
    assert harness_overhead(ROWS, total=0.5) == 0.0


def test_no_rows_means_the_whole_runtime_is_overhead() -> None:
    assert harness_overhead([], total=0.1) == pytest.approx(0.1)

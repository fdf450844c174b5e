"""The warm-cluster budget of `bench/driverpool.py`: one cluster per environment, grown to the
largest case, and idle worker processes kept within `max_live_workers`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shotbench.bench.driverpool import Drivers
from shotbench.bench.protocol import Close, Done


class Recorder:
    """Stands in for an environment's driver process: what the budget asked it to close."""

    def __init__(self, closed: list[tuple[str, int]], name: str) -> None:
        self.closed, self.name = closed, name

    def alive(self) -> bool:
        return True

    def request(self, req: Any, timeout: float | None = None) -> Done:
        assert isinstance(req, Close)
        self.closed.append((self.name, req.workers))
        return Done()


def _pool(tmp_path: Path, max_live: int, envs: str = "abc") -> tuple[Drivers, list[tuple[str, int]]]:
    closed: list[tuple[str, int]] = []
    pool = Drivers(None, tmp_path, None, max_live, [])
    pool.drivers = {e: Recorder(closed, e) for e in envs}  # type: ignore[misc]
    return pool, closed


def test_a_smaller_case_runs_on_the_grown_cluster_and_closes_nothing(tmp_path: Path) -> None:
    pool, closed = _pool(tmp_path, max_live=16)
    for env, w in [("a", 1), ("a", 2), ("b", 2), ("a", 1), ("b", 1)]:
        pool.reserve(env, w)
    assert dict(pool.live) == {"a": 2, "b": 2}  # 4 worker processes, where a cluster per count kept 6
    assert closed == []


def test_the_least_recently_used_other_cluster_is_closed_at_its_size(tmp_path: Path) -> None:
    pool, closed = _pool(tmp_path, max_live=4)
    pool.reserve("a", 1)
    pool.reserve("b", 2)
    pool.reserve("a", 2)  # grows a to 2: 4 live, within budget
    assert closed == [] and dict(pool.live) == {"b": 2, "a": 2}
    pool.reserve("c", 2)  # b is the least recently used
    assert closed == [("b", 2)] and list(pool.live) == ["a", "c"]


def test_a_cluster_beyond_the_budget_is_not_kept_around_a_small_case(tmp_path: Path) -> None:
    pool, closed = _pool(tmp_path, max_live=4)
    pool.reserve("a", 1)
    pool.reserve("b", 8)  # beyond the budget: every other cluster goes first
    assert closed == [("a", 1)] and dict(pool.live) == {"b": 8}
    pool.reserve("b", 1)  # 7 idle workers around one: closed and started at 1
    assert closed == [("a", 1), ("b", 8)] and dict(pool.live) == {"b": 1}


def test_on_a_users_cluster_nothing_is_closed(tmp_path: Path) -> None:
    pool, closed = _pool(tmp_path, max_live=2)
    pool.scheduler = "tcp://scheduler:8786"
    for env, w in [("a", 4), ("b", 4), ("a", 1)]:
        pool.reserve(env, w)
    assert closed == []

"""Before each timed transfer case the harness's own objects leave the garbage collector's sight,
so a full collection during the case walks only what the tool made."""

from __future__ import annotations

import gc

from shotbench.transfer.execute import settle


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector can free it


def test_settle_sets_the_existing_heap_aside_and_collects_its_garbage_first() -> None:
    kept = [[i] for i in range(50_000)]  # stands for the harness's long-lived objects
    garbage = _Node()
    probe = id(garbage)
    del garbage
    try:
        settle()
        assert gc.get_freeze_count() >= len(kept)
        walked = {id(o) for o in gc.get_objects()}  # what a full collection now visits
        assert not any(id(d) in walked for d in kept[::5_000])
        assert probe not in walked  # the cycle was collected before the freeze, not frozen alive
        made = [[j] for j in range(10)]  # a case's own objects stay in the collector's sight
        walked = {id(o) for o in gc.get_objects()}
        assert all(id(d) in walked for d in made)
    finally:
        gc.unfreeze()

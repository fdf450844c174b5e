"""Reading a ratio of two tools' times through the CPU they made the machine spend."""

from __future__ import annotations

import math

import pytest

from shotbench.transfer.cpubound import FULL, Spent, reading


def test_on_full_cores_the_extra_cpu_is_read_as_its_share_of_the_extra_time() -> None:
    # stage: 0.466 s, 0.202 + 0.597 CPU-s; awscrt 0.411 s, 0.158 + 0.578 (a published 1 MiB upload row)
    r = reading(Spent(0.466, 0.202, 0.597), Spent(0.411, 0.158, 0.578), cpus=2)
    assert r is not None and r.bound
    assert r.busy == pytest.approx(0.736 / (0.411 * 2))
    assert r.cpu_ratio == pytest.approx(0.799 / 0.736)
    assert r.client_extra == pytest.approx(0.044)
    assert r.share == pytest.approx((0.799 / 0.736 - 1) / (0.466 / 0.411 - 1))
    assert r.phrase() == (
        "the cores were 90 % busy, and stage's CPU (both sides) was 1.09× the other's: on full cores that alone "
        "accounts for 64 % of the +13 % it took"
    )


def test_cores_that_wait_bound_nothing() -> None:
    r = reading(Spent(0.30, 0.20, 0.10), Spent(0.25, 0.10, 0.10), cpus=2)  # 40 % busy: latency, not CPU
    assert r is not None and not r.bound and r.busy < FULL
    assert r.phrase() == "the cores were 40 % busy, too few for time to follow CPU"


def test_a_faster_stage_has_no_excess_to_share_out() -> None:
    r = reading(Spent(0.20, 0.10, 0.08), Spent(0.25, 0.30, 0.11), cpus=2)
    assert r is not None and r.time_ratio < 1 and r.share is None
    assert r.phrase().endswith("was 0.44× the other's")


@pytest.mark.parametrize(
    ("stage", "rival", "cpus"),
    [
        (Spent(0.4, 0.2, math.nan), Spent(0.4, 0.2, 0.5), 2),  # the server's CPU could not be read
        (Spent(0.4, 0.2, 0.5), Spent(0.4, 0.2, 0.5), 0),  # run.json names no CPUs
        (Spent(0.4, 0.2, 0.5), Spent(0.0, 0.0, 0.0), 2),  # nothing to divide by
    ],
)
def test_missing_figures_give_no_reading(stage: Spent, rival: Spent, cpus: int) -> None:
    assert reading(stage, rival, cpus) is None

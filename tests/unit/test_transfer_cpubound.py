"""Reading a ratio of two tools' times through the CPU they made the machine spend."""

from __future__ import annotations

import math

import pytest

from shotbench.transfer.cpubound import FULL, Cores, Spent, reading


def test_on_full_cores_the_extra_cpu_is_read_as_its_share_of_the_extra_time() -> None:
    # stage: 0.466 s, 0.202 + 0.597 CPU-s; awscrt 0.411 s, 0.158 + 0.578 (a published 1 MiB upload row)
    r = reading(Spent(0.466, 0.202, 0.597), Spent(0.411, 0.158, 0.578), Cores(2))
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
    r = reading(Spent(0.30, 0.20, 0.10), Spent(0.25, 0.10, 0.10), Cores(2))  # 40 % busy: latency, not CPU
    assert r is not None and not r.bound and r.busy < FULL
    assert r.phrase() == "the cores were 40 % busy, too few for time to follow CPU"


def test_a_faster_stage_has_no_excess_to_share_out() -> None:
    r = reading(Spent(0.20, 0.10, 0.08), Spent(0.25, 0.30, 0.11), Cores(2))
    assert r is not None and r.time_ratio < 1 and r.share is None
    assert r.phrase().endswith("was 0.44× the other's")


@pytest.mark.parametrize(
    ("stage", "rival", "cores"),
    [
        (Spent(0.4, 0.2, math.nan), Spent(0.4, 0.2, 0.5), Cores(2)),  # the server's CPU could not be read
        (Spent(0.4, 0.2, 0.5), Spent(0.4, 0.2, 0.5), Cores(0)),  # run.json names no CPUs
        (Spent(0.4, 0.2, 0.5), Spent(0.0, 0.0, 0.0), Cores(2)),  # nothing to divide by
        (Spent(0.4, 0.2, 0.5), Spent(0.4, 0.0, 0.0), Cores(1, 1)),  # apart: neither side spent anything
    ],
)
def test_missing_figures_give_no_reading(stage: Spent, rival: Spent, cores: Cores) -> None:
    assert reading(stage, rival, cores) is None


def test_apart_the_busier_side_is_read_alone() -> None:
    # the server on one core, the tools on the other: 0.50 s, the server spent 0.47 CPU-s (94 %)
    r = reading(Spent(0.55, 0.23, 0.48), Spent(0.50, 0.16, 0.47), Cores(1, 1))
    assert r is not None and r.side == "server" and r.bound
    assert r.busy == pytest.approx(0.94)
    assert r.cpu_ratio == pytest.approx(0.48 / 0.47)
    assert r.client_extra == pytest.approx(0.07)
    assert r.phrase().startswith("the server's cores were 94 % busy, and stage's CPU there was 1.02× the other's")
    # the tools' core the busier one: its CPU is what the ratio can follow
    t = reading(Spent(0.50, 0.45, 0.20), Spent(0.40, 0.36, 0.20), Cores(1, 1))
    assert t is not None and t.side == "tools" and t.cpu_ratio == pytest.approx(0.45 / 0.36)
    assert t.phrase().startswith("the tools' cores were 90 % busy")

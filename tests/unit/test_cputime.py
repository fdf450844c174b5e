"""Both sides' CPU clocks, read from the kernel: a case is charged what it burned on each."""

from __future__ import annotations

import os
import time

from shotbench import cputime

NO_SUCH_PID = 2**22 + 1  # above the largest pid Linux hands out


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_cpu_burned_between_two_samples_is_counted_on_the_side_that_burned_it() -> None:
    me = (os.getpid(),)  # this process stands in for the server: its clock moves with the burn
    before = cputime.sample(me)
    _burn(0.3)
    used = cputime.spent(before, cputime.sample(me))
    assert 0.25 <= used.client < 2.0, used
    assert used.server is not None and 0.25 <= used.server < 2.0, used
    idle = cputime.spent(before, before)
    assert (idle.client, idle.server) == (0.0, 0.0)


def test_without_a_server_or_with_one_gone_the_server_side_is_unknown_not_zero() -> None:
    assert cputime.sample().server is None
    gone = cputime.sample((os.getpid(), NO_SUCH_PID))
    assert gone.server is None
    assert cputime.spent(cputime.sample((os.getpid(),)), gone).server is None


def test_steal_is_the_eighth_field_of_all_cpus_in_seconds() -> None:
    """/proc/stat's first line sums every CPU: user nice system idle iowait irq softirq steal ..."""
    tick = os.sysconf("SC_CLK_TCK")
    stat = f"cpu  122383 83476 39451 105523 2284 0 2828 {3 * tick} 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"
    assert cputime.parse_steal(stat) == 3.0
    assert cputime.parse_steal("cpu  1 2 3 4 5 6 7\n") is None  # a kernel that does not count steal
    assert cputime.parse_steal("intr 1 2 3 4 5 6 7 8 9\n") is None
    here = cputime.sample()
    assert here.stolen is not None and here.stolen >= 0  # this kernel counts it (Linux ≥ 2.6.11)
    gone = cputime.CpuSample(here.client, None, None)
    assert cputime.spent(gone, here).stolen is None and cputime.spent(here, here).stolen == 0.0

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

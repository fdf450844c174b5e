"""Which CPUs a transfer run gives its embedded server and which its tools."""

from __future__ import annotations

import pytest

from shotbench.errors import UserError
from shotbench.transfer import results as analysis
from shotbench.transfer.cores import AUTO, SHARED, SPLIT, layout
from shotbench.transfer.cpubound import Cores


@pytest.mark.parametrize("asked", [AUTO, SPLIT])
def test_the_server_gets_the_upper_half_and_the_tools_the_rest(asked: str) -> None:
    two = layout(asked, {1, 0})
    assert (two.client, two.server, two.split) == ((0,), (1,), True)
    assert two.why.endswith("1 of 2 CPUs for it, the other 1 for the tools")
    odd = layout(asked, [4, 5, 6, 7, 9])  # this process may run on these five only
    assert (odd.client, odd.server) == ((4, 5, 6), (7, 9))
    assert odd.public() == {"client_cpus": [4, 5, 6], "server_cpus": [7, 9], "cpus_why": odd.why}


def test_shared_is_every_cpu_for_both() -> None:
    placed = layout(SHARED, [0, 1])
    assert (placed.client, placed.server, placed.split) == ((0, 1), (), False)
    assert placed.why.startswith("asked for (--server-cpus shared)")


def test_one_cpu_is_shared_when_left_to_the_run_and_a_split_of_it_is_refused() -> None:
    assert layout(AUTO, [3]).server == ()
    with pytest.raises(
        UserError, match=r"split needs at least 2 CPUs and this run may use 1; give --server-cpus shared"
    ):
        layout(SPLIT, [3])


def test_the_report_reads_the_cores_run_json_records() -> None:
    split = {"machine": {"cpus": 2}, "data": {"embedded": True, "server": {**layout(AUTO, [0, 1]).public()}}}
    assert analysis.machine_cores(split) == Cores(1, 1)
    assert analysis.server_cpus_text(split).startswith("The embedded server ran on CPU 1 and the tools on CPU 0: ")
    shared = {"machine": {"cpus": 2}, "data": {"embedded": True, "server": {**layout(SHARED, [0, 1]).public()}}}
    assert analysis.machine_cores(shared) == Cores(2)
    assert "shared every CPU with the tools: asked for" in analysis.server_cpus_text(shared)
    older = {"machine": {"cpus": 2}, "data": {"embedded": True, "server": {}}}
    assert analysis.machine_cores(older) == Cores(2)
    assert "runs from before the choice was recorded" in analysis.server_cpus_text(older)
    assert analysis.machine_cores({}) is None
    assert analysis.server_cpus_text({"data": {"embedded": False}}) == ""

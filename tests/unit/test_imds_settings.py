"""`shotbench imds` (`commands/instance_role.py`): settings that would never rotate are refused."""

from __future__ import annotations

import pytest

from shotbench import cli


@pytest.mark.parametrize("args", [["--period", "nan"], ["--period", "inf"], ["--period", "0"], ["--grace", "nan"]])
def test_imds_refuses_a_period_that_never_rotates(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """`--period nan` passed `period <= 0` and would never have rotated the role's credentials."""
    assert cli.main(["imds", *args]) == 2
    assert "--period is seconds above 0" in capsys.readouterr().err

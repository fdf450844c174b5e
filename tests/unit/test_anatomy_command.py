"""`shotbench anatomy` (`commands/anatomy.py`) checks its output folder before its opens, not after."""

from __future__ import annotations

from pathlib import Path

from support.incli import one_line


def test_an_output_that_cannot_be_a_folder_is_refused_before_any_open(tmp_path: Path) -> None:
    """`--out FILE` was made only after minutes of opens, and then failed."""
    (tmp_path / "afile").write_text("mine\n")
    code, line = one_line(["anatomy", "--out", str(tmp_path / "afile"), "--data", "s3://nobucket/x.h5"])
    assert code == 2 and "is a file; choose a folder" in line
    assert (tmp_path / "afile").read_text() == "mine\n"

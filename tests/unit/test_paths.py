"""Where shotbench keeps things (`paths.py`): a setting that cannot name a folder is one sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from shotbench import cli
from shotbench.paths import cache_dir, state_dir


@pytest.mark.parametrize(("variable", "folder"), [("SHOTBENCH_CACHE", cache_dir), ("SHOTBENCH_STATE", state_dir)])
def test_a_setting_that_names_a_file_is_refused_in_one_sentence(
    variable: str, folder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was a FileExistsError traceback from whichever command first needed the folder."""
    (tmp_path / "afile").write_text("")
    monkeypatch.setenv(variable, str(tmp_path / "afile"))
    assert cli.main(["server", "status"] if variable == "SHOTBENCH_STATE" else ["envs"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert f"{variable} is {tmp_path / 'afile'}" in err and "a file is there" in err and f"point {variable} at" in err


def test_a_missing_folder_is_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOTBENCH_CACHE", str(tmp_path / "a" / "b"))
    assert cache_dir() == tmp_path / "a" / "b" and (tmp_path / "a" / "b").is_dir()

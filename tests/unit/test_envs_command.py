"""`shotbench envs build --sha256` (`commands/envs.py`) is checked when the arguments are read:
`--sha256 zzz` was taken, and only after the download said the bytes differed from that "pin"."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.incli import one_line

URL = "http://127.0.0.1:9/hdf5-9.9.9.tar.gz"  # never asked: the refusal comes first


@pytest.mark.parametrize(
    "digest", ["zzz", "a" * 63, "a" * 65, "g" * 64, ""], ids=["zzz", "63", "65", "not hex", "empty"]
)
def test_a_sha256_that_is_not_64_hex_digits_is_refused(
    digest: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOTBENCH_CACHE", str(tmp_path / "cache"))
    code, line = one_line(["envs", "build", "--name", "mine", "--source", URL, f"--sha256={digest}"])
    assert code == 2 and "is not a sha256; give its 64 hex digits" in line, line
    assert not (tmp_path / "cache").exists()  # nothing fetched, no build folder made


def test_a_sha256_for_a_source_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder has no sha256 to check: the digest was taken as its cache key, unchecked."""
    monkeypatch.setenv("SHOTBENCH_CACHE", str(tmp_path / "cache"))
    code, line = one_line(["envs", "build", "--name", "mine", "--source", str(tmp_path), "--sha256", "A" * 64])
    assert code == 2 and line == (
        f"shotbench: --sha256 checks a tarball, and {tmp_path} is a source folder; drop --sha256 or give the tarball."
    ), line

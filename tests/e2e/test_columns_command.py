"""`shotbench columns` (`make columns`) in a checkout whose docs/ it cannot write: one sentence
naming the folder to make writable, not a PermissionError's traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.filerights import without_file_rights


@pytest.mark.parametrize("locked", ["docs/reference", "docs"])
def test_a_read_only_docs_folder_is_one_sentence(tmp_path: Path, locked: str) -> None:
    """`docs/reference` read-only (the page cannot be written), or `docs` read-only with no
    `reference` folder yet (it cannot be made). As root (CI) the command runs without the
    capabilities that let it write anyway."""
    root = tmp_path / "checkout"
    (root / "docs" / "reference" if locked == "docs/reference" else root / "docs").mkdir(parents=True)
    (root / locked).chmod(0o555)
    argv = without_file_rights([sys.executable, "-m", "shotbench", "columns"])
    try:
        done = subprocess.run(
            argv, env={**os.environ, "SHOTBENCH_ROOT": str(root)}, capture_output=True, text=True, timeout=60
        )
    finally:
        (root / locked).chmod(0o755)
    err = done.stderr.strip()
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in err and err.count("\n") == 0, err
    assert f"cannot write {root / 'docs' / 'reference' / 'columns.md'} (Permission denied)" in err
    assert f"make {root / locked} writable" in err
    assert not (root / "docs" / "reference" / "columns.md").exists()

"""`shotbench site --output DIR` writes DIR and nothing else: the pages it generates (the published
reports' list, the config reference) and Sphinx's own build tree went into the checkout's docs/."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.golden import ROOT

pytestmark = pytest.mark.slow  # one Sphinx build: about 5 s


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) below `root`."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


def test_site_output_writes_only_its_folder(tmp_path: Path) -> None:
    """A checkout as a fresh clone has it (no generated page under docs/); with --no-render no report
    is rendered into reports/ either."""
    checkout = tmp_path / "checkout"
    generated = shutil.ignore_patterns("_build", "published.md", "config.md")
    shutil.copytree(ROOT / "docs", checkout / "docs", ignore=generated)
    before = _tree(checkout)
    out = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "shotbench", "site", "--no-render", "--output", str(out)],
        env={**os.environ, "SHOTBENCH_ROOT": str(checkout)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert _tree(checkout) == before, sorted(set(_tree(checkout)) ^ set(before))
    assert (out / "index.html").is_file() and (out / "published.html").is_file()
    assert (out / "reference" / "config.html").is_file()
    assert not (out / ".doctrees").exists()  # Sphinx's pickles are its own, not pages to publish

"""Building the static site (reports/sitebuild.py): what it may replace."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_a_site_never_replaces_a_folder_it_did_not_build(tmp_path: Path) -> None:
    """`shotbench site --output ~/Documents` would have emptied the folder before building into it."""
    from shotbench.errors import UserError
    from shotbench.reports import sitebuild

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("keep me")
    with pytest.raises(UserError, match="no `shotbench site` wrote"):
        sitebuild.build(theirs, render_stale=False)
    assert (theirs / "notes.txt").read_text() == "keep me"
    with pytest.raises(UserError, match="is a file"):
        sitebuild.build(theirs / "notes.txt", render_stale=False)
    ours = tmp_path / "ours"  # a site built before, or an empty folder: checked, then built into
    ours.mkdir()
    (ours / sitebuild.SITE_MARK).write_text("")
    (tmp_path / "empty").mkdir()
    for out in (ours, tmp_path / "empty", tmp_path / "new"):
        sitebuild._check_output(out, tmp_path / "default")

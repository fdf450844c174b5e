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


def test_a_page_that_does_not_build_is_named_in_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sphinx reads a copy of docs/ in a temporary folder, gone when the build ends: its warnings
    name the page a user edits, and a warning that names no page is not the one shown."""
    import subprocess

    from shotbench.errors import UserError
    from shotbench.reports import sitebuild

    copy, source = tmp_path / "tmp" / "docs", tmp_path / "checkout" / "docs"
    warnings = f"WARNING: a domain without a page\n{copy}/guides/quickstart.md:115: WARNING: target not found\n"
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a[0], 1, "", warnings))
    with pytest.raises(UserError) as refused:
        sitebuild.sphinx(copy, tmp_path / "out", tmp_path / "tmp" / "doctrees", source)
    assert f"2 problem(s), first: {source}/guides/quickstart.md:115: WARNING: target not found" in str(refused.value)

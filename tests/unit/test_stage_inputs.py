"""`stage` and `ls` refuse a bad source in one sentence before any server is asked, and both see the
same files of a local folder (the bench reads what stage uploads)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shotbench.errors import UserError
from shotbench.store.s3 import list_shot_files, parse_location
from shotbench.store.staging import local_files
from support.incli import one_line, run_cli


@pytest.fixture(autouse=True)
def _no_s3(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No endpoint anywhere: a refusal that came from asking for one would say so instead."""
    for var in [v for v in os.environ if v.startswith(("AWS_", "S3_"))]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("SHOTBENCH_STATE", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)


def _folder(root: Path) -> Path:
    for name in ("a.h5", "sub/b.h5", "hid/.cache/h.h5", ".hidden/z.h5", ".dot.h5"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"\x89HDF\r\n\x1a\n" + name.encode())
    return root


@pytest.mark.parametrize("src", ["", "   "])
def test_stage_refuses_an_empty_source_instead_of_the_current_folder(tmp_path: Path, src: str) -> None:
    (tmp_path / "x.h5").write_bytes(b"x")  # what the current folder would have uploaded
    code, line = one_line(["stage", src, "s3://bucket/empty"])
    assert code == 2 and "source folder SRC is empty" in line and "give the folder" in line


@pytest.mark.parametrize("location", ["", "   "])
def test_ls_refuses_an_empty_location(location: str) -> None:
    code, line = one_line(["ls", location])
    assert code == 2 and "data location is empty" in line


def test_stage_refuses_an_s3_source(tmp_path: Path) -> None:
    code, line = one_line(["stage", "s3://bucket/shots", "s3://bucket/copy"])
    assert code == 2 and "is an S3 location" in line and "local folder" in line


def test_a_symlink_that_loops_is_named_as_such(tmp_path: Path) -> None:
    (tmp_path / "loopdir").symlink_to("loopdir")
    for argv in (["ls", "loopdir"], ["stage", "loopdir", "s3://bucket/x"]):
        code, line = one_line(argv)
        assert code == 2 and "loopdir is a symbolic link that loops" in line, argv
        assert "does not exist" not in line


def test_an_unknown_users_home_is_one_sentence() -> None:
    code, line = one_line(["ls", "~nosuchuser-shotbench/x"])
    assert code == 2 and "~nosuchuser-shotbench" in line and "no such user" in line and "full path" in line


def test_check_local_folder_names_a_dangling_link(tmp_path: Path) -> None:
    from shotbench.store.s3 import check_local_folder

    (tmp_path / "link").symlink_to(tmp_path / "gone")
    with pytest.raises(UserError, match="symbolic link to .*gone, which does not exist"):
        check_local_folder(tmp_path / "link")
    (tmp_path / "loop").symlink_to("loop")
    with pytest.raises(UserError, match="loop is a symbolic link that loops"):
        check_local_folder(tmp_path / "loop")


def test_ls_and_stage_see_the_same_files(tmp_path: Path) -> None:
    """Hidden files and everything inside hidden folders are left out by both."""
    src = _folder(tmp_path / "src")
    listed = [Path(o.key) for o in list_shot_files(parse_location(str(src)))]
    staged = local_files(src)
    assert listed == staged == [src / "a.h5", src / "sub" / "b.h5"]


def test_a_symlinked_folder_is_not_followed(tmp_path: Path) -> None:
    src = _folder(tmp_path / "src")
    (src / "sub" / "up").symlink_to(src)  # a loop, were links to folders followed
    assert local_files(src) == [src / "a.h5", src / "sub" / "b.h5"]


def test_stage_refuses_a_file_it_cannot_open_before_asking_for_a_server(tmp_path: Path) -> None:
    """A file that cannot be opened (a link that loops: no permissions needed to make one) stops
    stage before any upload, with one sentence naming it; no endpoint was needed to say so."""
    src = _folder(tmp_path / "src")
    (src / "sub" / "loop.h5").symlink_to("loop.h5")
    code, line = one_line(["stage", str(src), "s3://bucket/x"])
    assert code == 2 and f"cannot read {src / 'sub' / 'loop.h5'}" in line and "move it out of the folder" in line
    code, line = one_line(["ls", str(src)])
    assert code == 2 and "cannot read" in line and "loop.h5" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file; tests/integration/test_stage.py drops its rights")
def test_an_unreadable_file_or_folder_is_one_sentence(tmp_path: Path) -> None:
    src = _folder(tmp_path / "src")
    (src / "sub" / "b.h5").chmod(0)
    try:
        code, line = one_line(["stage", str(src), "s3://bucket/x"])
        assert code == 2 and "cannot read" in line and "b.h5 (Permission denied)" in line
    finally:
        (src / "sub" / "b.h5").chmod(0o644)
    (src / "sub").chmod(0o444)  # listable, not searchable
    try:
        code, line = one_line(["ls", str(src)])
        assert code == 2 and f"cannot read the folder {src / 'sub'} (Permission denied)" in line
    finally:
        (src / "sub").chmod(0o755)


@pytest.mark.parametrize("jobs", ["0", "-3", "1025", "99999999999999999999", "many"])
def test_stage_checks_jobs_when_reading_the_arguments(tmp_path: Path, jobs: str) -> None:
    code, err = run_cli(["stage", str(tmp_path / "nope"), "s3://bucket/x", "--jobs", jobs])
    assert code == 2 and "--jobs" in err and "1 to 1024" in err
    assert "staging" not in err and "does not exist" not in err and "S3 endpoint" not in err
    assert err.strip().count("\n") == 0 and "Traceback" not in err

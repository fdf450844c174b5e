"""A full disk is a user error: one sentence naming the folder and how much to free,
and nothing left half-written. Each test mounts a small tmpfs, a real filesystem that really
fills, as root may (CI runs as root); where mounting is impossible the test is skipped with
the reason.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shotbench.diskspace import DiskFull, atomic_write
from shotbench.store.s3 import without_s3_settings
from support.incli import completed
from support.runfolder import bench_proc, case_rows, wait_for_cases

FIXTURE_RUN = Path(__file__).parents[1] / "data" / "run-fixture"
SLOW_TOML = """backends = ["local"]
modes = ["signals", "shots"]
workers = [1, 2]
page_buffers = [0]
chunk_caches = [1048576, 2097152]
trials = 2
"""
SLOW_CASES = 2 * 2 * 2 * 2  # modes x workers x chunk caches x trials


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """`small_disk("8m")`: a fresh tmpfs of that size, unmounted after the test."""
    mounts: list[Path] = []

    def mount(size: str) -> Path:
        if os.geteuid() != 0:
            pytest.skip(f"mounting a tmpfs needs root (CI runs as root); this is uid {os.geteuid()}")
        where = tmp_path / f"disk{len(mounts)}"
        where.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
        mounts.append(where)
        return where

    yield mount
    for where in mounts:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def fill(disk: Path) -> Path:
    """Write a file on `disk` until the disk is full; returns it (delete it to free the space)."""
    filler = disk / "filler"
    block = b"\0" * (1 << 20)
    with open(filler, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(block)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    with open(filler, "ab", buffering=0) as fh:  # the last partial block, to the last byte
        try:
            while True:
                fh.write(b"\0" * 512)
        except OSError:
            pass
    return filler


def leftovers(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.name.endswith(".tmp"))


def one_sentence(stderr: str, *words: str) -> str:
    assert "Traceback" not in stderr, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("shotbench: ") and last.endswith("."), stderr
    for word in words:
        assert word in last, (word, last)
    return last


def test_a_whole_file_or_the_old_one(small_disk: Callable[[str], Path]) -> None:
    disk = small_disk("1m")
    target = disk / "report.html"
    atomic_write(target, "old\n")
    with pytest.raises(DiskFull) as caught:
        atomic_write(target, "x" * 3_000_000)
    assert str(disk) in str(caught.value) and "free at least" in str(caught.value)
    assert target.read_text() == "old\n"
    assert leftovers(disk) == []


def _env(tmp_path: Path) -> dict[str, str]:
    env = without_s3_settings()
    env["SHOTBENCH_STATE"] = str(tmp_path / "state")
    return env


def test_a_runs_folder_on_a_full_disk_is_refused_before_work(
    small_disk: Callable[[str], Path], shot_dir: Path, tmp_path: Path
) -> None:
    runs = small_disk("8m")
    done = completed(["bench", "--runs-dir", str(runs), "--data", str(shot_dir)], _env(tmp_path))
    assert done.returncode == 2, done.stderr
    one_sentence(done.stderr, str(runs), "needs", "free", "--runs-dir")
    assert list(runs.iterdir()) == []


@pytest.mark.slow
def test_a_disk_that_fills_mid_run_leaves_a_resumable_run(
    small_disk: Callable[[str], Path], shot_dir: Path, tmp_path: Path
) -> None:
    """The disk fills after three cases: one sentence naming the folder and the resume command,
    run.json at `interrupted` (never `running`), no .tmp and no torn row; once the space is
    freed, --resume finishes with every case exactly once."""
    runs = small_disk("100m")
    (tmp_path / "c.toml").write_text(SLOW_TOML)
    env = _env(tmp_path)
    proc = bench_proc(runs, ["--data", str(shot_dir), "--config", str(tmp_path / "c.toml")], env)
    try:
        run = wait_for_cases(runs, 3, timeout=300)
        assert run is not None, proc.stderr.read() if proc.poll() is not None and proc.stderr else "no 3 cases"
        filler = fill(runs)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, err
    one_sentence(err, "is full", str(run), "free at least", f"shotbench bench --resume {run}")
    assert json.loads((run / "run.json").read_text())["status"] == "interrupted"
    assert leftovers(run) == []
    for table in ("cases.csv", "workers.csv"):
        assert (run / table).read_bytes().endswith(b"\n")
    measured = len(case_rows(run))
    assert 3 <= measured < SLOW_CASES

    filler.unlink()
    again = subprocess.run(
        [sys.executable, "-m", "shotbench.cli", "bench", "--runs-dir", str(runs), "--resume", str(run)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    ids = [r["case-id"] for r in case_rows(run)]
    assert len(ids) == SLOW_CASES and len(set(ids)) == SLOW_CASES
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "complete"
    assert not (run / ".run.json.reserve").exists() and leftovers(run) == []


def test_report_output_onto_a_full_disk_is_refused_before_rendering(
    small_disk: Callable[[str], Path], tmp_path: Path
) -> None:
    out = small_disk("4m")
    start = time.monotonic()
    env = {**os.environ, "SHOTBENCH_STATE": str(tmp_path / "state")}
    done = completed(["report", "--run", str(FIXTURE_RUN), "--output", str(out / "r")], env)
    assert done.returncode == 2, done.stderr
    one_sentence(done.stderr, str(out / "r"), "needs", "--output")
    assert not list(out.rglob("*.html")) and leftovers(out) == []
    assert time.monotonic() - start < 60  # refused before the notebook ran


def test_a_report_page_that_does_not_fit_leaves_no_page(small_disk: Callable[[str], Path], tmp_path: Path) -> None:
    """The last step of every report, nbconvert's HTML, onto a disk that fills while it writes:
    the old page stays (here: none), never a truncated one that looks like a report."""
    import nbformat

    from shotbench.reports.render import export_html

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("x " * 1_000_000)])
    src = tmp_path / "r.ipynb"
    nbformat.write(nb, str(src))
    disk = small_disk("1m")
    with pytest.raises(DiskFull) as caught:
        export_html(src, disk / "r.html", hide_code=True, title="r")
    one_sentence(f"shotbench: {caught.value}", str(disk), "free at least", "render the report again")
    assert list(disk.iterdir()) == []


def test_fill_really_fills(small_disk: Callable[[str], Path]) -> None:
    """The fixture's premise: after `fill`, not one more byte fits."""
    disk = small_disk("2m")
    fill(disk)
    assert shutil.disk_usage(disk).free < 4096
    with pytest.raises(OSError) as caught, open(disk / "more", "wb", buffering=0) as fh:
        fh.write(b"\0" * 8192)
    assert caught.value.errno == errno.ENOSPC


def test_a_transfer_run_folder_on_a_full_disk_is_refused_before_work(
    small_disk: Callable[[str], Path], tmp_path: Path
) -> None:
    out = small_disk("8m")
    done = completed(["transfer", "--rows", "1x1MiB", "--networks", "none", "--out", str(out)], _env(tmp_path))
    assert done.returncode == 2, done.stderr
    one_sentence(done.stderr, str(out), "needs", "--out")
    assert list(out.iterdir()) == []


@pytest.mark.slow
@pytest.mark.notebook
def test_a_disk_that_fills_while_a_report_renders_leaves_no_report(
    small_disk: Callable[[str], Path], tmp_path: Path
) -> None:
    """The check before rendering passes; the disk fills once the notebook runs (another process
    writing): one sentence, and no HTML, notebook or .tmp left that could pass for a report."""
    import threading

    from shotbench.diskspace import HEADROOM
    from shotbench.reports.render import REPORT_BYTES

    disk = small_disk("100m")
    spare = shutil.disk_usage(disk).free - (HEADROOM + REPORT_BYTES + (1 << 20))
    with open(disk / "ballast", "wb") as fh:
        fh.write(b"\0" * spare)
    out = disk / "r"
    stop = threading.Event()

    def fill_when_rendering() -> None:
        while not stop.is_set():
            if list(out.glob("*.tmp")) or list(out.glob("*.partial.ipynb")):
                fill(disk)
                return
            time.sleep(0.05)

    filler = threading.Thread(target=fill_when_rendering, daemon=True)
    filler.start()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "shotbench.cli", "report", "--run", str(FIXTURE_RUN), "--output", str(out)],
            env={**os.environ, "SHOTBENCH_STATE": str(tmp_path / "state")},
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        stop.set()
        filler.join(timeout=10)
    assert done.returncode == 2, done.stdout + done.stderr
    one_sentence(done.stderr, "is full", str(out), "render the report again")
    assert not list(out.glob("*.html")) and not list(out.glob("*.ipynb")) and leftovers(disk) == []

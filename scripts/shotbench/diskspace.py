"""Free-space checks before writing many bytes (synthetic files, downloads, local copies),
and the one way the package writes a whole file.

Running out of disk half-way left dozens of tracebacks and a crashed libhdf5; checking first
turns it into one sentence that says how much is needed where. A disk that fills anyway (another
process, a log) is the same user error: `is_full` tells it apart and `full_disk` words it, and
`atomic_write` / `atomic_open` make a file whole or leave the old one (no truncated report,
CSV or run.json, and no `.tmp` beside it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from shotbench.errors import UserError
from shotbench.units import MiB

HEADROOM = 64 * MiB  # never fill a disk to the last byte


def nearest_existing(folder: Path) -> Path:
    """`folder`, or its nearest parent that exists: where its filesystem can be asked about."""
    folder = Path(folder).absolute()
    while not os.path.exists(folder) and folder != folder.parent:  # False, not an error, for a name too long
        folder = folder.parent
    return folder


def free_bytes(folder: Path) -> int:
    """Free bytes on the filesystem of `folder` (or of its nearest existing parent)."""
    return shutil.disk_usage(nearest_existing(folder)).free


def check_holds_files(folder: Path) -> None:
    """Refuse, in one sentence, a folder on a filesystem of size 0 that takes no new file: the
    kernel's own (sysfs, procfs), where 0 bytes free is no shortage of space and freeing some is no
    fix. A filesystem that reports no size but takes files (some FUSE mounts) passes."""
    import tempfile

    probe = nearest_existing(folder)
    try:
        if os.statvfs(probe).f_blocks != 0:
            return
    except OSError:
        return
    try:
        fd, name = tempfile.mkstemp(dir=probe, prefix=".shotbench-probe-")
    except OSError:
        raise UserError(
            f"{shorten(folder)} cannot hold files: it is on a filesystem of size 0 that takes none (the kernel's, "
            "like /sys and /proc); choose a folder on a disk."
        ) from None
    os.close(fd)
    os.unlink(name)


def require(folder: Path, needed: int, what: str, fix: str) -> None:
    """Raise UserError when writing `needed` more bytes into `folder` would fill its disk."""
    check_holds_files(folder)
    free = free_bytes(folder)
    if needed + HEADROOM > free:
        raise UserError(f"{what} needs {needed / 1e9:.2f} GB in {folder} but only {free / 1e9:.2f} GB is free; {fix}.")


def writable(folder: Path, what: str) -> None:
    """Fail before any work when results could not be written into `folder` (created if missing)."""
    import os

    folder = Path(folder)
    check_path(folder, what)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(
            f"cannot create the {what} {shorten(folder)} ({exc.strerror}); choose a writable folder."
        ) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"the {what} {folder} is not writable; fix its permissions or choose another folder.")


@contextlib.contextmanager
def output_folder(folder: Path, what: str) -> Iterator[Path]:
    """`writable(folder)` for a command's output, taken back when the command then fails: the
    folders this call created (never one that was there) are removed with what was written into
    them, so a refused command leaves no empty or half-written output behind. An interrupt keeps
    them (the CLI says results written so far are kept)."""
    folder = Path(folder)
    check_path(folder, what)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UserError(f"the {what} {shorten(folder)} is a file; choose a folder.")
    chain = [folder.absolute(), *folder.absolute().parents]
    # as real paths, so `new/../out` names the folders mkdir makes (new, out), never the one that exists
    real = {Path(os.path.realpath(p)) for p in chain}
    made = sorted((p for p in real if not os.path.lexists(p)), key=lambda p: len(p.parts))
    try:
        writable(folder, what)
        yield folder
    except Exception:
        for path in made:  # outermost first: its removal takes the ones inside with it
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
        raise


FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def is_full(exc: BaseException) -> bool:
    """True for a write refused because the disk (or the user's quota) is full."""
    return isinstance(exc, OSError) and exc.errno in FULL_ERRNOS


def size_text(n: float) -> str:
    """Bytes as a person reads them (1.5 MB, 64.0 MB, 2.10 GB)."""
    if n >= 1e9:
        return f"{n / 1e9:.2f} GB"
    if n >= 1e6:
        return f"{n / 1e6:.1f} MB"
    return f"{max(n, 0) / 1e3:.1f} kB"


class DiskFull(UserError):
    """A disk that filled during work: a user error, but a run it stops is interrupted, not failed."""


def full_disk(folder: Path, needed: int, then: str = "run the command again") -> DiskFull:
    """The sentence for a disk that filled: where, how much is free, how much to free, what next.

    `needed` is what the failed step wanted to write; HEADROOM is added because that is what
    every check before work asks for, so freeing this much lets the next attempt start."""
    folder = Path(folder).absolute()
    want = needed + HEADROOM
    return DiskFull(
        f"the disk holding {folder} is full ({size_text(free_bytes(folder))} free); free at least "
        f"{size_text(want)} there, then {then}."
    )


def _tmp(path: Path) -> Path:
    return path.with_name(path.name + ".tmp")


@contextlib.contextmanager
def atomic_open(path: Path, mode: str = "w", then: str = "run the command again", **kw: Any) -> Iterator[IO[Any]]:
    """A file opened for writing that appears at `path` only once it is whole (temporary file
    beside it, fsync, rename). Whatever goes wrong, the temporary file is removed and `path`
    keeps its old content; a full disk is raised as `full_disk`, naming `path`'s folder."""
    path = Path(path)
    tmp = _tmp(path)
    try:
        with open(tmp, mode, **kw) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        written = tmp.stat().st_size if tmp.exists() else 0
        with contextlib.suppress(OSError):
            tmp.unlink()
        if is_full(exc):
            raise full_disk(path.parent, written, then) from None
        raise


def atomic_write(path: Path, data: str | bytes, then: str = "run the command again") -> None:
    """`path` holding `data` whole, or unchanged (see `atomic_open`); text is written as UTF-8."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        with atomic_open(path, "wb", then) as fh:
            fh.write(payload)
    except DiskFull:
        raise full_disk(Path(path).parent, len(payload), then) from None  # the whole size, not what fitted


def shorten(path: object, keep: int = 60) -> str:
    """A path fit for one sentence: a 5,000-character one is cut in the middle, its length said."""
    text = str(path)
    return text if len(text) <= keep else f"{text[: keep // 2]}…{text[-keep // 2 :]} ({len(text)} characters)"


def check_path(path: Path | str, what: str) -> None:
    """Refuse a path the filesystem cannot hold (a name over NAME_MAX, the whole over PATH_MAX)
    in one sentence, before anything is opened or created there."""
    text = os.fspath(path)
    base = Path(text)
    probe = next((p for p in [base.absolute(), *base.absolute().parents] if os.path.exists(p)), Path("/"))
    try:
        name_max = os.pathconf(probe, "PC_NAME_MAX")
        path_max = os.pathconf(probe, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    longest = max((len(os.fsencode(part)) for part in base.parts), default=0)
    if longest > name_max:
        raise UserError(
            f"the {what} {shorten(text)} has a name of {longest} bytes, longer than the {name_max} this "
            "filesystem allows; give a shorter path."
        )
    if len(os.fsencode(str(base.absolute()))) >= path_max:
        raise UserError(
            f"the {what} {shorten(text)} is longer than the {path_max} bytes a path may have here; give a shorter path."
        )


def translate_os_error(exc: BaseException) -> UserError | None:
    """The CLI's last word on an OSError no command caught: a full disk or a path too long is the
    user's to fix (one sentence), anything else stays a bug with its traceback."""
    if not isinstance(exc, OSError):
        return None
    if is_full(exc):
        folder = Path(str(exc.filename)).parent if exc.filename else Path.cwd()
        return full_disk(folder, 0)
    if exc.errno == errno.ENAMETOOLONG:
        return UserError(f"the path {shorten(exc.filename or '')} is too long for the filesystem; give a shorter path.")
    return None

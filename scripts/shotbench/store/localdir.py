"""The files of a local folder of shot files: one walk shared by `ls`, `stage` and the benchmark,
so the bench reads exactly what stage uploads.

Hidden files and hidden folders are left out; symbolic links to folders are not followed (no loops,
no walking out of the folder), links to files count as the file. Every file is opened once here, so
a file or folder that cannot be read is one sentence naming it before anything uses the folder,
never a traceback halfway through an upload or a folder skipped in silence.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from shotbench.errors import UserError


def unreadable(path: Path | str, exc: OSError, what: str = "") -> UserError:
    """The sentence for a file or folder the OS refused to read (`exc`), naming the fix."""
    reason = exc.strerror or type(exc).__name__
    if exc.errno == errno.ELOOP:
        fix = "it is a symbolic link that loops; remove it or move it out of the folder"
    elif exc.errno == errno.ENOENT:
        fix = "it was removed while in use; run the command again"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        fix = "fix its permissions or move it out of the folder"
    else:
        fix = "check the disk, or move it out of the folder"
    return UserError(f"cannot read {what}{path} ({reason}); {fix}.")


def check_folder(path: Path) -> None:
    """An existing folder that can be listed, or one sentence saying what it is instead."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UserError(
                f"{path} is a symbolic link that loops (it leads back to itself); point it at the folder of "
                "shot files, or give that folder."
            ) from None
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            raise unreadable(path, exc, "the folder ") from None
        if os.path.islink(path):
            raise UserError(
                f"{path} is a symbolic link to {os.readlink(path)}, which does not exist; point it at the "
                "folder of shot files, or give that folder."
            ) from None
        raise UserError(
            f"the folder {path} does not exist; make shot files with `shotbench synth --out {path}`."
        ) from None
    if not stat.S_ISDIR(st.st_mode):
        raise UserError(f"{path} is a file, not a folder; give the folder that holds the shot files.")


def files_below(root: Path) -> list[tuple[Path, int]]:
    """(path, size) of every regular, non-hidden file below `root` outside hidden folders, sorted by
    path; each was opened for reading, so an unreadable one is refused (UserError) up front."""
    found: list[tuple[Path, int]] = []
    folders = [Path(root)]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError as exc:
            raise unreadable(folder, exc, "the folder ") from None
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(path)
                    continue
                if not entry.is_file():  # a FIFO, a socket, a device, a link to nothing
                    continue
                size = entry.stat().st_size
                os.close(os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK))
            except OSError as exc:
                if exc.errno == errno.EACCES and not os.access(folder, os.X_OK):
                    raise unreadable(folder, exc, "the folder ") from None  # listable, not searchable
                raise unreadable(path, exc) from None
            found.append((path, size))
    return sorted(found)

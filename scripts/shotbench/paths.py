"""Where things live: the checkout, the build/tool cache, run folders.

The cache sits outside the checkout so a fresh clone reuses builds; `SHOTBENCH_CACHE`
moves it (tests and CI use the default).
"""

from __future__ import annotations

import os
from pathlib import Path

from shotbench.errors import UserError, one_line


def repo_root() -> Path:
    """The checkout this package was installed from (editable install: scripts/shotbench)."""
    env = os.environ.get("SHOTBENCH_ROOT")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[2]


def cache_dir() -> Path:
    """Expensive, reusable artefacts: compiled tools, libhdf5 builds, source tarballs."""
    env = os.environ.get("SHOTBENCH_CACHE")
    return _folder(Path(env) if env else Path.home() / ".cache" / "shotbench", "SHOTBENCH_CACHE" if env else "HOME")


def _folder(path: Path, setting: str) -> Path:
    """`path`, made if missing; a path that cannot be a folder is one sentence naming the setting
    that chose it, not a traceback from the first command that needs it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = "a file is there" if path.exists() and not path.is_dir() else exc.strerror or str(exc)
        where = f"{setting} is {one_line(path)}" if setting else f"{one_line(path)}"
        fix = f"point {setting} at a folder you can write" if setting else "make it a writable folder"
        raise UserError(f"{where}, which cannot be a folder ({why}); {fix}.") from None
    if not os.access(path, os.W_OK | os.X_OK):  # its lock and its files are made inside it
        where = f"{setting} is {one_line(path)}" if setting else f"{one_line(path)}"
        fix = f"point {setting} at a folder you can write" if setting else "make it a writable folder"
        raise UserError(f"{where}, a folder this user cannot write; {fix}.")
    return path


def bin_dir() -> Path:
    """Compiled helper binaries (versitygw, toxiproxy, s5cmd), keyed by version in their names."""
    path = cache_dir() / "bin"
    path.mkdir(parents=True, exist_ok=True)
    return path


def state_dir() -> Path:
    """Runtime state of this checkout: the embedded server's pid file, data and credentials."""
    env = os.environ.get("SHOTBENCH_STATE")
    return _folder(Path(env) if env else repo_root() / ".shotbench", "SHOTBENCH_STATE" if env else "")


def envs_dir() -> Path:
    """One Python environment per libhdf5 build (h5py is compiled against one libhdf5)."""
    env = os.environ.get("SHOTBENCH_ENVS")
    return Path(env) if env else repo_root() / ".envs"


def data_dir() -> Path:
    return repo_root() / "data"


def runs_dir() -> Path:
    """Run folders of the reading benchmark (`shotbench bench`)."""
    return data_dir() / "runs"


def transfer_runs_dir() -> Path:
    """Run folders of the transfer benchmark (`shotbench transfer`)."""
    return data_dir() / "transfer"


def reports_dir() -> Path:
    return repo_root() / "reports"

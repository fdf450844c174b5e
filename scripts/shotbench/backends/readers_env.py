"""The environment of the alternative readers (`.envs/readers`), made from the lock on first use.

virtualizarr, kerchunk, zarr, h5coro, pyfive and remfile bring some twenty packages that
nobody running the ROS3 builds needs, so they sit in the `readers` dependency group of
pyproject.toml and are installed into an environment of their own the first time a run
selects one of these backends: `.venv` stays as `make venv` made it and `make bench-ros3`
never waits for them. The environment holds the project's locked dependencies plus the
group (PyPI's h5py), so Dask matches the orchestrator's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from shotbench import which
from shotbench.errors import UserError
from shotbench.paths import envs_dir, repo_root

NAME = "readers"
GROUP = "readers"
STAMP = ".shotbench-readers"


def env_path(name: str = NAME) -> Path:
    return envs_dir() / name


def python_at_least(version: str) -> str:
    """An interpreter of `version` or newer already on this machine (uv never downloads one): the
    environments whose libraries need a newer Python than the project's (Icechunk 2.x: 3.12).

    uv's own search first; then pythonX.Y on PATH and pyenv's versions, each asked to run, since a
    pyenv shim for a version that is installed but not selected exists and fails."""
    want = tuple(int(p) for p in version.split("."))
    proc = subprocess.run(
        [str(which.uv()), "python", "find", f">={version}"],
        env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    candidates = [proc.stdout.strip()] if proc.returncode == 0 and proc.stdout.strip() else []
    for minor in range(want[1], want[1] + 4):
        found = shutil.which(f"python{want[0]}.{minor}")
        if found:
            candidates.append(found)
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates += sorted(str(p) for p in pyenv.glob(f"{want[0]}.*/bin/python{want[0]}"))
    for exe in candidates:
        check = subprocess.run(
            [exe, "-c", f"import sys; sys.exit(sys.version_info[:2] < {want})"],
            capture_output=True,
            timeout=60,
            check=False,
        )
        if check.returncode == 0:
            return exe
    raise UserError(
        f"no Python >= {version} on this machine; install one (e.g. `apt-get install python{version}`) and retry."
    )


# Bytecode is compiled when the environment is made: a reader's worker imports xarray, zarr and
# virtualizarr (and Dask), and one started under PYTHONDONTWRITEBYTECODE, or on a read-only
# environment, compiled them from source each time: 2.4 CPU-s to import them, 0.8 compiled.
# The method is part of the stamp, so an environment made without it is made again once.
BYTECODE = "compiled"


def _lock_digest() -> str:
    root = repo_root()
    h = hashlib.sha256(BYTECODE.encode())
    for name in ("uv.lock", "pyproject.toml"):
        path = root / name
        if path.exists():
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def ensure(name: str = NAME, group: str = GROUP, min_python: str = "") -> Path:
    """The interpreter of `.envs/<name>` (the project plus dependency group `group`), synced from
    uv.lock when missing or out of date; `min_python`: made with such an interpreter."""
    path = env_path(name)
    python = path / "bin" / "python"
    stamp = path / (STAMP if name == NAME else f".shotbench-{name}")
    digest = _lock_digest()
    if python.exists() and stamp.exists() and stamp.read_text().strip() == digest:
        return python
    print(f"installing the `{group}` dependency group into {path} (first use only) ...", file=sys.stderr, flush=True)
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(path), "UV_PYTHON_DOWNLOADS": "never"}
    env.setdefault("UV_SYSTEM_CERTS", "1")
    cmd = [
        *which.uv_command(),
        "sync",
        "--frozen",
        "--quiet",
        "--compile-bytecode",
        "--no-default-groups",
        "--group",
        group,
        "--python",
        python_at_least(min_python) if min_python else sys.executable,
    ]
    try:
        proc = subprocess.run(cmd, cwd=repo_root(), env=env, capture_output=True, text=True, timeout=900, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(
            f"could not install the {group} readers into {path} ({exc}); check that PyPI is reachable and retry."
        ) from None
    if proc.returncode != 0 or not python.exists():
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"`uv sync --group {group}` failed ({last}); check that PyPI is reachable and retry.")
    stamp.write_text(digest + "\n")
    return python

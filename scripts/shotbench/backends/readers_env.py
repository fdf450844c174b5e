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
import subprocess
import sys
from pathlib import Path

from shotbench import which
from shotbench.errors import UserError
from shotbench.paths import envs_dir, repo_root

NAME = "readers"
GROUP = "readers"
STAMP = ".shotbench-readers"


def env_path() -> Path:
    return envs_dir() / NAME


def _lock_digest() -> str:
    root = repo_root()
    h = hashlib.sha256()
    for name in ("uv.lock", "pyproject.toml"):
        path = root / name
        if path.exists():
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def ensure() -> Path:
    """The interpreter of `.envs/readers`, synced from uv.lock when missing or out of date."""
    path = env_path()
    python = path / "bin" / "python"
    stamp = path / STAMP
    digest = _lock_digest()
    if python.exists() and stamp.exists() and stamp.read_text().strip() == digest:
        return python
    print(f"installing the `{GROUP}` dependency group into {path} (first use only) ...", file=sys.stderr, flush=True)
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(path), "UV_PYTHON_DOWNLOADS": "never"}
    env.setdefault("UV_SYSTEM_CERTS", "1")
    cmd = [
        *which.uv_command(),
        "sync",
        "--frozen",
        "--quiet",
        "--no-default-groups",
        "--group",
        GROUP,
        "--python",
        sys.executable,
    ]
    try:
        proc = subprocess.run(cmd, cwd=repo_root(), env=env, capture_output=True, text=True, timeout=900, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(
            f"could not install the {GROUP} readers into {path} ({exc}); check that PyPI is reachable and retry."
        ) from None
    if proc.returncode != 0 or not python.exists():
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"`uv sync --group {GROUP}` failed ({last}); check that PyPI is reachable and retry.")
    stamp.write_text(digest + "\n")
    return python

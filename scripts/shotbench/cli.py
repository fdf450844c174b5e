"""The `shotbench` command: one entry point, one subcommand module per job.

Each subcommand is one module, `shotbench.commands.<name>`, exposing `register(subparsers)`, which
adds its parser and sets `func=callable(args) -> int`. Adding a subcommand is one module plus one line
here. Below `commands/` nothing parses arguments: the commands call the library, as the tests do.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from typing import NoReturn

from shotbench.errors import Terminated, UserError, interrupt_exit, one_line

COMMANDS: dict[str, str] = {
    "server": "shotbench.commands.server",
    "stage": "shotbench.commands.stage",
    "ls": "shotbench.commands.ls",
    "synth": "shotbench.commands.synth",
    "envs": "shotbench.commands.envs",
    "bench": "shotbench.commands.bench",
    "compare": "shotbench.commands.compare",
    "repeat": "shotbench.commands.repeat",
    "bench-harness": "shotbench.commands.bench_harness",
    "report": "shotbench.commands.report",
    "reports": "shotbench.commands.reports",
    "transfer": "shotbench.commands.transfer",
    "anatomy": "shotbench.commands.anatomy",
    "direction": "shotbench.commands.direction",
    "chaos": "shotbench.commands.chaos",
    "columns": "shotbench.commands.columns",
    "doctor": "shotbench.commands.doctor",
    "imds": "shotbench.commands.instance_role",
    "cluster": "shotbench.commands.cluster",
    "site": "shotbench.commands.site",
}


KEEPS_RESULTS = {"stage", "synth", "bench", "repeat", "transfer", "direction", "chaos", "anatomy", "bench-harness"}
"""Commands that write results as they go, so an interrupt keeps what they wrote (`--resume`)."""


class Parser(argparse.ArgumentParser):
    """Bad arguments are one line naming the fix (exit 2), not a usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {one_line(message)}; see `{self.prog} --help`.\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Register the module that owns `command`, or every module (for help and bad input).

    Importing only one module keeps `shotbench server status` from paying for pandas.
    """
    parser = Parser(
        prog="shotbench",
        description="Benchmark reading HDF5 shot files from S3 with Dask workers.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for name in wanted:
        importlib.import_module(name).register(sub)
    return parser


PATH_OPTIONS = ("output", "out", "runs_dir", "shots_dir", "config", "local_copies")
"""Options that name a file or folder: given as empty text, each meant the current folder or the default."""


def _refuse_empty_paths(argv: list[str]) -> None:
    """Read from the command line itself: after parsing, `Path("")` is the current folder."""
    flags = {"--" + dest.replace("_", "-") for dest in PATH_OPTIONS}
    own = argv[: argv.index("--")] if "--" in argv else argv  # after --: another command's, checked by it
    for i, arg in enumerate(own):
        flag, eq, value = arg.partition("=")
        if flag in flags and ((eq and not value.strip()) or (not eq and i + 1 < len(own) and not own[i + 1].strip())):
            raise UserError(f"{flag} is empty text; give it a path.")


def _interrupt(signum: int, _frame: object) -> None:
    """SIGTERM takes the Ctrl-C path: finally blocks run, children are stopped, state is saved."""
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    # `timeout`, CI cancellation: like Ctrl-C. First, before the command's modules load (pandas, Dask,
    # botocore: up to 0.4 s), so a SIGTERM then ends with the same line; what is left before it is
    # the interpreter's start and this module's import (argparse, typing: about 10 ms).
    signal.signal(signal.SIGTERM, _interrupt)
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser(argv[0] if argv else None).parse_args(argv)
        _refuse_empty_paths(argv)
        code = int(args.func(args) or 0)
        if code == 0 and getattr(args, "report", False) and getattr(args, "run_folder", None):
            from shotbench.reports.render import KINDS, render_run  # a finished run's report (`bench --report`)

            render_run(KINDS["ros3"], args.run_folder, hide_code=True)
        sys.stdout.flush()  # here, not at exit: a reader that left is then a BrokenPipeError below
        return code
    except UserError as exc:
        print(f"shotbench: {one_line(exc)}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # stdout's reader left (`shotbench server status | head -1`): stop, as a Unix tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return 128 + signal.SIGPIPE
    except Exception as exc:
        from shotbench.diskspace import translate_os_error
        from shotbench.store.awsconfig import translate  # a botocore configuration error from any command

        user = translate(exc) or translate_os_error(exc)
        if user is None:
            raise
        print(f"shotbench: {one_line(user)}", file=sys.stderr)
        return user.exit_code
    except KeyboardInterrupt as exc:
        kept = "; results written so far are kept" if argv and argv[0] in KEEPS_RESULTS else ""
        print(f"shotbench: interrupted{kept}.", file=sys.stderr)
        return interrupt_exit(exc)


if __name__ == "__main__":
    sys.exit(main())

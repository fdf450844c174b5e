"""The `shotbench` command: one entry point, one subcommand module per job.

Each module named in COMMANDS exposes `register(subparsers)`, which adds its parsers and
sets `func=callable(args) -> int`. Adding a subcommand is one module plus one line here.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys

from shotbench.errors import UserError

COMMANDS: dict[str, str] = {
    "server": "shotbench.store.cli",
    "stage": "shotbench.store.cli",
    "ls": "shotbench.store.cli",
    "synth": "shotbench.hdf5.synth",
    "envs": "shotbench.builds.cli",
    "bench": "shotbench.read.cli",
    "bench-harness": "shotbench.read.run.harness",
    "report": "shotbench.reports.render",
    "reports": "shotbench.reports.render",
    "transfer": "shotbench.transfer.cli",
    "compare": "shotbench.read.cli",
    "repeat": "shotbench.read.cli",
    "anatomy": "shotbench.anatomy.cli",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Register the module that owns `command`, or every module (for help and bad input).

    Importing only one module keeps `shotbench server status` from paying for pandas.
    """
    parser = argparse.ArgumentParser(
        prog="shotbench",
        description="Benchmark reading HDF5 shot files from S3 with Dask workers.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for name in wanted:
        importlib.import_module(name).register(sub)
    return parser


def _interrupt(signum: int, _frame: object) -> None:
    """SIGTERM takes the Ctrl-C path: finally blocks run, children are stopped, state is saved."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # `timeout`, CI cancellation: like Ctrl-C
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"shotbench: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("shotbench: interrupted; results written so far are kept.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

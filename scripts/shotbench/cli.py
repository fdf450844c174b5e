"""The `shotbench` command: one entry point, one subcommand module per job.

Each module listed in COMMANDS exposes `register(subparsers)`, which adds its parser and
sets `func=callable(args) -> int`. Adding a subcommand is one module plus one line here.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from shotbench.errors import UserError

COMMANDS: tuple[str, ...] = (
    "shotbench.store.cli",  # server, stage, ls
    "shotbench.synth",  # synth
    "shotbench.builds.cli",  # envs, build
    "shotbench.bench",  # bench, preflight
    "shotbench.harness",  # bench-harness
    "shotbench.report",  # report, reports
    "shotbench.transfer.cli",  # transfer
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shotbench",
        description="Benchmark reading HDF5 shot files from S3 with Dask workers.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # not written yet
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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

"""`shotbench reports`: re-render every run and the upstream study, and write reports/index.html."""

from __future__ import annotations

import argparse
import sys

from shotbench.commands.report import code_flags
from shotbench.errors import UserError
from shotbench.reports.render import KINDS, render_run, rendered_entries, write_index


def cmd_reports(args: argparse.Namespace) -> int:
    failures = 0
    for kind in KINDS.values():
        runs = kind.runs()
        if runs and not kind.notebook_path.is_file():
            print(f"Skipping {len(runs)} {kind.name} run(s): {kind.notebook_path} is missing.", file=sys.stderr)
            continue
        for run in runs:
            try:
                render_run(kind, run, not args.code)
            except UserError as exc:
                failures += 1
                print(f"shotbench: {run.name}: {exc}", file=sys.stderr)
    index = write_index(rendered_entries())
    print(f"Wrote {index}.")
    return 1 if failures else 0


def register(subparsers: argparse._SubParsersAction) -> None:
    q = subparsers.add_parser("reports", help="re-render every run and write reports/index.html")
    code_flags(q)
    q.set_defaults(func=cmd_reports)

"""`shotbench columns`: write the column reference (docs/reference/columns.md) from the schema."""

from __future__ import annotations

import argparse

from shotbench.reports import columnref


def cmd_columns(args: argparse.Namespace) -> int:
    target = columnref.path()
    text = columnref.markdown()
    current = target.read_text() if target.is_file() else ""
    if args.check:
        if current != text:
            print(f"{target} differs from the schema; run `make columns` and commit it.")
            return 1
        print(f"{target} matches the schema.")
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    print(f"Wrote {target}.")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "columns",
        help="write the column reference of run folders (docs/reference/columns.md) from the schema",
        description="Generate docs/reference/columns.md from the typed rows of both benchmarks.",
    )
    p.add_argument("--check", action="store_true", help="only compare; exit 1 when the file differs from the schema")
    p.set_defaults(func=cmd_columns)

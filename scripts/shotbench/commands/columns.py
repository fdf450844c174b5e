"""`shotbench columns`: write the column reference (docs/reference/columns.md) from the schema."""

from __future__ import annotations

import argparse
import errno

from shotbench.diskspace import atomic_write
from shotbench.errors import UserError
from shotbench.reports import columnref

REFUSED = (errno.EACCES, errno.EPERM, errno.EROFS)  # the folder's permissions or a read-only mount: the user's to fix


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
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, text, then="run `make columns` again")
    except OSError as exc:
        if exc.errno not in REFUSED:
            raise
        folder = next(p for p in target.parents if p.exists())  # the one that refused: docs/ when reference/ is missing
        raise UserError(
            f"cannot write {target} ({exc.strerror}); make {folder} writable, or run `make columns` in a checkout "
            "you can write."
        ) from None
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

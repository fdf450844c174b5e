"""`shotbench ls LOCATION`: the shot files of a data location and their sizes."""

from __future__ import annotations

import argparse
import sys

from shotbench.commands.server import WHICH_S3
from shotbench.store import embedded as server
from shotbench.store.s3 import list_shot_files, parse_location


def register(subparsers: argparse._SubParsersAction) -> None:
    ls = subparsers.add_parser(
        "ls",
        help="list the shot files of a data location (s3://bucket/prefix or a folder)",
        description="List the shot files (.h5 and .hdf5) of a location with their sizes. " + WHICH_S3,
    )
    ls.add_argument("location", metavar="LOCATION", help="s3://bucket/prefix or a local folder")
    ls.add_argument("--embedded", action="store_true", help="use the embedded server, starting it if needed")
    ls.set_defaults(func=_ls)


def _ls(args: argparse.Namespace) -> int:
    loc = parse_location(args.location)
    cfg = server.resolve_s3config(embedded=args.embedded) if loc.kind == "s3" else None
    objs = list_shot_files(loc, cfg)
    for o in objs:
        print(f"{o.size:>14,d}  {o.key}")
    total = sum(o.size for o in objs)
    print(f"{len(objs)} shot files, {total / 1e6:.1f} MB in {loc.uri()}", file=sys.stderr)
    return 0

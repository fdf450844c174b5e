"""`shotbench anatomy`: open one object N times through each backend and say where the time goes.

The measurement is `anatomy/anatomy_run.py`; this module turns the arguments into its calls.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from shotbench.anatomy.anatomy_run import run_anatomy, table, target, write
from shotbench.commands.server import WHICH_S3_DATA
from shotbench.diskspace import output_folder
from shotbench.errors import UserError

DEFAULT_BACKENDS = ["ros3-1.14", "ros3-2.0", "ros3-wheel", "fsspec", "obstore"]


def cmd_anatomy(args: argparse.Namespace) -> int:
    from shotbench.paths import data_dir

    def say(text: str) -> None:
        print(text, flush=True)

    if args.opens < 2:
        raise UserError("--opens must be at least 2 (one process-cold open and warm ones).")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = Path(args.out) if args.out else data_dir() / "anatomy" / f"{stamp}-{'https' if args.tls else 'http'}"
    with output_folder(out, "output folder"):  # refused before minutes of opens, not after them
        s3, bucket, key, size, keep = target(args.data, args.tls, say)
        with keep:
            results = run_anatomy(args.backends, s3, bucket, key, size, args.opens, strace=not args.no_strace, say=say)
        write(out, results, s3, bucket, key, size, args.opens)
    say(table(results))
    say(f"anatomy: {out / 'anatomy.json'}")
    return 0


def register(subparsers: Any) -> None:
    from shotbench.backends import registry

    p = subparsers.add_parser(
        "anatomy",
        help="where the time of one open goes, per backend (cold vs warm, CA bundle, requests)",
        description="Open one object N times through each backend and break each open into phases. " + WHICH_S3_DATA,
    )
    p.add_argument(
        "--backends",
        nargs="+",
        default=DEFAULT_BACKENDS,
        choices=[n for n in registry.names() if registry.get(n).reads_hdf5 and n != "local"],
    )
    p.add_argument("--opens", type=int, default=10, help="opens per backend (the first is process-cold)")
    p.add_argument(
        "--data",
        metavar="s3://bucket/key",
        help="one shot file (default: a synthetic one on a private embedded server)",
    )
    p.add_argument("--out", metavar="DIR", help="folder for anatomy.json (default data/anatomy/<time>-<http|https>)")
    p.add_argument("--no-strace", action="store_true", help="skip the traced run")
    p.add_argument("--tls", action="store_true", help="serve the embedded server over https (private CA)")
    p.set_defaults(func=cmd_anatomy)

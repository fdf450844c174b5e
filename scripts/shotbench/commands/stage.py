"""`shotbench stage SRC DEST`: upload a folder of shot files to S3, skipping what is already there."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from shotbench.commands.argtypes import whole_number
from shotbench.commands.server import WHICH_S3
from shotbench.errors import UserError
from shotbench.store import embedded as server
from shotbench.store.s3 import parse_location
from shotbench.store.staging import MAX_JOBS


def register(subparsers: argparse._SubParsersAction) -> None:
    st = subparsers.add_parser(
        "stage",
        help="upload a folder of shot files to s3://bucket/prefix (skips what is already there)",
        description="Upload every file of SRC to DEST through the S3 API with parallel, multipart-capable "
        "uploads; objects already there with the same size and ETag are skipped. " + WHICH_S3,
    )
    st.add_argument("src", metavar="SRC", help="local folder of shot files (e.g. data/shots)")
    st.add_argument("dest", metavar="DEST", help="s3://bucket/prefix")
    st.add_argument(
        "--jobs",
        "-j",
        type=whole_number("concurrent uploads", 1, MAX_JOBS),
        default=8,
        help="concurrent uploads, shared by all files (1-1024; default: 8)",
    )
    st.add_argument("--embedded", action="store_true", help="use the embedded server, starting it if needed")
    st.add_argument(
        "--create-bucket",
        action="store_true",
        help="create the bucket if missing (always done on the embedded server, never silently elsewhere)",
    )
    st.add_argument("--no-progress", action="store_true", help="no progress bar")
    st.set_defaults(func=_stage)


def _source(text: str) -> Path:
    """SRC: a local folder (never empty text, which would mean the current folder, nor s3://)."""
    if not text.strip():
        raise UserError(
            "the source folder SRC is empty text; give the folder of shot files to upload, "
            "like `shotbench stage data/shots s3://bucket/prefix`."
        )
    src = parse_location(text)
    if src.path is None:
        raise UserError(
            f"the source '{text}' is an S3 location; `shotbench stage` uploads a local folder: give the folder "
            "first and the s3:// destination second."
        )
    return src.path


def _stage(args: argparse.Namespace) -> int:
    from shotbench.store.staging import local_files, stage

    loc = parse_location(args.dest)
    if loc.kind != "s3":
        raise UserError(f"the destination '{args.dest}' is not an S3 location; give s3://bucket/prefix.")
    src = _source(args.src)
    local_files(src)  # a missing or unreadable source is the first thing to say, before any S3 question
    cfg = server.resolve_s3config(embedded=args.embedded)
    print(f"staging {args.src} -> {loc.uri()} at {cfg.public()['endpoint']} ({args.jobs} jobs)", file=sys.stderr)
    summary = stage(
        src,
        loc,
        cfg,
        jobs=args.jobs,
        progress=not args.no_progress,
        create_bucket=True if args.create_bucket else None,
    )
    print(summary.line(loc.uri()))
    return 0

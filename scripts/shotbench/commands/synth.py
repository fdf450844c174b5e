"""`shotbench synth`: make synthetic shot files (skips files already there)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from shotbench.errors import UserError, one_line
from shotbench.hdf5.synthesis import LAYOUTS, LIBVERS, MAX_SIGNALS, PAGINGS, make_dataset


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "synth",
        help="write synthetic C-Mod-like HDF5 shot files (single-shot or many-shot)",
        description="Write synthetic HDF5 shot files shaped like the upstream C-Mod files "
        "(paged aggregation, exact size, shared dimension scales): one file per shot, or one "
        "many-shot file stored shot by shot or signal by signal. Same seed, same bytes.",
    )
    p.add_argument("--out", required=True, help="folder for the .h5 files")
    p.add_argument("--shots", type=int, required=True, help="number of shots")
    p.add_argument("--signals", type=int, default=MAX_SIGNALS, help="signals per shot (max 61)")
    p.add_argument(
        "--file-size",
        type=int,
        default=16_000_000,
        help="bytes per single-shot file; a many-shot file holds the payload of one such file per shot",
    )
    p.add_argument("--page-size", type=int, default=8_000_000, help="file-space page size")
    p.add_argument(
        "--paging",
        choices=PAGINGS,
        default="paged",
        help="paged aggregation (upstream) or libhdf5's default non-paged file space",
    )
    p.add_argument(
        "--layout",
        choices=LAYOUTS,
        default="single",
        help="single: one file per shot; shot/signal: one many-shot file stored shot by shot or signal by signal",
    )
    p.add_argument("--seed", type=int, default=0, help="same seed gives byte-identical files")
    p.add_argument(
        "--libver",
        choices=list(LIBVERS),
        default="v110",
        help="v110: superblock 3, version-4 chunk layouts (upstream); earliest: superblock 0, "
        "version-3 chunk layouts, which every alternative reader reads",
    )
    p.set_defaults(func=_run)


def _out_folder(text: str) -> Path:
    """--out as typed. An empty one would be the current folder, and a `~` the shell left alone
    (`--out=~/shots`: no expansion after `=`) a folder named `~`, which invites `rm -rf ~`."""
    if not text.strip():
        raise UserError("--out is empty; give a folder.")
    if Path(text).parts[0] == "~":
        raise UserError(
            f"--out {one_line(text)} starts with a ~ the shell did not expand; "
            "write --out ~/shots with a space, or give the full path."
        )
    return Path(text)


def _run(args: argparse.Namespace) -> int:
    args.out = _out_folder(args.out)
    existing = {p.name: p.stat().st_mtime_ns for p in args.out.glob("*.h5")} if args.out.is_dir() else {}
    started = time.perf_counter()
    paths = make_dataset(
        args.out,
        args.shots,
        args.signals,
        args.file_size,
        args.page_size,
        args.paging,
        args.seed,
        progress=sys.stderr.isatty(),
        layout=args.layout,
        libver=args.libver,
    )
    seconds = time.perf_counter() - started
    kept = sum(1 for p in paths if existing.get(p.name) == p.stat().st_mtime_ns)
    total = sum(p.stat().st_size for p in paths)
    what = (
        f"{len(paths)} shot files in {args.out}"
        if args.layout == "single"
        else f"{paths[0]} ({args.shots} shots, {args.layout} layout)"
    )
    print(
        f"{what} ({len(paths) - kept} written, {kept} kept): "
        f"{total / 1e6:,.1f} MB, {args.paging}, page {args.page_size:,} B, "
        f"seed {args.seed}, {seconds:.1f} s"
    )
    return 0

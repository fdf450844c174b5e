"""`shotbench envs` (list the builds) and `shotbench envs build` (make what is missing)."""

from __future__ import annotations

import argparse
import json
import time

from shotbench.builds import environments as envs_mod
from shotbench.builds import specs
from shotbench.builds.environments import EnvInfo
from shotbench.builds.wheels import WHEELS
from shotbench.commands.argtypes import sha256_digest


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "envs",
        help="list the libhdf5/h5py builds and their environments",
        description="One Python environment per libhdf5 build (h5py is compiled against one libhdf5).",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=cmd_list)
    sub = parser.add_subparsers(dest="envs_command", metavar="ACTION")
    build = sub.add_parser(
        "build",
        help="build libhdf5 + h5py and the environment for each build that is missing",
        description=(
            "Builds are cached in ~/.cache/shotbench/builds keyed by sources, flags, compiler and "
            "Python, so this takes seconds when nothing changed. --name/--source add a build of an "
            "official HDF5 release from a tarball URL, a local tarball or a source folder."
        ),
    )
    build.add_argument(
        "names",
        nargs="*",
        help=(
            f"builds to make (default: {' '.join(envs_mod.DEFAULT_ENVS)}, what the default matrix needs; "
            f"built in: {', '.join([*specs.BUILDS, *WHEELS])}; --all: every one)"
        ),
    )
    build.add_argument(
        "--all", action="store_true", help="make every built-in build and wheel (what the test suite needs)"
    )
    build.add_argument("--name", help="name of a custom build, e.g. hdf5-1.14.6-release")
    build.add_argument("--source", help="HDF5 release tarball URL, local tarball, or source folder")
    build.add_argument(
        "--sha256", type=sha256_digest, help="expected sha256 of a --source URL or tarball, 64 hex digits (recommended)"
    )
    build.add_argument("--force", action="store_true", help="rebuild even if cached")
    build.add_argument("--json", action="store_true", help="machine-readable output")
    build.set_defaults(func=cmd_build)


def _table(rows: list[EnvInfo]) -> str:
    header = ("build", "libhdf5", "h5py", "ros3", "state", "cache", "path")
    lines = [header]
    for env in rows:
        lines.append(
            (
                env.name,
                env.hdf5_version or f"({env.expected_hdf5 or '?'})",
                env.h5py_version or "-",
                "-" if env.ros3 is None else str(env.ros3),
                env.state,
                "index wheel" if env.name in WHEELS else ("cached" if env.cached else "not built"),
                str(env.path),
            )
        )
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in lines)


def _print(rows: list[EnvInfo], as_json: bool) -> None:
    if as_json:
        print(json.dumps([env.to_dict() for env in rows], indent=2))
    else:
        print(_table(rows))
        missing = [env.name for env in rows if env.state != "ready"]
        lazy = [n for n in missing if n not in envs_mod.DEFAULT_ENVS]
        needed = [n for n in missing if n in envs_mod.DEFAULT_ENVS]
        if needed:
            print(f"\nnot ready: {', '.join(needed)} — run `make envs` (or `shotbench envs build`).")
        if lazy:
            print(
                f"\nnot built yet: {', '.join(lazy)} — built the first time a run selects it "
                f"(or now: `shotbench envs build {' '.join(lazy)}`)."
            )


def cmd_list(args: argparse.Namespace) -> int:
    _print(envs_mod.list_envs(), args.json)
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    started = time.monotonic()
    extra = []
    if args.source or args.name:
        from shotbench.errors import UserError

        if not (args.source and args.name):
            raise UserError("a custom build needs both --name and --source (a release tarball URL, tarball or folder).")
        spec = specs.custom_spec(args.name, args.source, args.sha256)
        extra.append(spec)
    names = list(args.names) + [s.name for s in extra] if (args.names or extra) else None
    if args.all:
        names = [*specs.BUILDS, *WHEELS, *(names or [])]
        names = list(dict.fromkeys(names))
    rows = envs_mod.build_envs(names, force=args.force, extra=extra)
    for spec in extra:
        envs_mod.remember_custom(spec)
    if args.json:
        _print(rows, True)
    else:
        print(_table(rows))
        print(f"\n{len(rows)} environment(s) ready in {time.monotonic() - started:.1f} s")
    return 0

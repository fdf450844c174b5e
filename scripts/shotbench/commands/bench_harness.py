"""`shotbench bench-harness`: the upstream-style harness against ours on the same files.

The run is `studies/harness/harness_run.py`; this module turns the arguments into its configuration.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from shotbench.plan import matrix as planmod
from shotbench.plan import profiles
from shotbench.studies.harness.harness_run import default_backends, run_harness


def cmd_harness(args: argparse.Namespace) -> int:
    backends = args.backends or default_backends()
    overrides = {
        "backends": backends,
        "workers": args.workers,
        "trials": args.trials,
        "modes": args.modes,
        "signals_files": args.signals_files,
        "shots": args.shots,
        "signals_names": args.signals_names,
        "page_buffers": [args.page_buffer],
    }
    cfg = profiles.load(args.profile, Path(args.config) if args.config else None, overrides)
    run_harness(
        cfg,
        args.data,
        args.page_buffer,
        Path(args.shots_dir) if args.shots_dir else None,
        Path(args.csv) if args.csv else None,
    )
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "bench-harness",
        help="upstream harness pattern vs ours on the same files: runtime ratio",
        description="Run the upstream-style Dask harness and ours on the same files and server, "
        "interleaved, and print per-case harness efficiency and the runtime ratio.",
    )
    p.add_argument("--data", metavar="s3://bucket/prefix", help="default: embedded server + synthetic files")
    p.add_argument("--profile", default="quick", choices=list(profiles.BENCH_PROFILES))
    p.add_argument("--config", metavar="FILE.toml")
    p.add_argument("--backends", nargs="+", metavar="NAME", help="default: local and ros3-1.14 (obstore if not built)")
    p.add_argument("--modes", nargs="+", choices=list(planmod.MODES))
    p.add_argument("--workers", nargs="+", type=int, metavar="N")
    p.add_argument("--trials", type=int, default=2)
    p.add_argument("--signals-files", type=int, metavar="N")
    p.add_argument("--signals-names", type=int, metavar="N")
    p.add_argument("--shots", type=int, metavar="N")
    p.add_argument(
        "--page-buffer", type=int, default=planmod.UPSTREAM_PAGE_BUFFER, metavar="BYTES", help="upstream used 268435456"
    )
    p.add_argument("--shots-dir", help="where synthetic shot files live (default data/shots)")
    p.add_argument("--csv", metavar="FILE", help="where to write the per-case table (default data/harness/<id>.csv)")
    p.set_defaults(func=cmd_harness)

"""`shotbench site` (`make site`): the documentation, every published report and the run folders,
as one static site (`shotbench.reports.sitebuild`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from shotbench.reports.sitebuild import build, relative


def cmd_site(args: argparse.Namespace) -> int:
    site = build(Path(args.output) if args.output else None, render_stale=not args.no_render)
    print(
        f"Wrote {relative(site.root)}: {site.pages} pages, {site.reports} report pages "
        f"({len(site.rendered)} rendered now); open {relative(site.root / 'index.html')} or serve the folder."
    )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "site",
        help="build the documentation, every published report and the run folders into one static site",
        description="Render the reports that are missing or stale, build docs/ with Sphinx and gather both, "
        "with the committed run folders, into site/ (static files, nothing fetched from another host).",
    )
    p.add_argument("--output", metavar="DIR", help="where to write the site (default: site/ in the checkout)")
    p.add_argument("--no-render", action="store_true", help="use the reports already rendered; render none")
    p.set_defaults(func=cmd_site)

"""`shotbench report`: render one run, a transfer run, an ablation or the upstream study as an HTML report."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from shotbench.diskspace import check_path, output_folder
from shotbench.errors import UserError
from shotbench.paths import repo_root, reports_dir
from shotbench.reports.htmlcheck import figure_count
from shotbench.reports.render import (
    KINDS,
    MULTI_SHOT_NOTEBOOK,
    REFERENCE_DIR,
    absolute_inputs,
    check_inputs,
    direction_run,
    latest,
    many_shot_inputs,
    reference_inputs,
    render_direction,
    render_notebook,
    render_reference_many_shot,
    render_run,
    rendered_entries,
    write_index,
)


def refuse_flags(args: argparse.Namespace) -> None:
    """A flag that does not apply to the chosen report is refused, never silently ignored."""
    if args.name and not args.input:
        raise UserError(
            "--name names the files of an --input report only; drop it (run reports are named after their notebook)."
        )
    if args.baseline and (args.transfer or args.latest_transfer):
        raise UserError("--baseline applies to ROS3 reports only; drop it for a transfer report.")
    if args.name and (args.name in (".", "..") or any(c in args.name for c in "/\0")):
        raise UserError(
            f"--name {args.name!r} is not a plain file name (it has a `/` or is `..`); pass the folder with "
            "--output and a name such as --name my-report."
        )
    if args.name:
        check_path(args.name + ".partial.ipynb", "--name")


def cmd_report(args: argparse.Namespace) -> int:
    chosen = [
        bool(args.input),
        args.latest,
        bool(args.run),
        args.latest_transfer,
        bool(args.transfer),
        args.reference,
        bool(args.direction),
    ]
    if sum(chosen) != 1:
        raise UserError(
            "choose one of --input LABEL=PATH, --latest, --run DIR, --latest-transfer, --transfer DIR, "
            "--direction DIR|latest or --reference."
        )
    refuse_flags(args)
    hide = not args.code
    output = Path(args.output) if args.output else None
    if args.direction:
        html = render_direction(direction_run(args.direction), hide, output)
        print(f"Wrote {html}.")
        return 0
    if args.reference:
        args.input, args.output = reference_inputs(), str(output or reports_dir() / REFERENCE_DIR)
    if args.input:
        if not args.output:
            raise UserError("with --input, also pass --output DIR for the notebook, HTML and summary.csv.")
        inputs = absolute_inputs(check_inputs(args.input))
        out = Path(args.output)
        kind = KINDS["ros3"]
        notebook, stem, params = kind.notebook_path, kind.stem, {"inputs": inputs, "baseline": args.baseline}
        if many_shot_inputs(inputs):
            notebook, stem, params = (
                repo_root() / "notebooks" / MULTI_SHOT_NOTEBOOK,
                Path(MULTI_SHOT_NOTEBOOK).stem,
                {"inputs": inputs},
            )
        t0 = time.monotonic()
        with output_folder(out, "report folder"):  # a refusal leaves no half-written report folder
            print(f"Rendering {notebook.name} with {len(inputs)} input(s) into {out} ...", flush=True)
            html_path = render_notebook(notebook, params, out, args.name or stem, hide)
            print(
                f"Wrote {html_path} ({html_path.stat().st_size / 1e6:.1f} MB, {figure_count(html_path.read_text())} "
                f"figures), {html_path.with_suffix('.ipynb')} and its tables in {time.monotonic() - t0:.0f} s."
            )
            if args.reference:
                many = render_reference_many_shot(hide, out)
                print(f"Wrote {many} ({figure_count(many.read_text())} figures): the upstream many-shot study.")
        if args.reference and output is None:
            write_index(rendered_entries())
        return 0
    if args.latest or args.run:
        kind = KINDS["ros3"]
        run = latest(kind) if args.latest else Path(args.run)
    else:
        from shotbench.transfer.runfolder import check_run_folder

        kind = KINDS["transfer"]
        run = latest(kind) if args.latest_transfer else Path(args.transfer)
        check_run_folder(run, "--transfer")  # a damaged file is one sentence before the notebook kernel starts
    if not run.is_dir():
        raise UserError(f"run folder {run} does not exist; list runs with `ls {kind.folder()}`.")
    html_path = render_run(kind, run, hide, {"baseline": args.baseline} if args.baseline else None, output)
    print(f"Wrote {html_path}.")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report",
        help="render a notebook report (HTML + executed notebook + summary.csv)",
        description="Execute the analysis notebook with papermill and export standalone HTML.",
    )
    p.add_argument("--input", action="append", metavar="LABEL=PATH", help="a run folder or per-worker CSV (repeatable)")
    p.add_argument(
        "--output",
        metavar="DIR",
        help="where to write the report (needed with --input; default reports/<run-id>/ for a run)",
    )
    p.add_argument("--latest", action="store_true", help="render the newest run in data/runs into reports/<run-id>/")
    p.add_argument("--run", metavar="DIR", help="render this run folder into reports/<run-id>/ (or --output DIR)")
    p.add_argument("--latest-transfer", action="store_true", help="render the newest data/transfer run")
    p.add_argument("--transfer", metavar="DIR", help="render this transfer run folder")
    p.add_argument(
        "--direction",
        metavar="DIR|latest",
        help="render an ablation run (`make bench-direction`) as the open-cost finding into reports/direction/<run-id>/",
    )
    p.add_argument(
        "--reference",
        action="store_true",
        help="render the upstream MDSplusBench study (bundled CSVs) into reports/mdsplusbench/",
    )
    p.add_argument(
        "--baseline",
        metavar="SERIES[@W]",
        help="shared baseline for performance ratios (default: each line's smallest worker count)",
    )
    p.add_argument(
        "--name", metavar="NAME", help="file name of the .ipynb/.html of an --input report (default: the notebook's)"
    )
    code_flags(p)
    p.set_defaults(func=cmd_report)


def code_flags(p: argparse.ArgumentParser) -> None:
    """Code cells are hidden in every report unless asked for (`make ... CODE=1`)."""
    p.add_argument("--code", action="store_true", help="show the code cells in the HTML (hidden by default)")
    p.add_argument("--no-code", action="store_true", help=argparse.SUPPRESS)  # the default; kept for old scripts

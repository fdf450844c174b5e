"""`shotbench report` and `shotbench reports`: executed notebooks turned into offline HTML.

A report is a notebook run by papermill with parameters, exported by nbconvert to one HTML file
that needs neither Jupyter nor the network. The notebook and the kind of run folder it reads
are parameters (`KINDS`), so the transfer benchmark reuses the same machinery.
"""

from __future__ import annotations

import html
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from shotbench.analyse import analysis, multishot, readerdecision
from shotbench.diskspace import atomic_write, full_disk, is_full, output_folder, require, writable
from shotbench.errors import UserError
from shotbench.paths import data_dir, repo_root, reports_dir, runs_dir, transfer_runs_dir
from shotbench.reports.htmlcheck import external_resources
from shotbench.runs import (
    DETAILS_CSV,
    DIRECTION,
    latest_run,
    read_meta,
    require_cases,
    require_read_run,
    run_folders,
)

KERNEL_NAME = "shotbench"
INDEX_NAME = "index.html"

# The lab template, minus the require.js, MathJax and Mermaid it would fetch from CDNs:
# the reports use none of them, and an offline reader would only get console errors.
_TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""


@dataclass(frozen=True)
class ReportKind:
    """One notebook and the run folders it renders (data/runs for ROS3, data/transfer for transfers)."""

    name: str
    notebook: str
    folder: Callable[[], Path]
    run_kind: str  # the kind of run folder it reads (shotbench.runs): "read" or "transfer"
    out_prefix: str = ""

    @property
    def notebook_path(self) -> Path:
        return repo_root() / "notebooks" / self.notebook

    @property
    def stem(self) -> str:
        return Path(self.notebook).stem

    def runs(self) -> list[Path]:
        """Run folders of this kind, oldest first (run ids start with a UTC timestamp)."""
        return run_folders(self.folder(), self.run_kind)

    def out_dir(self, run: Path) -> Path:
        base = reports_dir() / self.out_prefix if self.out_prefix else reports_dir()
        return base / run.name

    def params(self, run: Path, out_dir: Path, hide_code: bool) -> dict:
        return {"inputs": [f"{run.name}={run.resolve()}"], "output_dir": str(out_dir.resolve()), "hide_code": hide_code}


KINDS: dict[str, ReportKind] = {
    "ros3": ReportKind("ros3", "ros3-backends.ipynb", runs_dir, "read"),
    "transfer": ReportKind("transfer", "transfer.ipynb", transfer_runs_dir, "transfer", "transfer"),
}


def ensure_kernel() -> str:
    """A kernelspec for this interpreter, so papermill runs notebooks where shotbench is installed.

    Written under sys.prefix (the venv), where Jupyter looks first; a stale one from another
    checkout is replaced.
    """
    from jupyter_client.kernelspec import KernelSpecManager

    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python {sys.version_info.major}.{sys.version_info.minor} (shotbench)",
        "language": "python",
        "metadata": {"debugger": True},
    }
    for base in (Path(sys.prefix) / "share" / "jupyter" / "kernels", _user_kernels()):
        target = base / KERNEL_NAME / "kernel.json"
        try:
            if target.is_file() and json.loads(target.read_text()).get("argv") == spec["argv"]:
                break
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(spec, indent=1) + "\n")
            break
        except OSError:
            continue
    found = KernelSpecManager().find_kernel_specs().get(KERNEL_NAME)
    if not found:
        raise UserError(
            "could not register a Jupyter kernel for this Python; make sure its prefix is writable and retry."
        )
    return KERNEL_NAME


def _user_kernels() -> Path:
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "kernels"


def _quiet_kernel_manager(log: IO[bytes]) -> type:
    """A kernel manager whose kernel writes its stderr chatter (transport and shutdown
    notices) to `log` instead of the terminal; the log is shown only when a cell fails."""
    from jupyter_client.manager import AsyncKernelManager

    class QuietKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            kw["stderr"] = log
            await super()._async_launch_kernel(kernel_cmd, **kw)

    return QuietKernelManager


# A report's notebook, HTML (BokehJS inline) and tables: a few MB; checked before rendering.
REPORT_BYTES = 16 * 2**20
AGAIN = "render the report again"


def execute(notebook: Path, params: dict, out_ipynb: Path) -> None:
    """Run the notebook with papermill; a UserError inside it stays one sentence. papermill
    writes the notebook as it goes, so it writes a temporary file that replaces `out_ipynb`
    only when the run succeeded; a disk that fills, here or in the kernel, is one sentence."""
    partial = out_ipynb.with_name(out_ipynb.stem + ".partial.ipynb")  # papermill wants the suffix
    try:
        _execute(notebook, params, partial)
        os.replace(partial, out_ipynb)
    except BaseException as exc:
        partial.unlink(missing_ok=True)
        if is_full(exc) or (getattr(exc, "ename", "") == "OSError" and "[Errno 28]" in str(getattr(exc, "evalue", ""))):
            raise full_disk(out_ipynb.parent, REPORT_BYTES, AGAIN) from None
        raise


def _execute(notebook: Path, params: dict, out_ipynb: Path) -> None:
    import papermill
    from papermill.exceptions import PapermillExecutionError

    logging.getLogger("papermill").setLevel(logging.WARNING)
    with tempfile.TemporaryFile() as log:
        try:
            papermill.execute_notebook(
                str(notebook),
                str(out_ipynb),
                parameters=params,
                kernel_name=ensure_kernel(),
                cwd=str(repo_root()),
                progress_bar=False,
                log_output=False,
                execution_timeout=1800,
                kernel_manager_class=_quiet_kernel_manager(log),
            )
        except PapermillExecutionError as exc:
            if exc.ename == "UserError":
                raise UserError(exc.evalue) from None
            log.seek(0)
            sys.stderr.write(log.read().decode(errors="replace")[-4000:])
            raise


def export_html(nb_path: Path, out_html: Path, hide_code: bool, title: str) -> Path:
    """nbconvert to one self-contained HTML file (figures carry their own BokehJS)."""
    import nbformat
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="lab",
        template_file="shotbench.html.j2",
        extra_loaders=[DictLoader({"shotbench.html.j2": _TEMPLATE})],
    )
    exporter.exclude_input = hide_code
    exporter.exclude_input_prompt = hide_code
    exporter.exclude_output_prompt = hide_code
    nb = nbformat.read(str(nb_path), as_version=4)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    atomic_write(out_html, body, AGAIN)  # a full disk leaves no truncated page that looks like a report
    return out_html


def render_notebook(notebook: Path, params: dict, out_dir: Path, name: str, hide_code: bool) -> Path:
    """Execute `notebook` with `params` into out_dir/<name>.ipynb and export out_dir/<name>.html."""
    if not notebook.is_file():
        raise UserError(f"notebook {notebook} does not exist; restore it from git or pass another notebook.")
    writable(out_dir, "report folder")
    require(out_dir, REPORT_BYTES, "a report", "free space there or pass --output on another disk")
    params = {**params, "output_dir": str(out_dir.resolve()), "hide_code": hide_code}
    out_ipynb = out_dir / f"{name}.ipynb"
    execute(notebook, params, out_ipynb)
    title = f"{name}: " + ", ".join(str(i).split("=", 1)[0] for i in params.get("inputs", []))
    out_html = export_html(out_ipynb, out_dir / f"{name}.html", hide_code, title)
    remote = external_resources(out_html.read_text(encoding="utf-8"))
    if remote:
        print(
            f"shotbench: warning: {out_html} would fetch {len(remote)} resource(s) from the network: {remote[0]}",
            file=sys.stderr,
        )
    save_screenshot(out_html)
    return out_html


def save_screenshot(out_html: Path) -> Path | None:
    """A PNG beside the HTML for readers without a browser; a warning, not a failure, without Chromium."""
    from shotbench.reports.screenshot import screenshot

    try:
        return screenshot(out_html)
    except Exception as exc:  # noqa: BLE001  the HTML is the product; the PNG is a convenience
        print(f"shotbench: warning: no screenshot of {out_html}: {str(exc).splitlines()[0]}", file=sys.stderr)
        return None


def check_inputs(specs: list[str]) -> list[analysis.Input]:
    """Fail before starting a kernel: paths exist and every CSV header has the upstream columns."""
    import pandas as pd

    inputs = analysis.parse_inputs(specs)
    for inp in inputs:
        if inp.kind == "run":
            require_cases(inp.path)
        path = inp.path / "workers.csv" if inp.kind == "run" else inp.path
        try:
            header = pd.read_csv(path, nrows=0)
        except pd.errors.EmptyDataError:
            raise UserError(f"{path} is empty; pass a per-worker CSV with a header row and data.") from None
        except (pd.errors.ParserError, UnicodeDecodeError, OSError):
            raise UserError(f"{path} is not a readable CSV; pass a per-worker CSV or a run folder.") from None
        missing = [c for c in analysis.UPSTREAM_COLUMNS if c not in header.columns]
        if missing and multishot.schema_of(header.columns) is None:
            raise UserError(
                f"{path} is in neither upstream schema (the 12-column single-shot or the 20-column many-shot "
                f"CSV) nor shotbench's: it lacks the columns {', '.join(missing)}; pass a workers CSV from "
                "shotbench or MDSplusBench, or a run folder."
            )
    return inputs


def absolute_inputs(inputs: list[analysis.Input]) -> list[str]:
    """LABEL=PATH with each path absolute: the notebook runs in the repository root, where a path
    relative to the user's folder names nothing."""
    return [f"{inp.label}={inp.path.resolve()}" for inp in inputs]


MULTI_SHOT_NOTEBOOK = "multi-shot.ipynb"
READERS_NOTEBOOK = "readers.ipynb"


def many_shot_inputs(specs: list[str]) -> bool:
    """True when every input is an upstream many-shot CSV (rendered by the many-shot notebook)."""
    kinds = {multishot.schema_of(multishot.read_header(s.path)) == "upstream" for s in multishot.parse_sources(specs)}
    if len(kinds) > 1:
        raise UserError(
            "many-shot and single-shot CSVs cannot share one report; render them with separate --input sets."
        )
    return kinds == {True}


def render_reference(hide_code: bool, out: Path | None = None) -> Path:
    """The upstream single-shot and many-shot studies into reports/mdsplusbench/ (or `out`)."""
    out = out or reports_dir() / REFERENCE_DIR
    kind = KINDS["ros3"]
    html_path = render_notebook(kind.notebook_path, {"inputs": reference_inputs()}, out, kind.stem, hide_code)
    render_reference_many_shot(hide_code, out)
    return html_path


def render_reference_many_shot(hide_code: bool, out: Path | None = None) -> Path:
    """The upstream many-shot study into reports/mdsplusbench/multi-shot.html (or `out`)."""
    out = out or reports_dir() / REFERENCE_DIR
    notebook = repo_root() / "notebooks" / MULTI_SHOT_NOTEBOOK
    return render_notebook(
        notebook, {"inputs": multishot.reference_inputs()}, out, Path(MULTI_SHOT_NOTEBOOK).stem, hide_code
    )


@dataclass
class IndexEntry:
    """One line of reports/index.html, read from the run's run.json."""

    kind: str
    run_id: str
    date: str
    location: str
    backends: str
    hdf5: str
    status: str
    report: Path  # the main page; it may not exist yet (a run not rendered)
    answer: str = ""
    pages: list[tuple[str, Path]] = field(default_factory=list)  # the run's other questions, one page each


def index_entry(kind: ReportKind, run: Path, report: Path) -> IndexEntry:
    """Describe a rendered run from its run.json (and cases.csv when versions are missing)."""
    meta: dict = {}
    try:
        meta = read_meta(run)
    except (OSError, ValueError):
        pass
    versions = (meta.get("versions") or {}).get("backends") or {}
    backends = list(versions) or list((meta.get("config") or {}).get("backends") or [])
    hdf5 = sorted({str(v.get("hdf5")) for v in versions.values() if isinstance(v, dict) and v.get("hdf5")})
    if not backends or not hdf5:
        import pandas as pd

        try:
            cases = pd.read_csv(run / "cases.csv", usecols=lambda c: c in ("backend", "tool", "hdf5-version"))
            if not backends:
                col = "backend" if "backend" in cases else "tool" if "tool" in cases else None
                backends = list(dict.fromkeys(cases[col].dropna().astype(str))) if col else []
            if not hdf5 and "hdf5-version" in cases:
                hdf5 = sorted(set(cases["hdf5-version"].dropna().astype(str)))
        except (OSError, ValueError, pd.errors.EmptyDataError):
            pass
    data = meta.get("data") or {}
    return IndexEntry(
        kind=kind.name,
        run_id=meta.get("run_id") or run.name,
        date=str(meta.get("started") or meta.get("finished") or ""),
        location=str(data.get("location") or ""),
        backends=", ".join(backends),
        hdf5=", ".join(hdf5),
        status=str(meta.get("status") or ""),
        report=report,
    )


REFERENCE_DIR = "mdsplusbench"


def reference_inputs() -> list[str]:
    """The upstream EC2 study (MIT-PSFC/MDSplusBench, MIT License) as shipped in data/fixtures."""
    base = data_dir() / "fixtures" / "mdsplusbench"
    return [
        f"old-ros3-1.14={base / 'single-shot-ec2-s3.csv.gz'}",
        f"new-ros3-2.0dev={base / 'single-shot-ec2-s3-libaws.csv.gz'}",
    ]


def reference_entry() -> IndexEntry | None:
    """The index line of the upstream study's report, when it has been rendered."""
    report = reports_dir() / REFERENCE_DIR / f"{KINDS['ros3'].stem}.html"
    if not report.is_file():
        return None
    return IndexEntry(
        kind="reference",
        run_id="MDSplusBench EC2 study",
        date="upstream",
        location="S3 from an m5.4xlarge (500 files of 16 MB)",
        backends="ROS3 libhdf5 1.14.6 (old), ROS3 2.0 development build (new)",
        hdf5="1.14.6, 2.0-dev",
        status="published",
        report=report,
    )


def reference_entries() -> list[IndexEntry]:
    """The upstream single-shot and many-shot reports, those that have been rendered."""
    entries = [e for e in (reference_entry(),) if e]
    many = reports_dir() / REFERENCE_DIR / f"{Path(MULTI_SHOT_NOTEBOOK).stem}.html"
    if many.is_file():
        entries.append(IndexEntry(
            kind="reference", run_id="MDSplusBench EC2 many-shot study", date="upstream",
            location="S3 from an m5.4xlarge (two 3.7 GB files of 500 shots)",
            backends="ROS3 libhdf5 1.14 (old), ROS3 2.0 development build (new)",
            hdf5="1.14, 2.0-dev", status="published", report=many,
        ))  # fmt: skip
    return entries


# pages a run's report folder may hold besides the main one: the other questions it answers
QUESTION_PAGES = {
    Path(MULTI_SHOT_NOTEBOOK).stem: "many-shot files: storage layout × reading order",
    Path(READERS_NOTEBOOK).stem: "which reader to pick",
}


def rendered_entries() -> list[IndexEntry]:
    """Every run of every kind, rendered or not, newest first; the upstream study last."""
    entries = []
    for kind in KINDS.values():
        for run in kind.runs():
            entry = index_entry(kind, run, kind.out_dir(run) / f"{kind.stem}.html")
            entry.pages = [
                (title, entry.report.parent / f"{stem}.html")
                for stem, title in QUESTION_PAGES.items()
                if (entry.report.parent / f"{stem}.html").is_file()
            ]
            entries.append(entry)
    entries.sort(key=lambda e: (e.date, e.run_id), reverse=True)
    entries = entries + reference_entries()
    for entry in entries:
        entry.answer = _answer(entry.report.parent) if entry.report.is_file() else ""
    return entries


def _answer(folder: Path) -> str:
    """The one-line answer from the report's decision.csv (empty for reports without one)."""
    from shotbench.analyse import decision

    table = decision.read_decision(folder)
    try:
        return decision.one_line(table) if table is not None else ""
    except (KeyError, ValueError):
        return ""


def write_index(entries: list[IndexEntry], path: Path | None = None) -> Path:
    """reports/index.html: one row per report, no scripts, no network."""
    path = path or reports_dir() / INDEX_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    e = html.escape

    def link(target: Path, text: str) -> str:
        return f'<a href="{e(os.path.relpath(target, path.parent))}">{e(text)}</a>'

    def report(x: IndexEntry) -> str:
        if not x.report.is_file():
            return f"{e(x.run_id)}<br><small>not rendered: <code>make report RUN=…/{e(x.run_id)}</code></small>"
        more = "".join(f"<br><small>{link(page, title)}</small>" for title, page in x.pages)
        return link(x.report, x.run_id) + more

    rows = "\n".join(
        f"<tr><td>{e(x.date)}</td><td>{report(x)}</td>"
        f"<td>{e(x.kind)}</td><td>{e(x.answer) or '—'}</td><td>{e(x.location)}</td><td>{e(x.backends)}</td><td>{e(x.hdf5)}</td>"
        f"<td>{e(x.status)}</td></tr>"
        for x in entries
    )
    empty = "" if entries else "<p>No runs yet: run <code>make bench-ros3</code>, then <code>make reports</code>.</p>"
    atomic_write(
        path,
        f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>shotbench reports</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}th{{background:#f4f4f4}}</style></head>
<body><h1>shotbench reports</h1>{empty}
<table><thead><tr><th>Date (UTC)</th><th>Report</th><th>Kind</th><th>Answer: fastest per access pattern (workers, × limit, cost)</th>
<th>Data location</th><th>Backends</th>
<th>libhdf5 versions</th><th>Status</th></tr></thead>
<tbody>
{rows}
</tbody></table></body></html>
""",
        "render the reports again",
    )
    return path


def render_run(
    kind: ReportKind, run: Path, hide_code: bool, extra: dict | None = None, out: Path | None = None
) -> Path:
    """Render one run folder into reports/[<prefix>/]<run-id>/ and refresh the index, or into
    `out` (then the index, which lists the reports/ folders, is left as it is).

    `extra` adds notebook parameters (e.g. a shared baseline) to the kind's own.
    """
    details = DETAILS_CSV[kind.run_kind]
    if kind.run_kind == "read":  # a transfer or ablation run is named, with the command that reads it
        require_read_run(run, f"pass a run folder such as {kind.folder()}/<run-id>")
        require_cases(run)  # before the kernel, where a run without cases ends in a traceback
    run = run.resolve()
    if not (run / details).is_file():
        raise UserError(f"{run} has no {details}; pass a run folder such as {kind.folder()}/<run-id>.")
    out_dir = out or kind.out_dir(run)
    t0 = time.monotonic()
    with output_folder(out_dir, "report folder"):  # a refusal leaves no half-written report folder
        print(f"Rendering {run.name} with {kind.notebook} into {out_dir} ...", flush=True)
        params = {**kind.params(run, out_dir, hide_code), **(extra or {})}
        html_path = render_notebook(kind.notebook_path, params, out_dir, kind.stem, hide_code)
        print(f"  {html_path} ({html_path.stat().st_size / 1e6:.1f} MB, {time.monotonic() - t0:.0f} s)", flush=True)
        if kind.name == "ros3" and multishot.has_many_shot_rows(run):  # a `layouts` run: its many-shot half
            many = render_notebook(repo_root() / "notebooks" / MULTI_SHOT_NOTEBOOK, {"inputs": params["inputs"]},
                                   out_dir, Path(MULTI_SHOT_NOTEBOOK).stem, hide_code)  # fmt: skip
            print(f"  {many}", flush=True)
        if kind.name == "ros3" and readerdecision.is_readers_run(run):  # a `readers` run: the reader decision
            readers = render_notebook(repo_root() / "notebooks" / READERS_NOTEBOOK, {"inputs": params["inputs"]},
                                      out_dir, Path(READERS_NOTEBOOK).stem, hide_code)  # fmt: skip
            print(f"  {readers}", flush=True)
    if out is None:
        write_index(rendered_entries())
    return html_path


def latest(kind: ReportKind) -> Path:
    run = latest_run(kind.folder(), kind.run_kind)
    if run is None:
        hint = "make bench-transfer" if kind.name == "transfer" else "make bench-ros3"
        raise UserError(f"no runs in {kind.folder()} yet; run `{hint}` first, or pass --input LABEL=PATH.")
    return run


OPEN_COST_NOTEBOOK = "ros3-open-cost.ipynb"


def direction_run(given: str) -> Path:
    """The ablation run folder to render: a path, or `latest` (the newest in data/runs)."""
    if given == "latest":
        found = latest_run(runs_dir(), DIRECTION)
        if found is None:
            raise UserError(f"no ablation runs in {runs_dir()} yet; run `make bench-direction` first.")
        return found
    run = Path(given)
    if not (run / "cells.csv").is_file():
        raise UserError(
            f"{run} is not a finished ablation run (no cells.csv); pass data/runs/<id> of `make bench-direction`."
        )
    return run


def render_direction(run: Path, hide_code: bool, out: Path | None = None) -> Path:
    """The ablation's finding (`ros3-open-cost.ipynb`) into reports/direction/<run-id>/."""
    out_dir = out or reports_dir() / DIRECTION / run.name
    print(f"Rendering {run.name} with {OPEN_COST_NOTEBOOK} into {out_dir} ...", flush=True)
    notebook = repo_root() / "notebooks" / OPEN_COST_NOTEBOOK
    with output_folder(out_dir, "report folder"):  # a refusal leaves no half-written report folder
        return render_notebook(notebook, {"run": str(run.resolve())}, out_dir, Path(OPEN_COST_NOTEBOOK).stem, hide_code)

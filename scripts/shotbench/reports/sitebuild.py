"""`make site`: the documentation, every published report and the run folders, as one static site.

The site is plain files under one folder, ready for any static host (GitHub Pages): the Sphinx
pages from docs/, the reports rendered from data/ (only those missing or older than their run
or notebook are rendered again), the committed run folders with an index page each so their
CSVs can be downloaded, and the screenshots the pages show. Nothing in it is fetched from
another host; the build checks every page for that and fails if one would.
"""

from __future__ import annotations

import html
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from shotbench.diskspace import writable
from shotbench.errors import UserError
from shotbench.paths import data_dir, repo_root, reports_dir
from shotbench.reports import render, sitedocs
from shotbench.reports.htmlcheck import external_resources
from shotbench.runs import DIRECTION

PUBLISHED_PAGE = "published.md"
SITE_MARK = ".shotbench-site"  # in every site built here: the only kind of non-empty folder a build replaces
# run-folder files worth a download link; scratch and lock files stay out of the site
RUN_FILES = (".csv", ".json", ".md", ".png", ".txt")


@dataclass(frozen=True)
class Site:
    """What a build made: the folder, its pages and reports, and the reports rendered anew."""

    root: Path
    pages: int
    reports: int
    rendered: list[Path]


def _newest(path: Path) -> float:
    """The newest modification time of a file or of anything below a folder."""
    if path.is_file():
        return path.stat().st_mtime
    return max((p.stat().st_mtime for p in path.rglob("*") if p.is_file()), default=0.0)


def stale_reports() -> list[tuple[render.ReportKind, Path]]:
    """Runs whose report is missing or older than the run folder or the notebook that renders it."""
    out = []
    for kind in render.KINDS.values():
        for run in kind.runs():
            report = kind.out_dir(run) / f"{kind.stem}.html"
            if not report.is_file() or report.stat().st_mtime < max(_newest(run), _newest(kind.notebook_path)):
                out.append((kind, run))
    return out


def direction_runs() -> list[Path]:
    """The committed ablation runs (`make bench-direction`), each rendered as its finding."""
    return [run for run in render.KINDS["ros3"].runs() if (run / "cells.csv").is_file()]


def direction_report(run: Path) -> Path:
    return reports_dir() / DIRECTION / run.name / f"{Path(render.OPEN_COST_NOTEBOOK).stem}.html"


def render_reports() -> list[Path]:
    """Render what is stale, the upstream study's report when missing, and the reports index."""
    rendered = []
    for kind, run in stale_reports():
        rendered.append(render.render_run(kind, run, hide_code=True))
    if not (reports_dir() / render.REFERENCE_DIR / f"{render.KINDS['ros3'].stem}.html").is_file():
        rendered.append(render.render_reference(hide_code=True))
    for run in direction_runs():
        report = direction_report(run)
        if not report.is_file() or report.stat().st_mtime < _newest(run):
            rendered.append(render.render_direction(run, hide_code=True))
    render.write_index(render.rendered_entries())
    return rendered


def published_page() -> str:
    """docs/published.md: every rendered report with its one-line answer, newest first.

    Links are raw HTML: the reports are copied beside the pages, not read by Sphinx."""
    rows = []
    for entry in render.rendered_entries():
        if not entry.report.is_file():
            continue
        href = "reports/" + entry.report.relative_to(reports_dir()).as_posix()
        more = "".join(
            f'<br><small><a href="reports/{html.escape(p.relative_to(reports_dir()).as_posix())}">'
            f"{html.escape(title)}</a></small>"
            for title, p in entry.pages
        )
        rows.append(
            f'<tr><td>{html.escape(entry.date)}</td><td><a href="{html.escape(href)}">{html.escape(entry.run_id)}</a>'
            f"{more}</td><td>{html.escape(entry.kind)}</td><td>{html.escape(entry.answer) or '—'}</td></tr>"
        )
    for run in direction_runs():
        report = direction_report(run)
        if report.is_file():
            href = "reports/" + report.relative_to(reports_dir()).as_posix()
            rows.append(
                f'<tr><td>{html.escape(run.name[:8])}</td><td><a href="{html.escape(href)}">{html.escape(run.name)}</a>'
                "</td><td>direction</td><td>the one-knob-at-a-time ablation of 2.x ÷ 1.14.6 and the open-cost finding</td></tr>"
            )
    body = "\n".join(rows) or '<tr><td colspan="4">No report rendered yet: run <code>make site</code>.</td></tr>'
    return f"""# Published reports

*Generated when the site is built, from the run folders committed under `data/`.* Each report
opens with its answer; the run folder beside it holds the CSVs it was made from
(<a href="data/index.html">all run folders</a>).

<table class="table">
<thead><tr><th>date (UTC)</th><th>report</th><th>kind</th><th>answer</th></tr></thead>
<tbody>
{body}
</tbody>
</table>
"""


def _folder_index(folder: Path, title: str, site_folder: Path) -> None:
    """An index.html listing a copied folder's files, so a static host serves it as a page."""
    items = []
    for p in sorted(site_folder.iterdir()):
        if p.name == "index.html":
            continue
        name = p.name + ("/" if p.is_dir() else "")
        href = name + ("index.html" if p.is_dir() else "")
        items.append(f'<li><a href="{html.escape(href)}">{html.escape(name)}</a></li>')
    (site_folder / "index.html").write_text(
        f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em}}</style></head>
<body><h1>{html.escape(title)}</h1><p><a href="{"../" * (len(folder.parts))}index.html">shotbench</a></p>
<ul>
{chr(10).join(items)}
</ul></body></html>
""",
        encoding="utf-8",
    )


def copy_data(site: Path) -> None:
    """The committed run folders and screenshots, each folder with an index page."""
    src = data_dir()
    dest = site / "data"
    shutil.rmtree(dest, ignore_errors=True)
    for sub in ("runs", "transfer", "screenshots", "anatomy"):
        if not (src / sub).is_dir():
            continue
        for path in sorted((src / sub).rglob("*")):
            if path.is_file() and (sub == "screenshots" or path.suffix in RUN_FILES):
                target = dest / path.relative_to(src)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
    for folder in sorted((p for p in dest.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        rel = folder.relative_to(site)
        _folder_index(rel, f"shotbench: {rel.as_posix()}", folder)
    dest.mkdir(parents=True, exist_ok=True)
    _folder_index(Path("data"), "shotbench: run folders", dest)


def sphinx(docs: Path, out: Path, doctrees: Path, source: Path) -> None:
    """Build the pages of `docs`, a copy of `source`, with Sphinx (its warnings are errors: a broken
    link fails the build); a problem names its page in `source`, the folder a user edits."""
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going", "-E", "-d", str(doctrees)]
        + [str(docs), str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().replace(str(docs), str(source)).splitlines()
        named = [line for line in detail if str(source) in line]  # problems that name a page come first
        first = (named or detail or ["?"])[0]
        raise UserError(
            f"the documentation did not build ({len(detail)} problem(s), first: {first}); "
            "fix the page named and run `make site` again."
        )


def offline_problems(site: Path) -> list[str]:
    """Every page that would load something from another host."""
    problems = []
    for page in sorted(site.rglob("*.html")):
        for url in external_resources(page.read_text(encoding="utf-8", errors="replace")):
            problems.append(f"{page.relative_to(site)}: {url}")
    return problems


def build(out: Path | None = None, render_stale: bool = True) -> Site:
    """Build the whole site into `out` (default site/ in the checkout). The pages are built from a
    copy of docs/ in a temporary folder, with the pages generated here and Sphinx's build tree, so
    the checkout is left as it was (only `render_stale` writes there: the reports, into reports/)."""
    default = (repo_root() / "site").resolve()
    out = (out or default).resolve()
    _check_output(out, default)
    rendered = render_reports() if render_stale else []
    with tempfile.TemporaryDirectory(prefix="shotbench-site-") as tmp:
        docs = Path(tmp) / "docs"
        shutil.copytree(repo_root() / "docs", docs, ignore=shutil.ignore_patterns("_build", "__pycache__"))
        (docs / PUBLISHED_PAGE).write_text(published_page(), encoding="utf-8")
        sitedocs.write_generated(docs)
        if out.exists():
            shutil.rmtree(out)
        sphinx(docs, out, Path(tmp) / "doctrees", repo_root() / "docs")
    if reports_dir().is_dir():
        shutil.copytree(reports_dir(), out / "reports", ignore=shutil.ignore_patterns("*.ipynb", "lab"))
    copy_data(out)
    (out / ".nojekyll").write_text("", encoding="utf-8")  # GitHub Pages: serve _static/ as it is
    (out / SITE_MARK).write_text("built by `shotbench site`; the next build replaces this folder\n", encoding="utf-8")
    problems = offline_problems(out)
    if problems:
        raise UserError(
            f"{len(problems)} page(s) would load from another host, first {problems[0]}; the site must work offline."
        )
    pages = sum(1 for _ in out.rglob("*.html"))
    reports = sum(1 for _ in (out / "reports").rglob("*.html")) if (out / "reports").is_dir() else 0
    return Site(out, pages, reports, rendered)


def _check_output(out: Path, default: Path) -> None:
    """Before any work: the site replaces its folder, so a folder of other files (`--output ~`) is
    refused, not emptied; and the folder must be one that can be written."""
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is a file; give --output a folder for the site.")
    if out != default and out.is_dir() and any(out.iterdir()) and not (out / SITE_MARK).exists():
        raise UserError(
            f"{out} holds files that no `shotbench site` wrote, and a build replaces the whole folder; "
            "give --output a new or empty folder."
        )
    writable(out, "site folder")


def relative(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)

"""The published site as a reader gets it: built by `shotbench site`, served over HTTP on
loopback, opened in headless Chromium. Every internal link resolves, no request leaves the
machine, and each report shows its answer in the first screen. And the notebooks, run by hand
from notebooks/ as JupyterLab runs them, write nothing beside themselves.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from support.golden import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.notebook]

FIRST_SCREEN = 1000  # px at 1280 px wide: what a reader sees without scrolling
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


def shotbench(*args: str, env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "shotbench", *args], env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def newest_bench_run() -> Path:
    from shotbench.runs import latest_run

    found = latest_run(ROOT / "data" / "runs", "read")
    assert found is not None
    return found


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout's docs and data, the newest published bench run's report rendered, then the site
    built from them (the other runs are listed in their folders but not rendered: one notebook
    run keeps the test short; `make site` renders them all)."""
    root = tmp_path_factory.mktemp("checkout")
    shutil.copytree(ROOT / "docs", root / "docs", ignore=shutil.ignore_patterns("_build", "published.md"))
    (root / "notebooks").symlink_to(ROOT / "notebooks")
    for sub in ("runs", "transfer", "screenshots", "anatomy"):
        if (ROOT / "data" / sub).is_dir():
            shutil.copytree(ROOT / "data" / sub, root / "data" / sub)
    (root / "data" / "fixtures").symlink_to(ROOT / "data" / "fixtures")  # the upstream study, read by each report
    env = {**os.environ, "SHOTBENCH_ROOT": str(root)}
    shotbench("report", "--run", str(root / "data" / "runs" / newest_bench_run().name), env=env)
    shotbench("site", "--no-render", env=env)
    return root / "site"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value and (name in ("href", "src") or (tag == "link" and name == "href")):
                self.links.append(value)
            if value and name in ("id", "name"):
                self.ids.add(value)


@functools.cache
def _parsed(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8", errors="replace"))
    return parser


def broken_links(site: Path) -> list[str]:
    """Every href/src of every page that points inside the site at nothing (or at a missing id)."""
    broken = []
    for page in sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts):
        for link in _parsed(page).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("#", "data:", "javascript:", "mailto:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file() or site.resolve() not in target.parents:
                broken.append(f"{page.relative_to(site)} -> {link}")
            elif parts.fragment and target.suffix == ".html" and parts.fragment not in _parsed(target).ids:
                broken.append(f"{page.relative_to(site)} -> {link} (no such anchor)")
    return broken


def test_every_internal_link_of_the_site_resolves(site: Path) -> None:
    pages = list(site.rglob("*.html"))
    assert len(pages) > 30 and (site / "reports" / "index.html").is_file()
    assert broken_links(site) == []


def test_the_home_page_reaches_every_published_report_in_two_clicks(site: Path) -> None:
    home = {(site / link).resolve() for link in _parsed(site / "index.html").links if not urlsplit(link).scheme}
    assert (site / "published.html").resolve() in home
    published = {(site / link).resolve() for link in _parsed(site / "published.html").links}
    reports = {p.resolve() for p in (site / "reports").rglob("*.html") if p.name != "index.html"}
    assert reports and reports <= published, sorted(str(p) for p in reports - published)


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site over HTTP on loopback, as a static host serves it."""
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_no_request_leaves_the_machine_and_each_report_opens_with_its_answer(site: Path, served: str) -> None:
    from playwright.sync_api import sync_playwright

    from shotbench import which
    from shotbench.reports.screenshot import ARGS, WIDTH

    reports = sorted(
        p.relative_to(site).as_posix() for p in (site / "reports").rglob("*.html") if p.name != "index.html"
    )
    pages = [
        "index.html",
        "published.html",
        "guides/quickstart.html",
        "reference/cli.html",
        "data/index.html",
        *reports,
    ]
    outside: list[str] = []
    answers: dict[str, float | None] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(which.chromium()), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": FIRST_SCREEN})

            def route(r) -> None:  # record and refuse anything not from the site itself
                url = r.request.url
                if url.startswith((served, "data:", "blob:", "about:")):
                    r.continue_()
                else:
                    outside.append(url)
                    r.abort()

            page.route("**/*", route)
            for rel in pages:
                response = page.goto(f"{served}/{rel}", wait_until="load", timeout=120_000)
                assert response is not None and response.ok, rel
                if rel in reports:
                    page.wait_for_timeout(500)
                    answers[rel] = page.evaluate(
                        "() => { const h = [...document.querySelectorAll('h1, h2')]"
                        ".find(h => h.textContent.trim().startsWith('The answer'));"
                        " return h ? h.getBoundingClientRect().top + window.scrollY : null; }"
                    )
        finally:
            browser.close()
    assert outside == []
    assert reports, "no report was rendered into the site"
    assert all(top is not None and top < FIRST_SCREEN for top in answers.values()), answers


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_a_notebook_run_from_notebooks_with_its_defaults_writes_nothing_beside_it(
    notebook: str, tmp_path: Path
) -> None:
    """Run All in JupyterLab: the notebook's own folder as the working directory, no parameters."""
    import papermill

    from shotbench.reports.render import ensure_kernel

    root = tmp_path / "checkout"
    shutil.copytree(ROOT / "notebooks", root / "notebooks")
    (root / "data").symlink_to(ROOT / "data")
    before = sorted(p.name for p in (root / "notebooks").iterdir())
    os.environ["SHOTBENCH_ROOT"] = str(root)
    try:
        papermill.execute_notebook(
            str(root / "notebooks" / notebook),
            str(tmp_path / "out.ipynb"),
            kernel_name=ensure_kernel(),
            cwd=str(root / "notebooks"),
            progress_bar=False,
            execution_timeout=600,
        )
    finally:
        del os.environ["SHOTBENCH_ROOT"]
    assert sorted(p.name for p in (root / "notebooks").iterdir()) == before

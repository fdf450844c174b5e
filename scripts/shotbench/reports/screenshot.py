"""A PNG of a rendered report, for people who review it without a browser.

Headless Chromium (resolved by `shotbench.which.chromium`) opens the HTML from disk with the
network cut off, waits for Bokeh to draw, and saves the full page beside the HTML.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from shotbench import which
from shotbench.errors import UserError
from shotbench.reports.htmlcheck import figure_count

if TYPE_CHECKING:
    from playwright.sync_api import Page

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
WIDTH = 1280  # the window a reader of a published report opens it in


@contextmanager
def _drawn(html: Path, width: int, height: int, timeout_s: float, failure: str) -> Iterator[Page]:
    """`html` open in headless Chromium (only file:, data: and blob: URLs load) once Bokeh has
    drawn every figure it holds; a browser error becomes a `UserError` that starts with `failure`."""
    from playwright.sync_api import Error, sync_playwright

    exe = which.chromium()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(exe), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.route(
                "**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:", "blob:")) else r.abort()
            )
            page.goto(html.resolve().as_uri(), wait_until="load", timeout=timeout_s * 1000)
            expected = figure_count(html.read_text(encoding="utf-8"))
            page.wait_for_function(
                "n => n === 0 || (window.Bokeh && [...Bokeh.index.all_views()].length >= n)",
                arg=expected,
                timeout=timeout_s * 1000,
            )
            page.wait_for_timeout(500)  # let the last canvases paint
            yield page
        except Error as exc:
            raise UserError(f"{failure} ({str(exc).splitlines()[0]}); open it in a browser instead.") from None
        finally:
            browser.close()


def screenshot(html: Path, png: Path | None = None, timeout_s: float = 120) -> Path:
    """Full-page PNG of `html` (default: same name, .png); only file: URLs are loaded."""
    png = png or html.with_suffix(".png")
    with _drawn(html, WIDTH, 1000, timeout_s, f"Chromium could not capture {html}") as page:
        page.screenshot(path=str(png), full_page=True)
    return png


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    top: float  # px from the top of the page


@dataclass(frozen=True)
class PageLayout:
    """What a reader of a report sees at a given window width, measured in Chromium."""

    width: int  # the window's width, px
    height: float  # the whole page, px (closed <details> blocks count as their summary line)
    headings: list[Heading]
    first_table_top: float | None  # the first table's top edge, px
    code_cells: int  # code cells with visible input
    figures: list[tuple[str, float]]  # (title, right edge px) of every drawn Bokeh figure

    def top_of(self, text: str) -> float | None:
        """Top of the first h1/h2 heading whose text starts with `text`."""
        return next((h.top for h in self.headings if h.text.startswith(text)), None)


_LAYOUT_JS = """() => ({
  height: document.documentElement.scrollHeight,
  headings: [...document.querySelectorAll('h1, h2, h3')].map(h => ({
      level: +h.tagName[1], text: h.textContent.replace('¶', '').trim(),
      top: h.getBoundingClientRect().top + window.scrollY})),
  table: (t => t ? t.getBoundingClientRect().top + window.scrollY : null)(document.querySelector('.jp-OutputArea table')),
  code: [...document.querySelectorAll('.jp-CodeCell .jp-InputArea')]
        .filter(e => e.offsetParent !== null && e.getBoundingClientRect().height > 0).length,
  figures: window.Bokeh ? [...Bokeh.index.all_views()].filter(v => v.model.type === 'Figure' && v.el.offsetParent !== null)
        .map(v => [v.model.title ? v.model.title.text : '', v.el.getBoundingClientRect().right]) : [],
})"""


def layout(
    html: Path, width: int = WIDTH, timeout_s: float = 120, png: Path | None = None, first_screen: int = 0
) -> PageLayout:
    """Open `html` at `width` px (offline), wait for its figures, and measure what the reader sees;
    with `png`, also save a screenshot: the first `first_screen` px, or the whole page when 0."""
    with _drawn(html, width, first_screen or 1000, timeout_s, f"Chromium could not open {html}") as page:
        got = page.evaluate(_LAYOUT_JS)
        if png is not None:
            page.screenshot(path=str(png), full_page=not first_screen)
    return PageLayout(
        width=width,
        height=float(got["height"]),
        headings=[Heading(int(h["level"]), str(h["text"]), float(h["top"])) for h in got["headings"]],
        first_table_top=got["table"],
        code_cells=int(got["code"]),
        figures=[(str(t), float(r)) for t, r in got["figures"]],
    )

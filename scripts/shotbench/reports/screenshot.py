"""A PNG of a rendered report, for people who review it without a browser.

Headless Chromium (resolved by `shotbench.which.chromium`) opens the HTML from disk with the
network cut off, waits for Bokeh to draw, and saves the full page beside the HTML.
"""

from __future__ import annotations

from pathlib import Path

from shotbench import which
from shotbench.errors import UserError
from shotbench.reports.htmlcheck import figure_count

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
WIDTH = 1400


def screenshot(html: Path, png: Path | None = None, timeout_s: float = 120) -> Path:
    """Full-page PNG of `html` (default: same name, .png); only file: URLs are loaded."""
    from playwright.sync_api import Error, sync_playwright

    png = png or html.with_suffix(".png")
    exe = which.chromium()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(exe), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 1000})
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:", "blob:")) else r.abort())
            page.goto(html.resolve().as_uri(), wait_until="load", timeout=timeout_s * 1000)
            expected = figure_count(html.read_text(encoding="utf-8"))
            page.wait_for_function(
                "n => n === 0 || (window.Bokeh && [...Bokeh.index.all_views()].length >= n)",
                arg=expected, timeout=timeout_s * 1000,
            )
            page.wait_for_timeout(500)  # let the last canvases paint
            page.screenshot(path=str(png), full_page=True)
        except Error as exc:
            raise UserError(f"Chromium could not capture {html} ({str(exc).splitlines()[0]}); open it in a browser instead.") from None
        finally:
            browser.close()
    return png

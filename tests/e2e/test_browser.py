"""The HTML reports, opened from disk in headless Chromium with the network cut off.

nbconvert output of ordinary hvplot cells shows nothing offline (BokehJS and Panel come from
CDNs); this proves ours draws every figure, with no JavaScript errors and no network requests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shotbench.reports.htmlcheck import figure_count
from support.golden import (
    REFERENCE_REPORT_FIGURES,
    RUN_REPORT_FIGURES,
    SINGLE_NEW,
    SINGLE_OLD,
    assert_published,
)
from support.golden import (
    RUN_FIXTURE as RUN,
)
from support.rendered import report_args, shared_report

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
CASES = {
    "reference-csvs": ([f"old={SINGLE_OLD}", f"new={SINGLE_NEW}"], REFERENCE_REPORT_FIGURES),
    "run-folder": ([f"fixture={RUN}"], RUN_REPORT_FIGURES),
}

# Every rendered Bokeh figure: its size, and how many non-background pixels it painted.
FIGURES_JS = """() => [...Bokeh.index.all_views()].filter(v => v.model.type === 'Figure').map(v => {
    const r = v.el.getBoundingClientRect();
    const c = v.export('png').canvas;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let ink = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && (d[i] < 200 || d[i + 1] < 200 || d[i + 2] < 200)) ink++;
    return {title: v.model.title ? v.model.title.text : '', width: r.width, height: r.height, ink: ink};
})"""


def chromium() -> str:
    from shotbench import which

    try:
        return str(which.chromium())
    except which.ToolMissing as exc:
        pytest.fail(f"{exc} (make test does)")


@pytest.fixture(scope="module", params=list(CASES))
def report(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """Rendered once per session: test_readable.py reads the same run-folder render."""
    inputs, expected = CASES[request.param]
    return shared_report(tmp_path_factory, request.param, report_args(inputs)) / "ros3-backends.html", expected


def test_report_draws_every_figure_offline(report: tuple[Path, int], tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    html, expected = report
    assert figure_count(html.read_text(encoding="utf-8")) == expected
    errors: list[str] = []
    remote: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))

            def offline(route) -> None:
                if route.request.url.startswith(("file:", "data:", "blob:")):
                    route.continue_()
                else:
                    remote.append(route.request.url)
                    route.abort()

            page.route("**/*", offline)
            page.goto(html.as_uri(), wait_until="load")
            page.wait_for_function(
                "n => window.Bokeh && [...Bokeh.index.all_views()].filter(v => v.model.type === 'Figure').length >= n",
                arg=expected,
                timeout=60_000,
            )
            figures = page.evaluate(FIGURES_JS)
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert remote == []
    assert len(figures) == expected
    for fig in figures:
        assert fig["width"] > 200 and fig["height"] > 200, fig
        assert fig["ink"] > 2000, fig  # axes, grid and data drawn, not an empty frame
    assert (tmp_path / "report.png").stat().st_size > 50_000


def test_explicit_inputs_write_all_three_outputs_with_the_seed_figures(report: tuple[Path, int]) -> None:
    """The issue's literal form, `--input old=… --input new=… --output DIR`, gives the seed's numbers."""
    html, _ = report
    out = html.parent
    assert (out / "ros3-backends.ipynb").is_file() and (out / "summary.csv").is_file()
    if out.name.startswith("run-folder"):
        return
    import pandas as pd

    s = pd.read_csv(out / "summary.csv").set_index(["label", "obj-type", "num-workers"])
    assert_published(lambda label, mode, workers, column: s.loc[(label, mode, workers), column])

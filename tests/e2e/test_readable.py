"""A rendered run report can be read: every multi-series figure names its series, axes have labels.

The check reads the Bokeh documents embedded in the HTML, so it sees what a browser would draw.
"""

from __future__ import annotations

from pathlib import Path

import holoviews as hv
import pandas as pd
import pytest

from shotbench.figures import plots
from shotbench.reports.htmlcheck import figures, legend_problems
from support.golden import RUN_FIXTURE as RUN
from support.rendered import RUN_REPORT, shared_report


def _two_lines(**opts: object) -> str:
    plots.setup()
    df = pd.DataFrame({"num-workers": [1, 2], "t": [2.0, 1.0]})
    a = hv.Curve(df, plots.WORKERS, "t", label="ros3-1.14").opts(color=plots.PALETTE[0])
    b = hv.Curve(df.assign(t=[3.0, 2.0]), plots.WORKERS, "t", label="ros3-2.0").opts(color=plots.PALETTE[1])
    return plots.show((a * b).opts(hv.opts.Overlay(ylabel="Total runtime [s]", **opts))).text


def test_a_figure_without_legend_is_reported() -> None:
    assert legend_problems(_two_lines(show_legend=False)) == ["an untitled figure: 2 coloured series and no legend"]


def test_a_figure_with_one_entry_per_series_passes() -> None:
    html = _two_lines(title="t", legend_position="right")
    (fig,) = figures(html)
    assert fig.legend == ["ros3-1.14", "ros3-2.0"] and fig.xlabel == "Number of Dask workers"
    assert legend_problems(html) == []


def test_two_entries_drawn_alike_are_reported() -> None:
    """Same colour, dash and marker: the legend names both lines but the reader cannot tell them apart."""
    plots.setup()
    df = pd.DataFrame({"num-workers": [1, 2], "t": [2.0, 1.0]})
    a = hv.Curve(df, plots.WORKERS, "t", label="local").opts(color=plots.PALETTE[0], line_dash="dashed")
    b = hv.Curve(df.assign(t=[3.0, 2.0]), plots.WORKERS, "t", label="fsspec").opts(
        color=plots.PALETTE[0], line_dash="dashed"
    )
    html = plots.show((a * b).opts(hv.opts.Overlay(title="t", legend_position="right", ylabel="s"))).text
    assert legend_problems(html) == ["t: legend entries 'local' and 'fsspec' are drawn alike"]
    c = b.opts(line_dash="solid")
    assert (
        legend_problems(plots.show((a * c).opts(hv.opts.Overlay(title="t", legend_position="right", ylabel="s"))).text)
        == []
    )


def test_every_series_has_its_own_colour_in_its_backends_hue() -> None:
    names = [name for i in range(12) for name in (f"b{i} · page buffer 264 MB (asked 256 MiB)", f"b{i}")]
    palette = plots.colors(names)
    assert len(set(palette.values())) == len(names) == 24
    assert palette["b0"] == plots.PALETTE[0] and palette["b1"] == plots.PALETTE[1]
    assert palette["b0 · page buffer 264 MB (asked 256 MiB)"] != plots.PALETTE[0]
    # a backend's series sit together in legend order, its settings sorted by name
    assert list(palette)[:3] == ["b0", "b0 · page buffer 264 MB (asked 256 MiB)", "b1"]


def test_long_legend_labels_shrink_the_font_then_widen_the_figure() -> None:
    assert plots.legend_fit(["local · page buffer off"]) == (13, plots.WIDTH)
    px, width = plots.legend_fit(["x" * 90])
    assert 10 < px < 13 and width == plots.WIDTH
    px, width = plots.legend_fit(["x" * 140])
    assert px == 10 and width > plots.WIDTH


def test_a_runs_series_are_told_apart_in_every_line_figure() -> None:
    """16 series (8 backends, page buffer off and on) were drawn in 10 colours: local and fsspec at
    264 MB looked the same."""
    table = pd.DataFrame(
        [
            {
                "series": f"{b} · page buffer {label}",
                "obj-type": "shots",
                "pb-size": pb,
                "num-workers": w,
                "total-runtime": 1.0 + i + pb / 1e9 + 1 / w,
                "norm-tot-runtime": 1.0,
                "trials": 1,
            }
            for i, b in enumerate(
                ["local", "ros3-2.0", "raw-get", "ros3-1.14", "download", "fsspec", "obstore", "ros3-2.2"]
            )
            for pb, label in ((0, "off"), (268435456, "264 MB"))
            for w in (1, 2)
        ]
    )
    html = plots.show(plots.scaling_plots(table, "shots", plots.colors(table["series"]))).text
    assert legend_problems(html) == []


def test_many_lines_keep_their_legend() -> None:
    """HoloViews drops the legend past 25 glyphs unless told otherwise; 13 lines of curve + markers."""
    table = pd.DataFrame(
        [
            {
                "series": f"b{i}",
                "obj-type": "shots",
                "pb-size": pb,
                "num-workers": w,
                "total-runtime": 1.0 + i + pb / 1e9 + 1 / w,
                "norm-tot-runtime": 1.0,
                "trials": 1,
            }
            for i in range(8)
            for pb in (0, 268435456)
            for w in (1, 2)
        ]
    )
    html = plots.show(plots.runtime_plot(table, "shots", plots.colors(table["series"]))).text
    assert legend_problems(html) == []
    assert len(figures(html)[0].legend) == 17  # 16 lines and the linear-scaling reference


@pytest.fixture(scope="module")
def run_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_report(tmp_path_factory, "run-folder", RUN_REPORT)


@pytest.mark.slow
def test_every_figure_of_a_run_report_has_a_legend_per_series(run_report: Path) -> None:
    html = (run_report / "ros3-backends.html").read_text(encoding="utf-8")
    found = figures(html)
    assert len(found) >= 10
    assert legend_problems(html) == []
    assert sum(len(f.series_colors) > 1 for f in found) >= 8


@pytest.mark.slow
def test_run_report_opens_with_the_answer_and_states_every_finding(run_report: Path) -> None:
    from shotbench.analyse import analysis, decision

    html = (run_report / "ros3-backends.html").read_text(encoding="utf-8")
    assert (
        html.index(">The answer<")
        < html.index(">The decision<")
        < html.index(">Why<")
        < html.index(">What was measured<")
    )
    table = pd.read_csv(run_report / "decision.csv")
    assert {"rank", "verdict", "vs-limit", "gets", decision.cost_column("internet")} <= set(table.columns)
    assert decision.one_line(table).startswith("shots: ros3-2.0 with 2 workers")
    ds = analysis.load([f"fixture={RUN}"])
    found = decision.findings(ds, decision.decision_table(ds))
    why = html[html.index(">Why<") : html.index(">How this compares")]
    assert found and all(sentence in why for sentence in found)
    assert "as of " + decision.load_prices().as_of in html


@pytest.mark.slow
def test_run_report_has_a_screenshot(run_report: Path) -> None:
    from PIL import Image

    png = run_report / "ros3-backends.png"
    with Image.open(png) as im:
        assert im.width >= 1200 and im.height > 2000  # the whole page, not one screen

"""hvplot figures for the transfer report: one panel per file size, tools side by side."""

from __future__ import annotations

import holoviews as hv
import pandas as pd
from hvplot import hvPlotTabular  # not hvplot.pandas: that loads the notebook extension from a CDN

from shotbench.transfer.results import (
    LOOPBACK,
    async_gain_table,
    latency_summary,
    loopback,
    main_concurrency,
    summarize,
)


def per_file_size(cases: pd.DataFrame, direction: str) -> hv.Layout | None:
    """MB/s of every tool (bars) for each test, one panel per file size: the seed tables'
    columns as a picture. Error cells are left out of the bars (the tables show them)."""
    conc = main_concurrency(cases)
    s = summarize(loopback(cases))
    s = s[(s["direction"] == direction) & (s["good"] > 0) & (s["concurrency"] == conc)]
    if s.empty:
        return None
    s = s.assign(column=s["tool"])
    panels = []
    for test, g in s.sort_values(["file-size", "file-count"]).groupby("test", sort=False):
        g = g.sort_values("mb-per-s")  # horizontal bars are drawn bottom up: the fastest on top
        panels.append(
            hvPlotTabular(g).bar(
                x="column",
                y="mb-per-s",
                title=f"{direction}: {test} ({conc} threads)",
                invert=True,  # tools on the vertical axis: their names read across, not at an angle
                width=520,
                height=340,
                xlabel="",
                ylabel="MB/s (median of verified trials)",
                hover_cols=["seconds", "concurrency"],
                color="#1f77b4" if direction == "upload" else "#2ca02c",
            )
        )
    return hv.Layout(panels).cols(2).opts(shared_axes=False)  # each panel its own order of tools


def concurrency_sweep(cases: pd.DataFrame, direction: str) -> hv.Layout | None:
    """MB/s against concurrency, a line per tool, a panel per test (only when the run swept)."""
    s = summarize(loopback(cases))
    s = s[(s["direction"] == direction) & (s["good"] > 0)]
    swept = s.groupby("test")["concurrency"].nunique()
    s = s[s["test"].isin(swept[swept > 1].index)]
    if s.empty:
        return None
    panels = []
    for test, g in s.sort_values(["file-size", "file-count"]).groupby("test", sort=False):
        panels.append(
            hvPlotTabular(g.sort_values("concurrency")).line(
                x="concurrency",
                y="mb-per-s",
                by="tool",
                logx=True,
                title=f"{direction}: {test}",
                width=520,
                height=340,
                xlabel="threads / workers / requests in flight",
                ylabel="MB/s",
            )
            * hvPlotTabular(g).scatter(x="concurrency", y="mb-per-s", by="tool", logx=True)
        )
    return hv.Layout(panels).cols(2)


def _series(frame: pd.DataFrame, y: str, by: str, colours: dict[str, str], size: int) -> list[hv.Element]:
    """A line with its points per value of `by`, each in its own colour (the same in every panel)."""
    layers: list[hv.Element] = []
    for name, g in frame.sort_values("concurrency").groupby(by, sort=True):
        layers.append(hv.Curve(g, "concurrency", y, label=name).opts(color=colours[name]))
        layers.append(hv.Scatter(g, "concurrency", y, label=name).opts(color=colours[name], size=size))
    return layers


def _in_flight_panel(
    layers: list[hv.Element], title: str, ticks: list[int], ylabel: str, width: int, height: int
) -> hv.Overlay:
    """One panel against requests in flight: log axis ticked at the levels swept, legend outside."""
    return hv.Overlay(layers).opts(
        title=title,
        logx=True,
        xticks=[(t, str(t)) for t in ticks],
        xlabel="requests in flight",
        ylabel=ylabel,
        xlim=(0.8, max(ticks) * 1.25),
        width=width,
        height=height,
        legend_position="right",
        show_legend=True,
    )


def latency_sweep(cases: pd.DataFrame, direction: str) -> hv.Layout | None:
    """Sync vs async under latency: MB/s against requests in flight, a line per tool (sync and
    async forms of s3fs and obstore, one colour each in every panel), a panel per network profile
    and file size. A file size measured at one number in flight only (one file) is a point, not a
    line: it stays in the table and out of the figure."""
    s = latency_summary(cases)
    s = s[s["direction"] == direction]
    swept = s.groupby(["network", "test"])["concurrency"].nunique()
    s = s[s.set_index(["network", "test"]).index.isin(swept[swept > 1].index)]
    if s.empty:
        return None
    colours = dict(zip(sorted(s["tool"].unique()), hv.Cycle("Category10").values))
    ticks = sorted(s["concurrency"].unique())
    panels = []
    nets = sorted(s["network"].unique(), key=lambda n: (n != LOOPBACK, n))
    for net in nets:
        for test, g in s[s["network"] == net].sort_values(["file-size", "file-count"]).groupby("test", sort=False):
            layers = _series(g, "mb-per-s", "tool", colours, 6)
            panels.append(_in_flight_panel(layers, f"{direction} · {net} · {test}", ticks, "MB/s", 600, 300))
    return hv.Layout(panels).cols(1).opts(shared_axes=False)  # each panel on its own MB/s scale


def async_gain(cases: pd.DataFrame, direction: str) -> hv.Layout | None:
    """Where async starts to pay: async MB/s ÷ blocking MB/s of the same library against requests
    in flight, a line per library and file size (one colour each, the same in every panel), a
    panel per network profile, and the line of no difference at 1."""
    gains = async_gain_table(cases)
    gains = gains[gains["direction"] == direction]
    if gains.empty:
        return None
    gains = gains.assign(series=gains["library"] + " · " + gains["test"])
    colours = dict(zip(sorted(gains["series"].unique()), hv.Cycle("Category10").values))
    ticks = sorted(gains["concurrency"].unique())
    panels = []
    for net in sorted(gains["network"].unique(), key=lambda n: (n != LOOPBACK, n)):
        layers = [hv.HLine(1.0).opts(color="gray", line_dash="dashed")]
        layers += _series(gains[gains["network"] == net], "ratio", "series", colours, 7)
        panels.append(_in_flight_panel(layers, f"{direction} · {net}", ticks, "async ÷ blocking MB/s", 760, 320))
    return hv.Layout(panels).cols(1)

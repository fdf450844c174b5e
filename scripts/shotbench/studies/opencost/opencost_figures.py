"""Figures of the open-cost finding: what an open costs per libhdf5, and the ablation's ratios."""

from __future__ import annotations

from typing import Any

import holoviews as hv
import pandas as pd

from shotbench.analyse.text import as_text
from shotbench.display import use_bokeh
from shotbench.studies.opencost import opencost

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")
MODES = ("shots", "signals")


def open_time_bars(df: pd.DataFrame) -> hv.Overlay:
    """Median open time per library: one row per object and setting, one bar per library in it,
    coloured (with a legend) by library."""
    use_bokeh()
    d = df.assign(
        lib=opencost.label(df),
        setting=df["object"]
        + df["open_only"].map({True: ", open", False: ", open+read"})
        + df["page_buffer"].map(lambda b: ", no pb" if int(b) == 0 else ", pb 256 MiB"),
    )
    libs = list(dict.fromkeys(d.sort_values("libhdf5")["lib"]))
    settings = sorted(d["setting"].unique())
    height = 0.8 / max(1, len(libs))
    layers = []
    for i, lib in enumerate(libs):
        part = d[d["lib"] == lib].set_index("setting").reindex(settings)
        y = [j - 0.4 + (i + 0.5) * height for j in range(len(settings))]
        boxes = pd.DataFrame(
            {
                "x0": 0.0,
                "y0": [v - height * 0.45 for v in y],
                "x1": part["open_ms"].to_numpy(),
                "y1": [v + height * 0.45 for v in y],
                "MB / open": part["mb_per_open"].to_numpy(),
            }
        ).dropna(subset=["x1"])
        layers.append(
            hv.Rectangles(boxes, ["x0", "y0", "x1", "y1"], ["MB / open"], label=lib).opts(
                color=PALETTE[i % len(PALETTE)], line_color=None, tools=["hover"]
            )
        )
    return _overlay(
        layers,
        "One ROS3 open: median time per library (the reproducer, plain http, loopback)",
        "open ms (median of warm opens)",
        "object, what was timed, page buffer",
        settings,
        height=140 + 22 * len(settings) * max(1, len(libs)),
        legend_position="right",
        xlim=(0, None),
    )


def knob_ratio_plot(knobs: pd.DataFrame) -> hv.Overlay:
    """The ablation: 2.x ÷ 1.14 per knob value with its 95 % interval, one colour per mode; below
    the line at 1, 2.x is faster (the upstream study's direction)."""
    use_bokeh()
    k = knobs.dropna(subset=["ratio-vs-1.14"]).copy()
    page = as_text(k["page buffer"])
    k["setting"] = k["knob"] + ": " + k["value"].astype(str) + page.map(lambda p: f" ({p})" if p else "")
    order = list(dict.fromkeys(k["setting"]))
    k["y"] = k["setting"].map({s: i for i, s in enumerate(order)})
    layers: list[hv.Element] = [hv.VLine(1).opts(color="grey", line_width=1)]
    for i, mode in enumerate(MODES):
        part = k[k["obj-type"] == mode]
        if part.empty:
            continue
        offset = -0.15 if mode == "shots" else 0.15
        pts = part.assign(y=part["y"] + offset)
        color = PALETTE[i]
        layers.append(
            hv.Segments(pts, ["ci-low", "y", "ci-high", "y"], label=mode).opts(color=color, line_width=2)  # interval
        )
        layers.append(
            hv.Scatter(pts, "ratio-vs-1.14", ["y", "setting", "ci-low", "ci-high", "trials"], label=mode).opts(
                color=color, size=8, tools=["hover"]
            )
        )
    return _overlay(
        layers,
        "2.x ÷ 1.14.6 per knob value (median, 95 % interval)",
        "2.x time ÷ 1.14.6 time (below 1: 2.x faster)",
        "knob: value (page buffer)",
        order,
        height=120 + 22 * len(order),
        legend_position="top_right",
        invert_yaxis=True,
    )


def _overlay(
    layers: list[hv.Element], title: str, xlabel: str, ylabel: str, rows: list[str], **opts: Any
) -> hv.Overlay:
    """Both figures' layout: one labelled row per tick, page-wide, grid, toolbar at the right;
    `opts` adds each figure's own (height, legend position, axis range or direction)."""
    return hv.Overlay(layers).opts(
        hv.opts.Overlay(
            title=title,
            xlabel=xlabel,
            ylabel=ylabel,
            yticks=list(enumerate(rows)),
            width=1100,
            show_grid=True,
            toolbar="right",
            **opts,
        )
    )

"""Ranked figures a reader can scan at 1280 px: one row per backend configuration, sorted by value.

Dot-and-interval plots (a dot per worker count, a horizontal line for its 95 % interval) and
horizontal bars replace crowded box plots and vertical bars with rotated labels: the names sit
horizontally on the y axis, the quantity and its unit on the x axis, and the colour of a series
is the one `plots.colors` gives it in every other figure of the report. The axis names every
row, so these figures carry no legend; the x-axis title says which marker is which worker count.
"""

from __future__ import annotations

import re

import pandas as pd
from bokeh.models import (  # type: ignore[attr-defined]  # bokeh exports these lazily
    ColumnDataSource,
    DataRange1d,
    FactorRange,
    HoverTool,
    Range1d,
    Span,
)
from bokeh.plotting import figure

MAX_WIDTH = 1100  # the report's output column at a 1280 px window
ROW_PX = 22
FRAME_PX = 95  # title, x axis and its label
MIN_HEIGHT = 220  # a figure of two or three rows still reads as a figure
NEUTRAL = "grey"  # reference lines (y = 1)
MARKERS = ("circle", "square", "triangle", "diamond", "inverted_triangle", "hex", "star", "plus")
SYMBOLS = ("●", "■", "▲", "◆", "▼", "⬢", "★", "✚")  # the same markers, in an axis title
# long effective-settings names, shortened for an axis label (the tables keep them whole)
SHORTER = (
    (re.compile(r" \(asked [^)]*\)"), ""),
    (re.compile(r" \(paged file: first block only\)"), ""),
    (re.compile(r"page buffer "), "pb "),
    (re.compile(r"block cache (\S+ \S+) in (\S+ \S+) blocks"), r"block cache \1/\2"),
)
FALLBACK = "#1f77b4"


def _order(rows: pd.DataFrame, value: str, descending: bool) -> list[str]:
    """Row names best first (smallest value, or largest when `descending`), top to bottom."""
    best = (
        rows.groupby("name", sort=False)[value].min()
        if not descending
        else rows.groupby("name", sort=False)[value].max()
    )
    names = list(best.sort_values(ascending=not descending, kind="stable").index.astype(str))
    return names[::-1]  # a factor range lists categories bottom to top


def short(name: str) -> str:
    """A configuration name short enough for an axis: "ros3-2.2 · pb 264 MB, block cache 128 MiB/16 MiB"."""
    for pattern, repl in SHORTER:
        name = pattern.sub(repl, name)
    return name


def _figure(names: list[str], title: str, xlabel: str) -> figure:
    height = max(MIN_HEIGHT, FRAME_PX + ROW_PX * len(names))
    p = figure(
        y_range=FactorRange(factors=names),
        width=MAX_WIDTH,
        height=height,
        title=title,
        x_axis_label=xlabel,
        y_axis_label="Backend configuration",
        toolbar_location="right",
        tools="save,reset",
    )
    p.ygrid.grid_line_color = None
    p.yaxis.major_label_orientation = "horizontal"
    p.xaxis.major_label_orientation = "horizontal"
    p.yaxis.major_label_text_font_size = "12px"
    return p


def interval_plot(
    rows: pd.DataFrame,
    value: str,
    title: str,
    xlabel: str,
    palette: dict[str, str],
    low: str | None = None,
    high: str | None = None,
    reference: float | None = None,
    descending: bool = False,
) -> figure | None:
    """Dot (and interval when `low`/`high` exist) per configuration and worker count.

    `rows` has `name` (the row), `series` (its colour), `num-workers` (its marker) and the value
    columns; rows without a value are left out, and None is returned when nothing is left.
    """
    rows = rows[pd.to_numeric(rows[value], errors="coerce").notna()].copy()
    if rows.empty:
        return None
    rows["name"] = rows["name"].astype(str).map(short)
    names = _order(rows, value, descending)
    workers = sorted(int(w) for w in rows["num-workers"].unique())
    series = list(dict.fromkeys(rows["series"].astype(str)))
    key = "  ".join(f"{SYMBOLS[i % len(SYMBOLS)]} {w} worker{'s' if w != 1 else ''}" for i, w in enumerate(workers))
    p = _figure(names, title, f"{xlabel}   {key}")
    # worker counts side by side within a row, so their intervals never hide each other
    step = min(0.22, 0.8 / len(workers))  # all of a row's worker counts within its band
    offsets = {w: (i - (len(workers) - 1) / 2) * step for i, w in enumerate(workers)}
    for s in series:
        part = rows[rows["series"].astype(str) == s]
        color = palette.get(s, FALLBACK)
        for w in workers:
            sub = part[part["num-workers"] == w]
            if sub.empty:
                continue
            y = [(n, offsets[w]) for n in sub["name"]]
            data = {"x": sub[value].to_numpy(float), "y": y, "name": list(sub["name"]), "workers": [w] * len(sub)}
            if low and high:
                data["lo"] = pd.to_numeric(sub[low], errors="coerce").fillna(sub[value]).to_numpy(float)
                data["hi"] = pd.to_numeric(sub[high], errors="coerce").fillna(sub[value]).to_numpy(float)
            src = ColumnDataSource(data)
            if low and high:
                p.segment(x0="lo", x1="hi", y0="y", y1="y", source=src, line_color=color, line_width=2)
            marker = MARKERS[workers.index(w) % len(MARKERS)]
            p.scatter(x="x", y="y", source=src, marker=marker, size=9, fill_color=color, line_color=color)
    tips = [("configuration", "@name"), ("workers", "@workers"), ("value", "@x{0.000}")]
    if low and high:
        tips.append(("95 % interval", "@lo{0.000} – @hi{0.000}"))
    p.add_tools(HoverTool(tooltips=tips))
    if reference is not None:
        p.add_layout(Span(location=reference, dimension="height", line_color=NEUTRAL, line_dash="dashed", line_width=1))
        values = [rows[value]] + (
            [pd.to_numeric(rows[c], errors="coerce") for c in (low, high)] if low and high else []
        )
        lo = min(reference, *(float(v.min()) for v in values))
        hi = max(reference, *(float(v.max()) for v in values))
        pad = (hi - lo) * 0.05 or 0.05
        p.x_range = Range1d(start=lo - pad, end=hi + pad)  # the reference line always in view
    return p


def bar_plot(
    rows: pd.DataFrame, value: str, title: str, xlabel: str, palette: dict[str, str], reference: float | None = None
) -> figure | None:
    """Horizontal bars, one per configuration (one worker count), largest at the bottom."""
    rows = rows[pd.to_numeric(rows[value], errors="coerce").notna()].copy()
    if rows.empty:
        return None
    rows["name"] = rows["name"].astype(str).map(short)
    rows = rows.drop_duplicates("name")
    names = _order(rows, value, descending=False)
    p = _figure(names, title, xlabel)
    for s in dict.fromkeys(rows["series"].astype(str)):
        part = rows[rows["series"].astype(str) == s]
        src = ColumnDataSource({"y": list(part["name"]), "x": part[value].to_numpy(float), "name": list(part["name"])})
        color = palette.get(s, FALLBACK)
        p.hbar(y="y", right="x", left=0, height=0.7, source=src, fill_color=color, line_color=color)
    p.x_range = DataRange1d(start=0)
    p.add_tools(HoverTool(tooltips=[("configuration", "@name"), ("value", "@x{0,0.0}")]))
    if reference is not None:
        p.add_layout(Span(location=reference, dimension="height", line_color=NEUTRAL, line_dash="dashed", line_width=1))
    return p

"""HoloViews/Bokeh figure builders for the reading benchmark's report notebooks.

They are displayed with `setup()` once and `show()` per figure (shotbench.display, shared
with the transfer report; the read notebooks and tests reach them through this module).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import holoviews as hv
import pandas as pd

from shotbench.analyse.analysis import pb_label
from shotbench.display import count_figures, setup, show, use_bokeh  # noqa: F401  the read notebooks' display

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#393b79", "#bcbd22")
# grey and black draw references (y = 1, linear scaling, whiskers), never a series
LEGEND_LIMIT = 1000  # HoloViews hides the legend past 25 glyphs by default: 13 lines of curve + markers
WIDTH, HEIGHT = 600, 380
WORKERS = hv.Dimension("num-workers", label="Number of Dask workers")
MODE_TITLES = {"shots": "All signals of one shot file", "signals": "All signals of all shot files"}


SHADES = (0.0, 0.45, -0.35, 0.7, -0.6)  # a hue's variants: mixed toward white (+) or black (-)


def family(series: str) -> str:
    """The backend a series belongs to: its name before the settings ("ros3-2.2 · block cache …")."""
    return str(series).split(" · ", 1)[0]


def _shade(color: str, amount: float) -> str:
    target = 255 if amount > 0 else 0
    rgb = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(c + (target - c) * abs(amount)):02x}" for c in rgb)


def colors(series: Iterable[str]) -> dict[str, str]:
    """One fixed colour per series, shared by every figure of a report: a hue per backend and a
    shade of it per setting, so a backend's series read as one family and no two series share a
    colour (up to 50 series). Page-buffer sizes add dash and marker on top (`_pb_styles`)."""
    names = list(dict.fromkeys(map(str, series)))
    families = list(dict.fromkeys(map(family, names)))
    out: dict[str, str] = {}
    for name in sorted(names, key=lambda n: (families.index(family(n)), n)):  # the legend order too
        hue = PALETTE[families.index(family(name)) % len(PALETTE)]
        shades = [_shade(hue, amount) for amount in SHADES]
        out[name] = next((c for c in shades if c not in out.values()), shades[-1])
    return out


def _line_name(df: pd.DataFrame) -> pd.Series:
    """Series name, plus the page buffer when a mode mixes several page-buffer sizes (unless the
    name already says what page buffer libhdf5 used)."""
    names = df["series"].astype(str)
    if df["pb-size"].nunique() > 1:
        said = names.str.contains("page buffer", regex=False)
        return names.where(said, names + " · page buffer " + df["pb-size"].map(pb_label))
    return names


DASHES = ("solid", "dashed", "dotted", "dashdot")
MARKERS = ("circle", "square", "triangle", "diamond")


def _pb_styles(df: pd.DataFrame) -> dict[int, tuple[str, str]]:
    """Page-buffer sizes of one series are told apart by dash and marker; colour is the series."""
    sizes = sorted(int(x) for x in df["pb-size"].unique())
    return {pb: (DASHES[i % len(DASHES)], MARKERS[i % len(MARKERS)]) for i, pb in enumerate(sizes)}


def _legend_order(groups: Any, palette: dict[str, str]) -> list[tuple[tuple[Any, ...], pd.DataFrame]]:
    """(line, series, pb-size) groups in legend order: by backend and series, then page buffer."""

    def key(group: tuple[tuple[Any, ...], pd.DataFrame]) -> tuple[int, int, int]:
        (_, series, pb), _ = group
        backend, own = _rank(palette, str(series))
        return backend, int(pb), own

    return sorted(groups, key=key)


def _lines(
    df: pd.DataFrame, y: str, ylabel: str, palette: dict[str, str], hover: list[str], names: Callable[[str], str] = str
) -> hv.Overlay:
    """Line + scatter per line name (as `names` writes it in the legend), coloured by series."""
    df = df.assign(line=_line_name(df))
    styles = _pb_styles(df)
    ydim = hv.Dimension(y, label=ylabel)
    layers = []
    for (name, series, pb), part in _legend_order(df.groupby(["line", "series", "pb-size"], sort=False), palette):
        part = part.sort_values("num-workers")
        color = palette.get(series, PALETTE[0])
        dash, marker = styles[int(pb)]
        vdims = [ydim] + [c for c in hover if c != y]
        layers.append(
            hv.Curve(part, WORKERS, vdims, label=names(str(name))).opts(color=color, line_width=2, line_dash=dash)
        )
        layers.append(
            hv.Scatter(part, WORKERS, vdims, label=names(str(name))).opts(
                color=color, size=7, marker=marker, tools=["hover"]
            )
        )
    return hv.Overlay(layers)


LEGEND_EM_PER_CHAR = 0.52  # mean advance of a legend character (Bokeh's sans-serif), in font sizes
LEGEND_PX = (10, 13)  # smallest legend font we print, and Bokeh's own
LEGEND_ROW = 80  # glyph, padding, border and margin of a legend row, px


def legend_fit(labels: list[str], width: int = WIDTH) -> tuple[int, int]:
    """(font px, figure width) at which the longest legend label is drawn whole: the largest font up
    to Bokeh's 13 px that fits `width`, and where even 10 px is too large a wider figure (long names
    of effective settings were cut off at the right edge)."""
    longest = max((len(label) for label in labels), default=0)
    if not longest:
        return LEGEND_PX[1], width
    px = min(max(int((width - LEGEND_ROW) / (LEGEND_EM_PER_CHAR * longest)), LEGEND_PX[0]), LEGEND_PX[1])
    return px, max(width, LEGEND_ROW + int(LEGEND_EM_PER_CHAR * px * longest) + 1)


def _frame(overlay: hv.Overlay, title: str, ylabel: str, xmax: float, legend: str = "bottom") -> hv.Overlay:
    font, width = legend_fit(_labels(overlay))
    return overlay.opts(
        hv.opts.Overlay(
            title=title,
            xlabel="Number of Dask workers",
            ylabel=ylabel,
            xlim=(0, xmax * 1.05 + 1),
            xticks=_worker_ticks(overlay),
            ylim=(0, None),
            width=width,
            height=HEIGHT + 22 * len(_labels(overlay)),
            show_grid=True,
            legend_position=legend,
            legend_cols=1,  # long effective-settings names: one column, never clipped
            legend_limit=LEGEND_LIMIT,
            legend_opts={"label_text_font_size": f"{font}px"},
            toolbar="right",
        )
    )


def _worker_ticks(overlay: hv.Overlay) -> list[int]:
    """Ticks at the worker counts that ran (never 0.5 or 1.5 workers)."""
    counts: set[int] = set()
    for el in overlay:
        if "num-workers" in [d.name for d in el.kdims]:
            counts.update(int(w) for w in el.dimension_values("num-workers"))
    return sorted(counts)


def _labels(overlay: hv.Overlay) -> list[str]:
    return list(dict.fromkeys(el.label for el in overlay if el.label))


def ratio_plot(table: pd.DataFrame, mode: str, palette: dict[str, str]) -> hv.Overlay:
    """Performance ratio vs workers, with y = 1 and the linear-scaling line for reference."""
    use_bokeh()
    df = table[table["obj-type"] == mode]
    w0 = int(df["num-workers"].min())
    wmax = int(df["num-workers"].max())
    ideal = pd.DataFrame({"num-workers": [w0, wmax], "norm-tot-runtime": [1.0, wmax / w0]})
    ref = hv.Curve(ideal, WORKERS, "norm-tot-runtime", label=f"linear scaling from {w0} worker(s)").opts(
        color="grey", line_dash="dashed", line_width=1
    )
    one = hv.HLine(1).opts(color="grey", line_width=0.8)
    lines = _lines(df, "norm-tot-runtime", "Performance ratio", palette, ["total-runtime", "trials"])
    ymax = max(float(df["norm-tot-runtime"].max()) * 1.15, 1.2)
    overlay = _frame(
        ref * one * lines, f"{MODE_TITLES.get(mode, mode)}: performance ratio", "Baseline ÷ runtime (>1 faster)", wmax
    )
    return overlay.opts(hv.opts.Overlay(ylim=(0, ymax)))


def runtime_plot(
    table: pd.DataFrame, mode: str, palette: dict[str, str], names: Callable[[str], str] = str
) -> hv.Overlay:
    """Total runtime (median over trials) vs workers; `names` shortens the legend's series names."""
    use_bokeh()
    df = table[table["obj-type"] == mode]
    lines = _lines(df, "total-runtime", "Total runtime [s]", palette, ["norm-tot-runtime", "trials"], names)
    first = df[(df["series"] == df["series"].iloc[0]) & (df["pb-size"] == df["pb-size"].iloc[0])].sort_values(
        "num-workers"
    )
    w0, t0 = int(first["num-workers"].iloc[0]), float(first["total-runtime"].iloc[0])
    ws = sorted(set(df["num-workers"]) | {w0})
    ideal = pd.DataFrame({"num-workers": ws, "total-runtime": [t0 * w0 / w for w in ws]})
    ref = hv.Curve(
        ideal, WORKERS, "total-runtime", label=f"linear scaling of {names(str(first['series'].iloc[0]))}"
    ).opts(color="grey", line_dash="dashed", line_width=1)
    return _frame(
        ref * lines, f"{MODE_TITLES.get(mode, mode)}: total runtime", "Total runtime [s]", int(df["num-workers"].max())
    )


def scaling_plots(table: pd.DataFrame, mode: str, palette: dict[str, str]) -> hv.Layout:
    """The seed's pair of figures, for any number of series: ratio and runtime vs workers."""
    return (
        (ratio_plot(table, mode, palette) + runtime_plot(table, mode, palette))
        .opts(hv.opts.Layout(shared_axes=False))
        .cols(2)
    )


def _rank(palette: dict[str, str], name: str) -> tuple[int, int]:
    """Position of a series in the report's order: its backend's, then its own (unknown names last),
    so a legend lists a backend's series together."""
    order = list(palette)
    families = list(dict.fromkeys(map(family, order)))
    fam = family(name)
    return (
        families.index(fam) if fam in families else len(families),
        order.index(name) if name in order else len(order),
    )


def metric_plot(
    metrics: pd.DataFrame,
    mode: str,
    column: str,
    ylabel: str,
    title: str,
    palette: dict[str, str],
    one_line: bool = False,
) -> hv.Overlay | None:
    """Any per-case metric (raw-GET ratio, GETs, MB, efficiency) vs workers; None if absent."""
    use_bokeh()
    df = metrics[(metrics["obj-type"] == mode) & metrics[column].notna()]
    if df.empty:
        return None
    layers = _lines(df, column, ylabel, palette, ["total-runtime", "trials"])
    if one_line:
        layers = hv.HLine(1).opts(color="grey", line_width=0.8) * layers
    return _frame(layers, f"{MODE_TITLES.get(mode, mode)}: {title}", ylabel, int(df["num-workers"].max()))


def raw_get_plot(metrics: pd.DataFrame, mode: str, palette: dict[str, str]) -> hv.Overlay | None:
    """Share of the raw-GET ceiling each backend reaches (1 = as fast as plain GETs)."""
    return metric_plot(
        metrics,
        mode,
        "raw-get-ratio",
        "Raw-GET runtime ÷ runtime (1 = ceiling)",
        "ratio to the raw-GET ceiling",
        palette,
        one_line=True,
    )


def requests_plots(metrics: pd.DataFrame, mode: str, palette: dict[str, str]) -> hv.Layout | None:
    """GET requests and megabytes fetched per case: how much each backend asks of S3."""
    gets = metric_plot(metrics, mode, "gets", "GET requests per case", "GET requests per case", palette)
    mb = metric_plot(metrics, mode, "MB", "MB fetched per case (10⁶ bytes)", "MB fetched per case", palette)
    parts = [p for p in (gets, mb) if p is not None]
    if not parts:
        return None
    return hv.Layout(parts).opts(hv.opts.Layout(shared_axes=False)).cols(2)


def efficiency_plot(metrics: pd.DataFrame, mode: str, palette: dict[str, str]) -> hv.Overlay | None:
    """Harness efficiency: busy task time ÷ (workers × wall time); low means idle workers."""
    return metric_plot(
        metrics,
        mode,
        "harness-efficiency",
        "Harness efficiency (task time ÷ workers × runtime)",
        "harness efficiency",
        palette,
        one_line=True,
    )


def ratio_ci_plot(ratios: pd.DataFrame, mode: str, palette: dict[str, str]) -> hv.Overlay | None:
    """Speed relative to the reference series with bootstrap 95 % intervals across trials."""
    use_bokeh()
    df = ratios[ratios["obj-type"] == mode]
    if df.empty:
        return None
    ref = str(df["reference"].iloc[0])
    df = df.assign(neg=(df["ratio"] - df["ci-low"]).fillna(0.0), pos=(df["ci-high"] - df["ratio"]).fillna(0.0))
    layers = [hv.HLine(1).opts(color="grey", line_width=0.8)]
    df = df.assign(line=_line_name(df))
    styles = _pb_styles(df)
    for (name, series, pb), part in _legend_order(df.groupby(["line", "series", "pb-size"], sort=False), palette):
        part = part.sort_values("num-workers")
        color = palette.get(series, PALETTE[0])
        dash, marker = styles[int(pb)]
        vd = [hv.Dimension("ratio", label=f"Speed vs {ref}")]
        layers.append(hv.Curve(part, WORKERS, vd, label=str(name)).opts(color=color, line_width=2, line_dash=dash))
        layers.append(
            hv.Scatter(part, WORKERS, vd + ["ci-low", "ci-high", "trials"], label=str(name)).opts(
                color=color, size=7, marker=marker, tools=["hover"]
            )
        )
        layers.append(hv.ErrorBars(part, WORKERS, ["ratio", "neg", "pos"]).opts(color=color, line_width=1.5))
    ylabel = f"Speed vs {ref} (its runtime ÷ runtime), 95 % CI"
    return _frame(
        hv.Overlay(layers),
        f"{MODE_TITLES.get(mode, mode)}: speed relative to {ref}",
        ylabel,
        int(df["num-workers"].max()),
    )

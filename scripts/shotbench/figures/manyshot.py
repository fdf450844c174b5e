"""HoloViews figures of the many-shot study: one line per (layout, order, page buffer).

Colour is the (layout, order) pair, because that is the 10x effect; dash and marker are the
page buffer. One panel per source (upstream old/new, or a run's backends), legends below.
Display them with `plots.show()` after `plots.setup()`, like every other report figure.
"""

from __future__ import annotations

import holoviews as hv
import pandas as pd

from shotbench.analyse import multishot
from shotbench.display import use_bokeh
from shotbench.figures import plots

PAIR_COLORS = {
    ("shot", "shots"): "#1f77b4", ("signal", "signals"): "#2ca02c",
    ("shot", "signals"): "#d62728", ("signal", "shots"): "#ff7f0e",
}  # fmt: skip


def _case_lines(table: pd.DataFrame, source: str, y: str, ylabel: str, title: str, logy: bool = False) -> hv.Overlay:
    """Lines vs workers for one source; hover shows runtime, hit rates and the row count."""
    use_bokeh()
    df = table[(table["source"] == source) & table[y].notna()].copy()
    df["case"] = multishot.case_labels(df)
    pbs = sorted(int(x) for x in df["pb-size"].unique())
    layers = []
    hover = ["tot-runtime", "normalized-runtime", "pb-raw-hitrate", "pb-meta-hitrate", "rows"]
    for (layout, order, pb), part in df.groupby(["layout", "obj-type", "pb-size"], sort=True):
        part = part.groupby("num-workers", as_index=False).median(numeric_only=True).assign(case=part["case"].iloc[0])
        label = str(part["case"].iloc[0])
        color = PAIR_COLORS.get((layout, order), plots.PALETTE[0])
        k = pbs.index(int(pb))
        vdims = [hv.Dimension(y, label=ylabel)] + [c for c in hover if c != y]
        layers.append(
            hv.Curve(part, plots.WORKERS, vdims, label=label).opts(
                color=color, line_width=2, line_dash=plots.DASHES[k % len(plots.DASHES)]
            )
        )
        layers.append(
            hv.Scatter(part, plots.WORKERS, vdims, label=label).opts(
                color=color, size=7, marker=plots.MARKERS[k % len(plots.MARKERS)], tools=["hover"]
            )
        )
    overlay = hv.Overlay(layers)
    xmax = int(df["num-workers"].max()) if not df.empty else 1
    return overlay.opts(hv.opts.Overlay(
        title=f"{source}: {title}", xlabel="Number of Dask workers", ylabel=ylabel,
        width=plots.WIDTH, height=plots.HEIGHT + 30 * len(layers) // 4, show_grid=True,
        legend_position="bottom", legend_cols=2, toolbar="right", logy=logy,
        xlim=(0, xmax * 1.05 + 1), **({} if logy else {"ylim": (0, None)}),
    ))  # fmt: skip


def _per_source(table: pd.DataFrame, y: str, ylabel: str, title: str, logy: bool = False) -> hv.Layout:
    panels = [_case_lines(table, s, y, ylabel, title, logy) for s in dict.fromkeys(table["source"])]
    return hv.Layout(panels).opts(hv.opts.Layout(shared_axes=False)).cols(2)


def runtime_plots(table: pd.DataFrame) -> hv.Layout:
    """Total runtime vs workers (log scale: the combinations differ tenfold)."""
    return _per_source(table, "tot-runtime", "Total runtime [s] (log scale)", "total runtime", logy=True)


def normalized_plots(table: pd.DataFrame) -> hv.Layout:
    """Runtime ÷ the fastest combination at the same worker count (1 = the best layout/order)."""
    return _per_source(table, "normalized-runtime", "Runtime ÷ fastest combination (1 = best)",
                       "runtime relative to the best layout and order")  # fmt: skip


def hitrate_plots(table: pd.DataFrame, column: str = "pb-raw-hitrate") -> hv.Layout | None:
    """Page-buffer hit rate (mean over worker tasks) per group; None when nothing recorded it."""
    df = table[table[column].notna()]
    if df.empty:
        return None
    what = "raw-data" if "raw" in column else "metadata"
    return _per_source(df, column, f"Page-buffer {what} hit rate [%]", f"page-buffer {what} hit rate")

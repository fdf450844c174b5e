"""The compare command's page: the per-case table and one plot of the ratios with their intervals."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from shotbench.diskspace import atomic_write
from shotbench.studies.compare.comparison import flags


def write_html(table: pd.DataFrame, title: str, path: Path, gates: str = "", correction: str = "holm") -> Path:
    """A small offline page: the table and one plot of the ratios with their CIs."""
    import holoviews as hv

    from shotbench import display as figures
    from shotbench.figures import plots

    setup = figures.setup().text
    df = table.assign(
        neg=(table["ratio"] - table["ci-low"]).fillna(0), pos=(table["ci-high"] - table["ratio"]).fillna(0)
    )
    case = hv.Dimension("case", label="Case (backend, mode, workers, page buffer)")
    ratio = hv.Dimension("ratio", label="Median task time B ÷ A (>1: B slower)")
    fig = (
        hv.HLine(1).opts(color="grey")
        * hv.Scatter(df, case, [ratio, "p-adjusted"]).opts(size=8, color=plots.PALETTE[0], tools=["hover"])
        * hv.ErrorBars(df, case, ["ratio", "neg", "pos"]).opts(color=plots.PALETTE[0])
    ).opts(
        hv.opts.Overlay(
            title="Median ratio per case, 95 % bootstrap interval",
            xlabel=case.label,
            ylabel=ratio.label,
            width=max(600, 60 * len(df)),
            height=420,
            xrotation=30,
            show_legend=False,
            show_grid=True,
        )
    )
    shown = table.assign(flag=flags(table))
    body = shown.drop(columns=["slower", "over-limit"]).to_html(
        index=False, float_format=lambda v: f"{v:.4g}", border=0
    )
    how = "Holm" if correction == "holm" else "Benjamini-Hochberg"
    intro = (
        f"<p>{html.escape(title)}. Per case: median task read time of B ÷ A over every task of every trial "
        f"(<code>unit</code> says where only trial runtimes were there), bootstrap 95 % interval (a side pooled "
        f"from several runs is resampled run by run, then task by task), two-sided "
        f"Mann-Whitney p, adjusted over the cases ({how}); <code>runtime-ratio</code> is the ratio of median "
        f"case runtimes; <code>vs-copy</code> = B's runtime ÷ the raw-GET time of the same bytes. "
        f"{html.escape(gates)}</p>"
    )
    atomic_write(
        path,
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>{setup}'
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;white-space:nowrap}</style></head>"
        f"<body><h1>shotbench compare</h1>{intro}{body}{figures.show(fig).text}</body></html>\n",
    )
    return path

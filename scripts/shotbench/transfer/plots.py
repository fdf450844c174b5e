"""hvplot figures for the transfer report: one panel per file size, tools side by side."""

from __future__ import annotations

import holoviews as hv
import pandas as pd
from hvplot import hvPlotTabular  # not hvplot.pandas: that loads the notebook extension from a CDN

from shotbench.transfer.analysis import latency_summary, loopback, main_concurrency, summarize


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
        g = g.sort_values("mb-per-s", ascending=False)
        panels.append(
            hvPlotTabular(g).bar(
                x="column",
                y="mb-per-s",
                title=f"{direction}: {test} ({conc} threads)",
                rot=45,
                width=520,
                height=340,
                xlabel="",
                ylabel="MB/s (median of verified trials)",
                hover_cols=["seconds", "concurrency"],
                color="#1f77b4" if direction == "upload" else "#2ca02c",
            )
        )
    return hv.Layout(panels).cols(2)


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


def latency_sweep(cases: pd.DataFrame, direction: str) -> hv.Layout | None:
    """Sync vs async under latency: MB/s against requests in flight, a line per tool (sync and
    async forms of s3fs and obstore), a panel per network profile and file size."""
    s = latency_summary(cases)
    s = s[s["direction"] == direction]
    swept = s.groupby(["network", "test"])["concurrency"].nunique()
    keep = [k for k, n in swept.items() if n > 1 or k[0] != "loopback"]  # a one-file row has one level
    s = s[s.set_index(["network", "test"]).index.isin(keep)]
    if s.empty:
        return None
    panels = []
    nets = sorted(s["network"].unique(), key=lambda n: (n != "loopback", n))
    for net in nets:
        for test, g in s[s["network"] == net].sort_values(["file-size", "file-count"]).groupby("test", sort=False):
            g = g.sort_values("concurrency")
            panels.append(
                hvPlotTabular(g).line(
                    x="concurrency",
                    y="mb-per-s",
                    by="tool",
                    logx=True,
                    title=f"{direction} · {net} · {test}",
                    width=420,
                    height=300,
                    xlabel="requests in flight",
                    ylabel="MB/s",
                )
                * hvPlotTabular(g).scatter(x="concurrency", y="mb-per-s", by="tool", logx=True)
            )
    return hv.Layout(panels).cols(3)

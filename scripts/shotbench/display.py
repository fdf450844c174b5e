"""Showing HoloViews/Bokeh figures in a report so that they survive export, for every notebook.

The usual notebook display of hvplot/holoviews objects loads BokehJS and Panel from CDNs and
relies on Jupyter comms, so an exported HTML opened from disk shows nothing. `setup()` instead
puts BokehJS inline once, and `show()` embeds each figure as a self-contained Bokeh document
(`bokeh.embed.components`): the same HTML works in JupyterLab, in nbconvert output and offline.
"""

from __future__ import annotations

from functools import lru_cache

import holoviews as hv
from bokeh.embed import components
from bokeh.model import Model
from bokeh.models import Plot
from bokeh.resources import Resources

PLOT_CLASS = "shotbench-plot"  # the wrapper htmlcheck.figure_count counts


@lru_cache(maxsize=1)
def use_bokeh() -> None:
    """Make Bokeh HoloViews' plotting backend, without the notebook output hv.extension writes."""
    import holoviews.plotting.bokeh  # noqa: F401  registers the renderer

    hv.Store.set_current_backend("bokeh")


@lru_cache(maxsize=1)
def bokeh_js() -> str:
    """BokehJS (core only: the figures use no widgets, tables or WebGL) as an inline script."""
    res = Resources(mode="inline", components=["bokeh"])
    return "\n".join(f'<script type="text/javascript">{js}</script>' for js in res.js_raw)


class _Html:
    """An HTML output with nothing but text/html, so every frontend and exporter keeps it."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_html_(self) -> str:
        return self.text


def setup() -> _Html:
    """Load the Bokeh plotting backend; display the result once, before the first `show()`."""
    use_bokeh()
    return _Html(bokeh_js())


def _model(obj: hv.core.Dimensioned | Model) -> Model:
    """A Bokeh model: figures built with Bokeh directly as they are, HoloViews objects rendered."""
    if isinstance(obj, Model):
        return obj
    use_bokeh()
    return hv.render(obj, backend="bokeh")


def count_figures(obj: hv.core.Dimensioned | Model) -> int:
    """How many Bokeh plots a figure renders to (what the browser test expects)."""
    return len(list(_model(obj).select({"type": Plot})))


def show(obj: hv.core.Dimensioned | Model) -> _Html:
    """Embed a figure as a standalone Bokeh document (needs `setup()` displayed earlier)."""
    model = _model(obj)
    n = len(list(model.select({"type": Plot})))
    script, div = components(model)
    return _Html(f'<div class="{PLOT_CLASS}" data-figures="{n}">{div}{script}</div>')

"""Pieces of a report page that are not figures: collapsed tables and where a notebook writes.

The main page of a report carries the argument; raw tables sit in `<details>` blocks, closed,
one click away, so the page stays short and nothing is hidden from a reader who wants it.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from shotbench.paths import reports_dir

LAB_DIR = "lab"  # tables of a notebook run by hand (JupyterLab): under reports/, which git ignores


class _Html:
    """An output with nothing but text/html, which every frontend and exporter keeps."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_html_(self) -> str:
        return self.text


def _html(part: Any) -> str:
    if hasattr(part, "_repr_html_"):
        return str(part._repr_html_())
    if hasattr(part, "to_html"):
        return str(part.to_html())
    return f"<p>{html.escape(str(part))}</p>"


def details(summary: str, *parts: Any) -> _Html:
    """A closed `<details>` block holding tables (DataFrames, Stylers) or text under a one-line summary."""
    body = "\n".join(_html(p) for p in parts)
    return _Html(
        f'<details class="shotbench-appendix"><summary>{html.escape(summary)}</summary>\n'
        f'<div style="overflow-x: auto">{body}</div></details>'
    )


def output_dir(given: str | Path | None) -> Path:
    """Where a notebook writes its CSVs: the folder papermill was given, else reports/lab/ (never
    notebooks/, so opening a notebook in JupyterLab leaves the checkout clean)."""
    out = Path(given) if given not in (None, "", ".") else reports_dir() / LAB_DIR
    out.mkdir(parents=True, exist_ok=True)
    return out

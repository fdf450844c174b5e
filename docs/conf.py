"""Sphinx configuration of shotbench's documentation site (`make site`).

Sphinx with MyST: the pages are Markdown, the CLI reference comes from the argparse parser
itself (sphinx-argparse), and the theme is the one dask, xarray, pandas and numpy use, so
readers find their way. The built site loads nothing from another host.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent / "scripts"))

project = "shotbench"
author = "the shotbench developers"
copyright = "2026, the shotbench developers"  # noqa: A001 (Sphinx's name)

extensions = ["myst_parser", "sphinxarg.ext"]
source_suffix = {".md": "markdown"}
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4  # GitHub-style anchors, so `page.md#a-heading` links resolve
exclude_patterns = ["_build", "README.md"]
suppress_warnings = ["myst.header"]  # moved sections keep their own heading levels

html_theme = "pydata_sphinx_theme"
html_title = "shotbench"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": [],
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": []}
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None

# generated reference pages (config keys from BenchConfig), written before the build reads them
from shotbench.reports.sitedocs import write_generated  # noqa: E402

write_generated(DOCS)

"""Find what an HTML report would fetch from the network.

A report is meant to be opened from disk, offline, years later: any script, stylesheet or font
it loads from a URL is a figure that may silently vanish. The report command and the tests both
use this check.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_REMOTE = re.compile(r"^\s*(?:https?:)?//", re.IGNORECASE)
_CSS_URL = re.compile(r"(?:@import\s+|url\()\s*['\"]?((?:https?:)?//[^'\")\s]+)", re.IGNORECASE)
_JS_IMPORT = re.compile(r"""(?:\bimport\s*\(\s*|\bfrom\s+|\bimportScripts\s*\(\s*)['"]((?:https?:)?//[^'"]+)['"]""")
# loaders such as Panel's keep their resource lists as plain strings and inject the tags later
_JS_RESOURCE = re.compile(r"""['"]((?:https?:)?//[^'"\s]+?\.(?:m?js|css)(?:\?[^'"\s]*)?)['"]""")

# BokehJS carries this URL and fetches it only to typeset LaTeX labels; report figures have none,
# and the browser test records every request the page makes.
ON_DEMAND: tuple[str, ...] = ("https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js",)


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k.lower(): (v or "") for k, v in attrs}
        if tag == "script" and _REMOTE.match(a.get("src", "")):
            self.found.append(a["src"])
        if tag == "link" and _REMOTE.match(a.get("href", "")):
            rel = a.get("rel", "").lower()
            if any(r in rel for r in ("stylesheet", "preload", "modulepreload", "icon", "import")):
                self.found.append(a["href"])
        if tag in ("img", "iframe", "embed", "source", "video", "audio") and _REMOTE.match(a.get("src", "")):
            self.found.append(a["src"])
        self._in = tag if tag in ("style", "script") else None

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "style":
            self.found += _CSS_URL.findall(data)
        elif self._in == "script":
            self.found += _JS_IMPORT.findall(data) + _JS_RESOURCE.findall(data)


def external_resources(html: str) -> list[str]:
    """URLs the page loads from the network on open (links a reader may click are fine)."""
    collector = _Collector()
    collector.feed(html)
    return [u for u in dict.fromkeys(collector.found) if u not in ON_DEMAND]


def figure_count(html: str) -> int:
    """Bokeh figures embedded by `plots.show()` (each wrapper records how many it holds)."""
    return sum(int(n) for n in re.findall(r'class="shotbench-plot" data-figures="(\d+)"', html))

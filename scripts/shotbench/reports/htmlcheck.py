"""Find what an HTML report would fetch from the network.

A report is meant to be opened from disk, offline, years later: any script, stylesheet or font
it loads from a URL is a figure that may silently vanish. The report command and the tests both
use this check.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from html import unescape
from html.parser import HTMLParser
from typing import Any

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
    """Bokeh figures embedded by `figures.show()` (each wrapper records how many it holds)."""
    return sum(int(n) for n in re.findall(r'class="shotbench-plot" data-figures="(\d+)"', html))


# --- What each embedded Bokeh figure shows: series, legend entries, axis labels ---------------

_DOCS_JSON = re.compile(r"docs_json = '([^']*)'")
# colours that draw references (y = 1, linear scaling) or box whiskers, never a series
NEUTRAL_COLORS = frozenset({"black", "grey", "gray", "#000000", "#808080", "#7f7f7f"})


@dataclass
class FigureInfo:
    """One Bokeh figure as a reader sees it: title, axis labels, coloured series, legend entries."""

    title: str
    xlabel: str
    ylabel: str
    series_colors: set[str]
    legend: list[str]
    unlabelled: int  # coloured glyph renderers that no legend entry names
    mixed_entries: list[str]  # legend entries whose glyphs have more than one colour
    alike: list[tuple[str, str]]  # pairs of legend entries drawn with the same colour, dash and marker
    rows_named: bool = False  # a categorical y axis: its labels name every row, no legend needed
    rotated: list[str] = field(default_factory=list)  # axes whose tick labels are not horizontal


def bokeh_documents(html: str) -> list[dict]:
    """The Bokeh documents `bokeh.embed.components` wrote into the page, decoded back to JSON.

    Bokeh HTML-escapes the JSON, replaces single quotes and doubles backslashes; undo that.
    """
    docs = []
    for m in _DOCS_JSON.finditer(html):
        text = unescape(m.group(1).replace("\\\\", "\\"))
        docs.extend(json.loads(text).values())
    return docs


def _objects(node: Any, out: dict[str, dict]) -> None:
    """Every serialised model by id (later references carry only the id)."""
    if isinstance(node, dict):
        if node.get("type") == "object" and "id" in node and "name" in node:
            out.setdefault(node["id"], node)
        for value in node.values():
            _objects(value, out)
    elif isinstance(node, list):
        for value in node:
            _objects(value, out)


def _color(glyph: dict) -> str | None:
    """The constant colour of a glyph (fill for areas and markers, line for lines)."""
    attrs = glyph.get("attributes", {})
    for key in ("fill_color", "line_color"):
        value = attrs.get(key)
        if isinstance(value, dict) and "value" in value:
            value = value["value"]
        if isinstance(value, str):
            return value.lower()
    return None


def _value(attr: Any) -> Any:
    """A glyph attribute as drawn: Bokeh writes constants either bare or as {"type": "value", …}."""
    if isinstance(attr, dict) and "value" in attr:
        attr = attr["value"]
    return tuple(attr) if isinstance(attr, list) else attr


def _look(glyph: dict) -> tuple[Any, ...]:
    """What tells one glyph from another on the page: colour, line dash, marker."""
    attrs = glyph.get("attributes", {})
    return (_color(glyph), _value(attrs.get("line_dash", ())), _value(attrs.get("marker")), glyph.get("name"))


def figures(html: str) -> list[FigureInfo]:
    """Inspect every Figure of every embedded Bokeh document."""
    out = []
    for doc in bokeh_documents(html):
        objs: dict[str, dict] = {}
        _objects(doc, objs)

        def get(ref: Any) -> dict:
            return objs.get(str(ref.get("id")), {}) if isinstance(ref, dict) else {}  # noqa: B023 - called within this iteration only

        for fig in (o for o in objs.values() if o["name"] == "Figure"):
            a = fig.get("attributes", {})
            axes = {side: [get(r) for r in a.get(side, [])] for side in ("below", "above", "left", "right", "center")}

            def label(side: str, axes: dict[str, list[dict]] = axes) -> str:
                """The axis title on one side of this figure ("" when it has none)."""
                titles = (
                    str(x["attributes"].get("axis_label") or "")
                    for x in axes[side]
                    if x.get("name", "").endswith("Axis")
                )
                return next(titles, "")

            colors: dict[str, str] = {}
            looks: dict[str, tuple[Any, ...]] = {}
            for r in map(get, a.get("renderers", [])):
                if r.get("name") != "GlyphRenderer":
                    continue
                glyph = get(r["attributes"].get("glyph"))
                c = _color(glyph)
                if c and c not in NEUTRAL_COLORS:
                    colors[r["id"]] = c
                    looks[r["id"]] = _look(glyph)
            legend, covered, mixed = [], set(), []
            drawn: dict[frozenset, str] = {}
            alike: list[tuple[str, str]] = []
            for lg in (x for side in axes.values() for x in side if x.get("name") == "Legend"):
                for item in map(get, lg["attributes"].get("items", [])):
                    lab = item["attributes"].get("label")
                    text = str(lab.get("value", lab)) if isinstance(lab, dict) else str(lab)
                    ids = [ref.get("id") for ref in item["attributes"].get("renderers", [])]
                    legend.append(text)
                    covered.update(ids)
                    if len({colors[i] for i in ids if i in colors}) > 1:
                        mixed.append(text)
                    look = frozenset(looks[i] for i in ids if i in looks)
                    if look and look in drawn:
                        alike.append((drawn[look], text))
                    drawn.setdefault(look, text)
            title = get(a.get("title"))
            rotated = [
                f"{side} axis"
                for side in ("below", "above", "left", "right")
                for x in axes[side]
                if x.get("name", "").endswith("Axis")
                and x["attributes"].get("major_label_orientation", "horizontal") not in ("horizontal", 0, 0.0)
            ]
            out.append(
                FigureInfo(
                    title=str(title.get("attributes", {}).get("text", "")),
                    xlabel=label("below") or label("above"),
                    ylabel=label("left") or label("right"),
                    series_colors=set(colors.values()),
                    legend=legend,
                    unlabelled=len(set(colors) - covered),
                    mixed_entries=mixed,
                    alike=alike,
                    rows_named=get(a.get("y_range")).get("name") == "FactorRange",
                    rotated=rotated,
                )
            )
    return out


def legend_problems(html: str) -> list[str]:
    """What makes a figure unreadable: several series with no legend entry each, no axis labels, or
    rotated tick labels. A figure whose y axis names every row (a ranked dot or bar plot) needs no legend.

    A series is a set of glyphs a legend entry names; every coloured glyph must be named by
    exactly one entry, entries must not repeat or mix colours, no two entries may be drawn alike
    (same colour, dash and marker: the reader could not tell which line is which), and a figure
    with several colours must have at least as many entries as colours.
    """
    problems = []
    for f in figures(html):
        name = f.title or "an untitled figure"
        if not f.xlabel or not f.ylabel:
            problems.append(f"{name}: an axis has no label")
        if f.rotated:
            problems.append(f"{name}: tick labels of the {f.rotated[0]} are rotated")
        if (len(f.series_colors) < 2 and len(f.legend) < 2) or (f.rows_named and not f.legend):
            continue
        if not f.legend:
            problems.append(f"{name}: {len(f.series_colors)} coloured series and no legend")
            continue
        if f.unlabelled:
            problems.append(f"{name}: {f.unlabelled} coloured glyph(s) not named by any legend entry")
        if len(set(f.legend)) != len(f.legend):
            problems.append(f"{name}: legend entries repeat")
        if f.alike:
            problems.append(f"{name}: legend entries {f.alike[0][0]!r} and {f.alike[0][1]!r} are drawn alike")
        if f.mixed_entries:
            problems.append(f"{name}: legend entry {f.mixed_entries[0]!r} names glyphs of several colours")
        if len(f.legend) < len(f.series_colors):
            problems.append(f"{name}: {len(f.series_colors)} colours but {len(f.legend)} legend entries")
    return problems

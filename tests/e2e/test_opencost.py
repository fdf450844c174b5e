"""The open-cost finding's sentences, from reproducer rows whose answer is known by construction."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from shotbench.studies.opencost import opencost

MiB = 2**20


def _row(env: str, lib: str, obj: str, pb: int, open_only: bool, **kw: float) -> dict:
    base = {"open_ms": 10.0, "read_ms": 1.0, "mb_per_open": 16.0, "gets_per_open": 1.0, "heads_per_open": 1.0}
    base.update(connections_per_open=1.0, requests="HEAD whole; GET bytes=0-15999999", opens=12)
    base.update(kw)
    size = 1_000_000 if obj == "1MB" else 16_000_000
    return {
        "env": env,
        "libhdf5": lib,
        "object": obj,
        "object_bytes": size,
        "page_buffer": pb,
        "open_only": open_only,
        **base,
    }


def _rows() -> pd.DataFrame:
    old, new = ("hdf5-1.14", "1.14.6"), ("hdf5-2.0", "2.0.0")
    return pd.DataFrame(
        [
            _row(*old, "16MB", 0, True),
            _row(*new, "16MB", 0, True, gets_per_open=2.0, open_ms=60.0),
            _row(*old, "16MB", 0, False),
            _row(*old, "16MB", 256 * MiB, False, mb_per_open=24.0, gets_per_open=2.0),  # page 2 again
            _row(*new, "16MB", 256 * MiB, False, gets_per_open=2.0),
            _row(*old, "1MB", 0, True, mb_per_open=1.0, open_ms=4.0),
            _row(*new, "1MB", 0, True, mb_per_open=1.0, open_ms=45.0),
        ]
    )


def test_the_findings_name_the_refetch_and_the_fixed_cost_with_their_numbers() -> None:
    text = "\n".join(opencost.findings(_rows()))
    assert "1.14.6 re-downloads a page it already holds" in text and "24.0 MB in 2 GETs" in text
    assert "4.0 ms with 1.14.6 and 45.0 ms with 2.0.0: 41.0 ms more per open" in text


def test_the_fixes_quantify_what_each_change_saves() -> None:
    fixes = opencost.fixes(_rows())
    assert "save 8.0 MB and 1 GET per open" in fixes[0] and "33%" in fixes[0]
    assert "At most 41.0 ms per open" in fixes[1]
    assert "2 GETs" in fixes[2]


def test_no_refetch_is_not_claimed_when_the_bytes_match() -> None:
    rows = _rows()
    rows.loc[(rows["env"] == "hdf5-1.14") & (rows["page_buffer"] > 0), ["mb_per_open", "gets_per_open"]] = [16.0, 1.0]
    assert "does not re-download" in "\n".join(opencost.findings(rows))
    assert not any("cached range" in f for f in opencost.fixes(rows))


def test_both_figures_name_every_series_in_a_legend() -> None:
    from shotbench.display import setup, show
    from shotbench.reports.htmlcheck import figures, legend_problems
    from shotbench.studies.opencost import opencost_figures as figs

    setup()
    rows = _rows()
    bars = show(figs.open_time_bars(rows)).text
    assert legend_problems(bars) == [] and figures(bars)[0].legend == ["1.14.6 (hdf5-1.14)", "2.0.0 (hdf5-2.0)"]
    knobs = pd.DataFrame(
        [
            {"knob": k, "value": v, "page buffer": "pb 0", "obj-type": m, "ratio-vs-1.14": r}
            | {"ci-low": r - 0.1, "ci-high": r + 0.1, "trials": 3}
            for k, v, m, r in [("latency", "0 ms", "shots", 0.9), ("latency", "70 ms", "signals", 1.1)]
        ]
    )
    ratios = show(figs.knob_ratio_plot(knobs)).text
    assert legend_problems(ratios) == [] and figures(ratios)[0].legend == ["shots", "signals"]


@pytest.mark.notebook
@pytest.mark.slow
def test_the_published_ablation_renders_with_its_answer_first(tmp_path: Path) -> None:
    """The open-cost report of the ablation run in data/runs: the answer, both figures with
    legends, the reproducer's table, and what an upstream fix would change."""
    from shotbench.reports.htmlcheck import external_resources, figure_count, legend_problems
    from shotbench.reports.render import direction_run, render_direction

    run = direction_run("latest")
    assert (run / "open-cost.csv").is_file() and (run / "cells.csv").is_file()
    html = render_direction(run, hide_code=True, out=tmp_path).read_text(encoding="utf-8")
    assert html.index("The answer") < html.index("One knob at a time") < html.index("What an upstream fix")
    assert "re-download" in html and "The fixed cost of an open" in html
    assert figure_count(html) == 2 and legend_problems(html) == [] and external_resources(html) == []


def test_a_reproducer_report_becomes_one_row_of_medians_with_counted_requests() -> None:
    """The first open pays for imports and is left out; GETs and HEADs are counted from the
    request lines of the warm opens."""
    from shotbench.studies.opencost.opencost_run import from_report

    lines = ["HEAD whole", "GET bytes=0-8388607", "GET bytes=8388608-15999999"]
    opens = [{"open_ms": 900.0, "read_ms": 0.0, "requests": lines}] + [
        {"open_ms": 40.0 + i, "read_ms": 0.0, "requests": lines} for i in range(11)
    ]
    report = {"libhdf5": "2.0.0", "page_buffer": 0, "open_only": True, "opens": opens}
    report |= {"median_read_ms": 0.0, "median_connections_per_open": 1, "median_MB_per_open": 16.002}
    row = from_report("hdf5-2.0", "16MB", 16_000_000, report)
    assert (row.gets_per_open, row.heads_per_open, row.opens) == (2.0, 1.0, 12)
    assert row.open_ms == 45.0 and row.open_ms_low <= 45.0 <= row.open_ms_high < 900
    assert row.requests == "; ".join(lines)


def test_a_finished_open_cost_csv_resumes_without_a_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When open-cost.csv already has every row, measure() returns it untouched before making
    files, starting the server or building environments; one row short, it goes on to measure."""
    from shotbench.store import embedded as server
    from shotbench.studies.opencost import opencost_run as measured

    def unexpected(*args: object, **kwargs: object) -> None:
        raise AssertionError("started")

    monkeypatch.setattr(server, "embedded_server", unexpected)
    monkeypatch.setattr(measured, "ensure_python", unexpected)
    monkeypatch.setattr(measured, "_files", unexpected)
    out = tmp_path / measured.CSV
    row = measured.OpenCost("", "", "", 0, 0, True, 12, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, "")
    every = [
        (e, n, pb, o)
        for e in measured.ENVS
        for n in measured.OBJECTS
        for pb in measured.PAGE_BUFFERS
        for o in (True, False)
    ]
    for env, name, pb, open_only in every[:-1]:
        measured._append(out, dataclasses.replace(row, env=env, object=name, page_buffer=pb, open_only=open_only))
    with pytest.raises(AssertionError, match="started"):
        measured.measure(tmp_path)
    env, name, pb, open_only = every[-1]
    measured._append(out, dataclasses.replace(row, env=env, object=name, page_buffer=pb, open_only=open_only))
    text = out.read_text()
    assert measured.measure(tmp_path) == out and out.read_text() == text

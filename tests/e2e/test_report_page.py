"""A run's report as a reader meets it: answer first, evidence after, raw tables collapsed, no code.

Rendered from a small real run folder with `shotbench report --run X --output D` (papermill,
nbconvert) and opened in headless Chromium at 1280 px, the window of a published report's reader.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shotbench.cli import main
from support.golden import ROOT
from support.golden import RUN_FIXTURE as RUN

RUN_ID = "20261122T000000Z-fixture"
# the main page's sections, in the order a reader needs them
SECTIONS = [
    "The answer",
    "The decision",
    "Why",
    "How this compares with the upstream study",
    "What was measured",
    "Appendix: every raw table",
]
WIDTH = 1280
FIRST_SCREEN = 1000  # px: the answer and the decision table are seen without scrolling
MAIN_PAGE = 8000  # px: everything above the appendix


def checkout(root: Path, runs: dict[str, Path]) -> dict[str, str]:
    """A scratch checkout holding `runs` under data/runs; the environment that points shotbench at it."""
    (root / "data" / "runs").mkdir(parents=True)
    (root / "data" / "fixtures").symlink_to(ROOT / "data" / "fixtures")
    (root / "notebooks").symlink_to(ROOT / "notebooks")
    for name, src in runs.items():
        shutil.copytree(src, root / "data" / "runs" / name)
    return {**os.environ, "SHOTBENCH_ROOT": str(root)}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`shotbench report --run X --output D`, with no flag about code."""
    root = tmp_path_factory.mktemp("checkout")
    env = checkout(root, {RUN_ID: RUN})
    out = tmp_path_factory.mktemp("elsewhere") / "report"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "shotbench.cli",
            "report",
            "--run",
            str(root / "data" / "runs" / RUN_ID),
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert not (root / "reports").exists()  # --output is where it went, and nowhere else
    return out


@pytest.mark.slow
@pytest.mark.notebook
def test_output_is_honoured_for_a_run(rendered: Path) -> None:
    for name in ("ros3-backends.html", "ros3-backends.ipynb", "decision.csv", "summary.csv"):
        assert (rendered / name).is_file(), name


@pytest.mark.slow
@pytest.mark.notebook
def test_sections_come_in_order_and_code_is_hidden(rendered: Path) -> None:
    html = (rendered / "ros3-backends.html").read_text(encoding="utf-8")
    at = [html.find(f">{title}<") for title in SECTIONS]
    assert -1 not in at, dict(zip(SECTIONS, at))
    assert at == sorted(at)
    assert "highlight hl-ipython3" not in html and "inputs = " not in html  # not even the parameters cell
    why = html[at[2] : at[3]]
    assert 3 <= why.count("<h3") <= 6  # the findings, each under its own heading
    appendix = html[at[-1] :]
    assert appendix.count("<details") >= 5 and "<details open" not in appendix


@pytest.mark.slow
@pytest.mark.notebook
def test_code_is_shown_on_request(rendered: Path, tmp_path: Path) -> None:
    from shotbench.reports.render import export_html

    shown = export_html(rendered / "ros3-backends.ipynb", tmp_path / "shown.html", False, "t").read_text(
        encoding="utf-8"
    )
    assert "highlight hl-ipython3" in shown


@pytest.mark.slow
@pytest.mark.browser
def test_first_screen_holds_the_answer_and_the_page_fits(rendered: Path) -> None:
    from shotbench.reports.htmlcheck import figures
    from shotbench.reports.screenshot import layout

    html = rendered / "ros3-backends.html"
    page = layout(html, width=WIDTH)
    assert page.top_of("The answer") < FIRST_SCREEN
    assert page.first_table_top is not None and page.first_table_top < FIRST_SCREEN
    assert page.top_of("The answer") < page.first_table_top
    assert page.top_of("Appendix") <= MAIN_PAGE
    assert page.code_cells == 0
    assert page.figures and all(right <= WIDTH for _, right in page.figures), page.figures
    assert [f.title for f in figures(html.read_text(encoding="utf-8")) if f.rotated] == []


def test_flags_that_do_not_apply_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for args, words in (
        (["--run", str(RUN), "--name", "x"], "--name"),
        (["--latest-transfer", "--baseline", "ros3-2.0"], "--baseline"),
    ):
        assert main(["report", *args]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"shotbench: {words}"), lines


def test_index_lists_every_run_with_its_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rendered run shows its one-line answer and links its pages; one not rendered is listed too."""
    from shotbench.analyse import analysis, decision
    from shotbench.reports.render import INDEX_NAME, rendered_entries, write_index

    other = "20261123T000000Z-other"
    env = checkout(tmp_path, {RUN_ID: RUN, other: RUN})
    meta = json.loads((RUN / "run.json").read_text())
    (tmp_path / "data" / "runs" / other / "run.json").write_text(json.dumps({**meta, "run_id": other}))
    monkeypatch.setenv("SHOTBENCH_ROOT", env["SHOTBENCH_ROOT"])
    folder = tmp_path / "reports" / RUN_ID
    folder.mkdir(parents=True)
    (folder / "ros3-backends.html").write_text("<html></html>")
    (folder / "multi-shot.html").write_text("<html></html>")
    table = decision.decision_table(analysis.load([f"fx={RUN}"]))
    decision.write_decision(table, folder)
    index = write_index(rendered_entries()).read_text(encoding="utf-8")
    assert index == (tmp_path / "reports" / INDEX_NAME).read_text(encoding="utf-8")
    assert f'href="{RUN_ID}/ros3-backends.html"' in index and f'href="{RUN_ID}/multi-shot.html"' in index
    assert decision.one_line(table) in index
    assert other in index and "not rendered" in index


def test_a_notebook_run_by_hand_writes_under_reports_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """JupyterLab runs the notebooks with their own defaults: their tables go to reports/lab/ (which
    git ignores), never into notebooks/."""
    import nbformat

    from shotbench.reports.page import output_dir

    monkeypatch.setenv("SHOTBENCH_ROOT", str(tmp_path))
    for name in ("ros3-backends", "multi-shot", "transfer", "readers"):
        nb = nbformat.read(str(ROOT / "notebooks" / f"{name}.ipynb"), as_version=4)
        (params,) = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        defaults: dict = {}
        exec(params.source, defaults)
        assert output_dir(defaults["output_dir"]) == tmp_path / "reports" / "lab", name
        assert "report_output_dir(output_dir)" in "".join(c.source for c in nb.cells), name
    assert output_dir(str(tmp_path / "given")) == tmp_path / "given"
    assert "/reports/" in (ROOT / ".gitignore").read_text().splitlines()


def test_readme_opens_with_the_published_answer_and_its_screenshot() -> None:
    """The README's first screen: the question, the two commands, the answer, the screenshot (committed)."""
    import re

    top = "\n".join((ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:25])
    assert "make bench-ros3" in top and "make test" in top and "published answer" in top
    shots = re.findall(r"\]\((data/screenshots/[^)]+\.png)\)", top)
    assert shots and all((ROOT / s).is_file() for s in shots), shots


def test_ranked_figures_put_the_best_on_top_in_each_series_colour() -> None:
    import pandas as pd

    from shotbench.figures import dotplots, plots
    from shotbench.reports.htmlcheck import figures, legend_problems

    rows = pd.DataFrame(
        {
            "name": ["slow", "fast", "mid"] * 2,
            "series": ["slow", "fast", "mid"] * 2,
            "num-workers": [1, 1, 1, 2, 2, 2],
            "runtime": [3.0, 1.0, 2.0, 2.5, 0.8, 1.9],
        }
    )
    palette = plots.colors(["fast", "mid", "slow"])
    fig = dotplots.interval_plot(rows, "runtime", "t", "Runtime [s]", palette)
    assert list(fig.y_range.factors)[::-1] == ["fast", "mid", "slow"]  # top to bottom
    html = plots.show(fig).text
    (info,) = figures(html)
    assert info.series_colors == set(palette.values()) and info.rotated == [] and legend_problems(html) == []
    assert "● 1 worker" in info.xlabel and "■ 2 workers" in info.xlabel
    bars = dotplots.bar_plot(rows[rows["num-workers"] == 1], "runtime", "t", "Runtime [s]", palette)
    assert list(bars.y_range.factors)[::-1] == ["fast", "mid", "slow"]
    long = "ros3-2.2 · page buffer 264 MB (asked 256 MiB), block cache 128 MiB in 16 MiB blocks (paged file: first block only)"
    assert dotplots.short(long) == "ros3-2.2 · pb 264 MB, block cache 128 MiB/16 MiB"

"""The report's "compared with the upstream study" section, rendered from real run folders."""

from __future__ import annotations

import shutil
from pathlib import Path

from shotbench.analyse.upstream_section import published_ablation, study_ratios, upstream_section

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "data" / "runs" / "20261124T065219Z-b7936b"  # a published default run (http, loopback)


def test_study_ratios_are_the_fixture_csvs() -> None:
    """From upstream's own per-worker CSVs: signals 0.40–0.85 (2.x faster), shots 0.63–1.33."""
    s = study_ratios()
    assert round(s["signals"].low, 2) == 0.40 and round(s["signals"].high, 2) == 0.85
    assert s["signals"].direction() == "2.x faster"
    assert round(s["shots"].low, 2) == 0.63 and round(s["shots"].high, 2) == 1.33
    assert len(s["signals"].ratios) == 6 and len(s["shots"].ratios) == 9  # signals ran from 8 workers


def test_section_names_both_directions_and_the_leads(tmp_path: Path) -> None:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)  # alone in its runs folder: no ablation beside it
    text = upstream_section(run)
    assert text.startswith(f"### The study and run `{run.name}`")
    assert "| signals | 0.40–0.85 (median 0.67) | 2.x faster |" in text
    assert "2.x slower" in text and "The directions differ in" in text
    # the leads, measured in this run: 1.14 moves 24 MB per open with a page buffer, 16 without
    assert "24.0 MB" in text and "16.0 MB" in text and "plain http" in text


def test_section_quotes_a_published_ablation(tmp_path: Path) -> None:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    ablation = tmp_path / "20990101T000000Z-abcdef"
    ablation.mkdir()
    (ablation / "run.json").write_text('{"kind": "direction", "status": "complete"}')
    (ablation / "direction.md").write_text(
        "# x\n\n## Which knobs move the ratio across 1\n\n- **https vs http** (signals, pb 256 MiB): 0.81 at https "
        "vs 1.06 at http (intervals clear of 1).\n\nNot tested in this run: page size.\n"
    )
    assert published_ablation(tmp_path) == ablation
    text = upstream_section(run)
    assert "20990101T000000Z-abcdef" in text and "**https vs http**" in text and "0.81 at https" in text
    assert "No published direction ablation" not in text

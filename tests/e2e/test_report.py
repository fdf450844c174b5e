"""`shotbench report` / `reports` end to end: a real papermill kernel, real nbconvert, real files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from shotbench.cli import main
from shotbench.errors import UserError
from shotbench.reports.htmlcheck import external_resources, figure_count
from support.golden import (
    MANY_SHOT_GROUPS,
    MANY_SHOT_REPORT_FIGURES,
    REFERENCE_REPORT_FIGURES,
    ROOT,
    RUN_REPORT_FIGURES,
    assert_published,
)
from support.golden import (
    RUN_FIXTURE as RUN,
)
from support.golden import (
    SINGLE_OLD as OLD,
)

RUN_ID = "20261122T000000Z-fixture"
OLD_L, NEW_L = "old-ros3-1.14", "new-ros3-2.0dev"  # labels of `report --reference`


def shotbench(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "shotbench.cli", *args], capture_output=True, text=True, env=env, timeout=900
    )


@pytest.fixture(scope="module")
def reference_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`shotbench report --reference` in a scratch checkout: the upstream study from the fixtures."""
    root = tmp_path_factory.mktemp("checkout")
    (root / "data").mkdir()
    (root / "data" / "fixtures").symlink_to(ROOT / "data" / "fixtures")
    (root / "notebooks").symlink_to(ROOT / "notebooks")
    done = shotbench("report", "--reference", env={**os.environ, "SHOTBENCH_ROOT": str(root)})
    assert done.returncode == 0, done.stderr
    return root / "reports" / "mdsplusbench"


@pytest.mark.notebook
def test_reference_report_is_listed_in_the_index(reference_report: Path) -> None:
    index = (reference_report.parent / "index.html").read_text(encoding="utf-8")
    assert 'href="mdsplusbench/ros3-backends.html"' in index and "MDSplusBench" in index


@pytest.mark.slow
def test_reference_report_reproduces_the_seed(reference_report: Path) -> None:
    for name in ("ros3-backends.ipynb", "ros3-backends.html", "summary.csv"):
        assert (reference_report / name).is_file(), name
    s = pd.read_csv(reference_report / "summary.csv")
    assert list(s.columns) == [
        "label",
        "backend",
        "obj-type",
        "pb-size",
        "num-workers",
        "trials",
        "total-runtime",
        "norm-tot-runtime",
        "count",
        "mean",
        "std",
        "min",
        "25%",
        "50%",
        "75%",
        "max",
        "series",
        "effective",
    ]
    by_case = s.set_index(["label", "obj-type", "num-workers"])
    assert_published(
        lambda label, mode, workers, column: by_case.loc[(label, mode, workers), column], {"old": OLD_L, "new": NEW_L}
    )
    assert s["backend"].isna().all()  # plain CSVs: backend left empty


@pytest.mark.slow
def test_reference_report_html_is_offline_and_complete(reference_report: Path) -> None:
    html = (reference_report / "ros3-backends.html").read_text(encoding="utf-8")
    assert external_resources(html) == []
    assert figure_count(html) == REFERENCE_REPORT_FIGURES
    assert "MIT-PSFC/MDSplusBench" in html
    assert "256 MiB" in html
    assert f'"value":"{OLD_L}"' in html and f'"value":"{NEW_L}"' in html  # legends name the inputs
    assert '"value":"Local"' not in html  # the seed's mislabel of the old backend
    assert "tot-num-obj was 500" in html
    nb = nbformat.read(str(reference_report / "ros3-backends.ipynb"), as_version=4)
    assert not [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert "highlight hl-ipython3" not in html  # code hidden by default (--code shows it)


def test_not_a_schema_csv_is_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "other.csv"
    bad.write_text("a,b,c\n1,2,3\n")
    assert main(["report", "--input", f"x={bad}", "--output", str(tmp_path / "out")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("shotbench: ") and "lacks the columns worker#, obj-id" in lines[0]
    assert not (tmp_path / "out").exists()


def test_usage_mistakes_are_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["report", "--input", f"x={OLD}"]) == 2
    assert "--output DIR" in capsys.readouterr().err
    assert main(["report", "--latest", "--run", str(RUN)]) == 2
    assert "choose one of" in capsys.readouterr().err
    monkeypatch.setenv("SHOTBENCH_ROOT", str(tmp_path))
    assert main(["report", "--latest"]) == 2
    err = capsys.readouterr().err
    assert "no runs in" in err and "make bench-ros3" in err
    assert main(["report", "--run", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_the_latest_ablation_is_the_newest_direction_folder_of_data_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`report --direction latest` finds the newest folder of kind "direction", not a newer read run."""
    from shotbench.reports.render import direction_run

    monkeypatch.setenv("SHOTBENCH_ROOT", str(tmp_path))
    runs = tmp_path / "data" / "runs"
    runs.mkdir(parents=True)
    with pytest.raises(UserError, match="no ablation runs"):
        direction_run("latest")
    for name, kind in (("20260101T-a", "direction"), ("20260102T-b", "direction"), ("20260103T-c", "read")):
        (runs / name).mkdir()
        (runs / name / "run.json").write_text(json.dumps({"kind": kind}))
    assert direction_run("latest") == runs / "20260102T-b"


@pytest.mark.notebook
@pytest.mark.slow
def test_reports_renders_runs_and_writes_the_index(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    (root / "data" / "runs").mkdir(parents=True)
    shutil.copytree(RUN, root / "data" / "runs" / RUN_ID)
    (root / "data" / "fixtures").symlink_to(ROOT / "data" / "fixtures")  # the upstream study, as in a checkout
    (root / "notebooks").symlink_to(ROOT / "notebooks")
    env = {**os.environ, "SHOTBENCH_ROOT": str(root)}
    done = shotbench("reports", "--no-code", env=env)
    assert done.returncode == 0, done.stderr
    out = root / "reports" / RUN_ID
    html = (out / "ros3-backends.html").read_text(encoding="utf-8")
    assert "highlight hl-ipython3" not in html  # code cells hidden
    assert external_resources(html) == []
    assert figure_count(html) == RUN_REPORT_FIGURES
    metrics = pd.read_csv(out / "metrics.csv")
    assert {"raw-get-ratio", "gets", "MB", "harness-efficiency"} <= set(metrics.columns)
    ratios = pd.read_csv(out / "ratios.csv")
    assert ratios["ci-low"].notna().all() and (ratios["ci-low"] <= ratios["ratio"]).all()
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary["backend"]) == {"ros3-1.14", "ros3-2.0", "raw-get"}
    index = (root / "reports" / "index.html").read_text(encoding="utf-8")
    assert f'href="{RUN_ID}/ros3-backends.html"' in index
    for text in (
        "2026-11-22T00:00:00Z",
        "s3://shotbench-fixture/shots",
        "ros3-1.14, ros3-2.0, raw-get",
        "1.14.6, 2.0.0",
    ):
        assert text in index
    assert json.loads((RUN / "run.json").read_text())["run_id"] == RUN_ID


@pytest.mark.notebook
@pytest.mark.slow
def test_mistake_found_inside_the_notebook_is_one_sentence(tmp_path: Path) -> None:
    done = shotbench("report", "--input", f"fx={RUN}", "--output", str(tmp_path), "--baseline", "ros3-9")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "shotbench: baseline 'ros3-9' matches no input; choose one of: ros3-1.14, ros3-2.0, raw-get."
    ]


def test_reference_renders_the_many_shot_study_too(reference_report: Path) -> None:
    html = (reference_report / "multi-shot.html").read_text(encoding="utf-8")
    assert figure_count(html) == MANY_SHOT_REPORT_FIGURES and not external_resources(html)
    groups = pd.read_csv(reference_report / "groups.csv")
    assert len(groups) == MANY_SHOT_GROUPS
    index = (reference_report.parent / "index.html").read_text(encoding="utf-8")
    assert 'href="mdsplusbench/multi-shot.html"' in index

"""The upstream many-shot study read as published: groups, statistics, plots and refusals.

Numbers are checked against values computed here with the csv module straight from the
bundled CSVs, and against the headline figures of the upstream notebook.
"""

from __future__ import annotations

import csv
import gzip
import statistics
from pathlib import Path

import holoviews as hv
import nbformat
import pandas as pd
import pytest
from bokeh.models import Legend

from shotbench.analyse import multishot
from shotbench.cli import main
from shotbench.errors import UserError
from shotbench.figures import manyshot as multishot_plots
from shotbench.figures import plots
from support.golden import MANY_SHOT_GROUPS, MANY_SHOT_HEADLINE, ROOT, SINGLE_OLD
from support.golden import MULTI_NEW as NEW
from support.golden import MULTI_OLD as OLD


def _rows(path: Path) -> list[dict[str, str]]:
    with gzip.open(path, "rt", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return multishot.groups(multishot.load([f"old={OLD}", f"new={NEW}"]))


def test_the_80_upstream_groups_across_old_and_new(table: pd.DataFrame) -> None:
    assert len(table) == MANY_SHOT_GROUPS
    assert (table["runtimes"] == 1).all()  # one tot-runtime per (file, order, pb, workers)
    assert sorted(table["num-workers"].unique()) == [1, 2, 4, 8, 16]
    assert sorted(table["pb-size"].unique()) == [64_000_000, 264_000_000]
    assert (table["rows"] == table["num-workers"]).all()  # one row per worker task


@pytest.mark.parametrize("label,path", [("old", OLD), ("new", NEW)])
def test_a_sample_of_groups_matches_an_independent_computation(table: pd.DataFrame, label: str, path: Path) -> None:
    by_key: dict[tuple[str, str, int, int], list[dict[str, str]]] = {}
    for r in _rows(path):
        by_key.setdefault((r["file"], r["obj-type"], int(r["pb-size"]), int(r["num-workers"])), []).append(r)
    assert len(by_key) == 40
    for key in sorted(by_key)[::7]:  # every 7th group: both files, orders and page buffers
        rows = by_key[key]
        got = table[(table["source"] == label) & (table["file"] == key[0]) & (table["obj-type"] == key[1])
                    & (table["pb-size"] == key[2]) & (table["num-workers"] == key[3])]  # fmt: skip
        assert len(got) == 1, key
        g = got.iloc[0]
        assert g["tot-runtime"] == pytest.approx(float(rows[0]["tot-runtime"]), rel=1e-12)
        assert g["rows"] == len(rows)
        assert g["layout"] == ("signal" if key[0].endswith("_reorder.hdf5") else "shot")
        for col in ("mean-obj-time", "open-file-time", "pb-raw-hitrate", "pb-meta-hitrate"):
            assert g[col] == pytest.approx(statistics.fmean(float(r[col]) for r in rows), rel=1e-9), (key, col)


def test_headline_reproduces_the_upstream_numbers(table: pd.DataFrame) -> None:
    """1.14 on S3, 1 worker, 264 MB page buffer: 261 / 2,535 / 1,947 / 750 s."""
    h = multishot.headline(table).loc["old"]
    assert {(layout, order): round(h.loc[layout, order]) for layout, order in MANY_SHOT_HEADLINE} == MANY_SHOT_HEADLINE
    assert (multishot.layout_order_ratios(table)["slowest ÷ fastest"] > 9).all()
    best = table[table["normalized-runtime"] == 1.0]
    assert set(best["layout"] + "/" + best["obj-type"]) == {"shot/shots"}


def test_raw_hit_rates_fall_into_groups_by_layout_and_order(table: pd.DataFrame) -> None:
    means = table.groupby(["layout", "obj-type"])["pb-raw-hitrate"].agg(["min", "max"])
    # reading across the storage order hits far less than reading along it
    assert means.loc[("shot", "signals"), "max"] < means.loc[("signal", "signals"), "min"]
    assert means.loc[("signal", "shots"), "max"] < means.loc[("shot", "shots"), "min"]


def test_describe_covers_times_and_hit_rates_per_group() -> None:
    df = multishot.load([f"old={OLD}"])
    d = multishot.describe(df)
    assert len(d) == 8  # 2 layouts x 2 orders x 2 page buffers
    assert {c[0] for c in d.columns} == set(multishot.DESCRIBED)
    assert (d[("mean-obj-time", "count")] == 31).all()  # 1+2+4+8+16 worker rows


def test_local_disk_variant_loads_by_column_name(tmp_path: Path) -> None:
    """Other column order, pb-size 0, empty page-buffer statistics: still the same groups."""
    df = pd.read_csv(OLD)
    df["pb-size"] = 0
    for col in multishot.STATS_COLUMNS:
        df[col] = None
    local = tmp_path / "ec2-local.csv"
    df[list(reversed(df.columns))].to_csv(local, index=False)
    t = multishot.groups(multishot.load([f"local={local}"]))
    assert len(t) == 20 and t["pb-raw-hitrate"].isna().all()
    assert multishot_plots.hitrate_plots(t) is None
    assert plots.count_figures(multishot_plots.runtime_plots(t)) == 1


@pytest.mark.parametrize("figure", ["runtime_plots", "normalized_plots", "hitrate_plots"])
def test_figures_have_one_panel_per_source_and_legends(table: pd.DataFrame, figure: str) -> None:
    fig = getattr(multishot_plots, figure)(table)  # one figure per test: each renders for seconds
    assert plots.count_figures(fig) == 2
    model = hv.render(fig, backend="bokeh")
    legends = list(model.select({"type": Legend}))
    labels = {item.label["value"] for legend in legends for item in legend.items}
    assert len(legends) == 2 and len(labels) == 8  # 2 layouts x 2 orders x 2 page buffers
    assert "shot layout · shots · pb 264 MB" in labels and "signal layout · signals · pb 64 MB" in labels


def test_a_csv_in_no_known_schema_is_refused_with_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "other.csv"
    bad.write_text("file,obj-type,tot-runtime\nx,shots,1\n")
    with pytest.raises(UserError, match="neither an upstream many-shot CSV"):
        multishot.load([f"x={bad}"])
    assert main(["report", "--input", f"x={bad}", "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "neither upstream schema" in err
    assert not (tmp_path / "out").exists()


def test_many_shot_and_single_shot_csvs_do_not_share_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    single = SINGLE_OLD
    assert main(["report", "--input", f"a={OLD}", "--input", f"b={single}", "--output", str(tmp_path / "o")]) == 2
    assert "separate --input sets" in capsys.readouterr().err


def test_notebook_has_a_parameters_cell_and_no_stored_outputs() -> None:
    nb = nbformat.read(str(ROOT / "notebooks" / "multi-shot.ipynb"), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    assert all(not c.outputs and c.execution_count is None for c in code)


def _run_folder(tmp_path: Path) -> Path:
    """A layouts run's workers.csv: single-shot families, many-shot layouts, partial reads."""
    from shotbench.records.schema import WORKER_COLUMNS

    rows = []
    for fam, layout, mode, runtime in [
        ("single-16MB", "single", "shots", 1.0), ("single-big-paged", "single", "shots", 4.0),
        ("single-16MB", "single", "partial-once", 0.2), ("single-16MB", "single", "partial-each", 0.9),
        ("many-shot-layout", "shot", "shots", 2.0), ("many-shot-layout", "shot", "signals", 20.0),
        ("many-signal-layout", "signal", "shots", 15.0), ("many-signal-layout", "signal", "signals", 3.0),
    ]:  # fmt: skip
        for w in (1, 2):
            rows.append({"worker#": w, "obj-id": "*", "open+read-data-time": runtime, "wrkr-num-objs": 2,
                         "mean-obj-time": runtime / 2, "num-dsets": 4, "mean-dset-time": runtime / 4,
                         "pb-size": 8_000_000, "num-workers": 2, "obj-type": mode, "tot-num-obj": 8,
                         "total-runtime": runtime, "backend": "ros3-2.0", "trial": 1, "open-file-time": 0.01,
                         "read-data-time": runtime - 0.01, "gather-time": 0.05, "layout": layout,
                         "file-family": fam})  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    pd.DataFrame(rows, columns=WORKER_COLUMNS).to_csv(run / "workers.csv", index=False)
    return run


def test_a_layouts_run_splits_into_single_shot_many_shot_and_partial_tables(tmp_path: Path) -> None:
    run = _run_folder(tmp_path)
    assert multishot.has_many_shot_rows(run)
    df = pd.read_csv(run / "workers.csv")
    single = multishot.single_shot_rows(df)
    assert set(single["obj-type"]) == {"shots"} and set(single["backend"]) == {
        "ros3-2.0 · single-16MB",
        "ros3-2.0 · single-big-paged",
    }  # families never share a line
    table = multishot.groups(multishot.load([f"here={run}"]))
    assert len(table) == 4 and set(table["source"]) == {"here ros3-2.0"}
    h = multishot.headline(table, workers=2)
    assert h.loc[("here ros3-2.0", "shot"), "signals"] == 20.0
    partial = multishot.load_partial([f"here={run}"])
    assert partial[("each ÷ once", "")].iloc[0] == pytest.approx(4.5)

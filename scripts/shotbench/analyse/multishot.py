"""Many-shot results: upstream's `hdf5/multi-shot` CSVs and shotbench runs over many-shot files.

Upstream (MIT-PSFC/MDSplusBench) read two files holding the same 500 shots, one stored shot by
shot (`shot500_sig70.hdf5`, the "shot layout") and one signal by signal (`..._reorder.hdf5`,
the "signal layout"), in two orders (`shots`, `signals`), with 64 MB and 264 MB page buffers
and 1-16 Dask workers. Its CSV has one row per worker task in a 20-column schema; its
local-disk variant has the same columns in another order, `pb-size` 0 and empty page-buffer
statistics. Columns are always found by name, so both load, and so do shotbench workers.csv
files whose rows carry a `layout` of `shot` or `signal`.

Everything here is a pure function of the loaded table, so the notebook only narrates and plots.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from shotbench.analyse.text import as_text
from shotbench.errors import UserError
from shotbench.hdf5.effective import STATS_COLUMNS
from shotbench.plan.matrix import MODES

UPSTREAM_MANY_COLUMNS: tuple[str, ...] = (
    "open-file-time", "pb-size", "pb-meta-accesses", "pb-meta-hitrate", "pb-meta-evicts",
    "pb-raw-accesses", "pb-raw-hitrate", "pb-raw-evicts", "read-data-time", "wrkr-num-objs",
    "mean-obj-time", "num-dsets", "mean-dset-time", "worker#", "num-workers", "file", "obj-type",
    "tot-num-obj", "gather-time", "tot-runtime",
)  # fmt: skip
# What a shotbench workers.csv of a many-shot run must have (its runtime is `total-runtime`).
OUR_MANY_COLUMNS: tuple[str, ...] = (
    "worker#", "obj-type", "pb-size", "num-workers", "total-runtime", "mean-obj-time",
    "open-file-time", "read-data-time", "gather-time", "layout", "backend",
)  # fmt: skip
LAYOUTS = ("shot", "signal")
GROUP_KEYS = ["source", "file", "layout", "obj-type", "pb-size", "num-workers", "trial"]
DESCRIBED = ["mean-obj-time", "open-file-time", "pb-meta-hitrate", "pb-raw-hitrate"]


def schema_of(columns: Iterable[str]) -> str | None:
    """ "upstream" (20-column many-shot CSV, any order), "shotbench" (a many-shot run's
    workers.csv), or None when the columns are neither."""
    cols = set(columns)
    if set(UPSTREAM_MANY_COLUMNS) <= cols:
        return "upstream"
    if set(OUR_MANY_COLUMNS) <= cols:
        return "shotbench"
    return None


def layout_of(file: str) -> str:
    """Upstream's file names say the layout: `_reorder` is the signal-by-signal copy."""
    return "signal" if "reorder" in Path(str(file)).name else "shot"


@dataclass(frozen=True)
class Source:
    """One labelled input: an upstream many-shot CSV, or a shotbench run folder / workers.csv."""

    label: str
    path: Path


def parse_sources(spec: str | Iterable[str] | Mapping[str, str | Path]) -> list[Source]:
    """`LABEL=PATH` strings (or a {label: path} mapping) into sources whose files exist."""
    if isinstance(spec, (str, Path)):
        spec = [str(spec)]
    pairs = (
        list(spec.items())
        if isinstance(spec, Mapping)
        else [tuple(s.split("=", 1)) if "=" in str(s) else (Path(str(s)).name.split(".")[0], s) for s in spec]
    )
    out = []
    for label, path in pairs:
        p = Path(str(path)).expanduser()
        p = p / "workers.csv" if p.is_dir() else p
        if not p.is_file():
            raise UserError(f"input {path} does not exist; pass LABEL=PATH with a many-shot CSV or a run folder.")
        out.append(Source(str(label).strip(), p))
    if not out:
        raise UserError("no inputs given; pass at least one LABEL=PATH with a many-shot CSV.")
    return out


def read_header(path: Path) -> list[str]:
    """Column names of a CSV (gzip or plain), or one sentence saying why it is not a CSV."""
    try:
        return list(pd.read_csv(path, nrows=0).columns)
    except pd.errors.EmptyDataError:
        raise UserError(f"{path} is empty; pass a per-worker CSV with a header row and data.") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError):
        raise UserError(f"{path} is not a readable CSV; pass a per-worker CSV or a run folder.") from None


def load_one(source: Source) -> pd.DataFrame:
    """One input as the common long table: one row per worker task, columns found by name."""
    schema = schema_of(read_header(source.path))
    if schema is None:
        raise UserError(
            f"{source.path} is neither an upstream many-shot CSV (20 columns such as file, obj-type, "
            "tot-runtime, gather-time) nor a shotbench many-shot workers.csv; pass one of those."
        )
    df = pd.read_csv(source.path, low_memory=False)
    if df.empty:
        raise UserError(f"{source.path} has a header but no rows; pass a CSV with benchmark results.")
    if schema == "upstream":
        df["layout"] = df["file"].map(layout_of)
        df["trial"] = 0
        df["source"] = source.label
    else:
        # raw-get reads the file's bytes, the same in both orders: it is the run's ceiling, not a case here
        df = df[df["layout"].isin(LAYOUTS) & (df["backend"].astype(str) != "raw-get")].copy()
        if df.empty:
            raise UserError(
                f"{source.path} holds no many-shot cases (layout shot or signal); run the `layouts` profile."
            )
        df["tot-runtime"] = df["total-runtime"]
        df["file"] = df.get("file", df["layout"].map(lambda x: f"{x} layout"))
        df["source"] = source.label + " " + as_text(df["backend"])
        df["trial"] = df.get("trial", 0)
    for col in STATS_COLUMNS:
        if col not in df.columns:
            df[col] = float("nan")
        df[col] = pd.to_numeric(df[col], errors="coerce")  # local-disk rows leave them empty
    bad = sorted(set(df["obj-type"].astype(str)) - set(MODES))
    if bad:
        raise UserError(f"{source.path} has obj-type {bad[0]!r}; only 'shots' and 'signals' are known orders.")
    return df


def load(spec: str | Iterable[str] | Mapping[str, str | Path]) -> pd.DataFrame:
    """Every input, concatenated; `source` is the input's label (plus the backend for runs)."""
    frames = [load_one(s) for s in parse_sources(spec)]
    labels = [s for f in frames for s in f["source"].unique()]
    if len(labels) != len(set(labels)):
        raise UserError("two inputs share a label; give every input its own LABEL=PATH label.")
    return pd.concat(frames, ignore_index=True)


def groups(df: pd.DataFrame) -> pd.DataFrame:
    """One row per case: (source, file, layout, order, page buffer, workers[, trial]).

    Every worker row of a case carries the same `tot-runtime`; `rows` counts them, and
    `runtimes` (distinct values, always 1 for a well-formed CSV) guards against mixing cases.
    """
    g = df.groupby(GROUP_KEYS, sort=True, dropna=False)
    out = g.agg(
        **{
            "tot-runtime": ("tot-runtime", "max"),
            "runtimes": ("tot-runtime", "nunique"),
            "rows": ("worker#", "size"),
            "mean-obj-time": ("mean-obj-time", "mean"),
            "open-file-time": ("open-file-time", "mean"),
            "read-data-time": ("read-data-time", "max"),
            "gather-time": ("gather-time", "mean"),
            "pb-meta-hitrate": ("pb-meta-hitrate", "mean"),
            "pb-raw-hitrate": ("pb-raw-hitrate", "mean"),
        }
    ).reset_index()
    best = out.groupby(["source", "num-workers", "trial"])["tot-runtime"].transform("min")
    out["normalized-runtime"] = out["tot-runtime"] / best
    return out


def describe(df: pd.DataFrame, keys: list[str] | None = None) -> pd.DataFrame:
    """pandas `describe()` of the per-worker times and hit rates, per group of `keys`."""
    keys = keys or ["source", "layout", "obj-type", "pb-size"]
    return df.groupby(keys, sort=True)[DESCRIBED].describe()


def headline(table: pd.DataFrame, workers: int | None = None, pb_size: int | None = None) -> pd.DataFrame:
    """Runtime by layout (rows) × order (columns) per source, at the smallest worker count and
    the largest page buffer unless given: the layout × order effect in one table."""
    workers = int(table["num-workers"].min()) if workers is None else workers
    rows = table[table["num-workers"] == workers]
    if pb_size is None:
        pb_size = int(rows["pb-size"].max()) if not rows.empty else 0
    rows = rows[rows["pb-size"] == pb_size]
    return rows.pivot_table(index=["source", "layout"], columns="obj-type", values="tot-runtime", aggfunc="median")


def layout_order_ratios(table: pd.DataFrame) -> pd.DataFrame:
    """Per (source, page buffer, workers): slowest ÷ fastest (layout, order) combination."""
    g = table.groupby(["source", "pb-size", "num-workers"])["tot-runtime"]
    return (g.max() / g.min()).rename("slowest ÷ fastest").reset_index()


def case_labels(table: pd.DataFrame) -> pd.Series:
    """`shot layout · shots · pb 64 MB`, per row: what one line of the many-shot figures shows."""
    pb = table["pb-size"].astype(int)
    buffer = pb.map(lambda b: f"pb {b / 1e6:g} MB" if b else "no pb")
    return table["layout"].astype(str) + " layout · " + table["obj-type"].astype(str) + " · " + buffer


def reference_inputs() -> list[str]:
    """The upstream many-shot study (MIT-PSFC/MDSplusBench, MIT License) as shipped in data/fixtures."""
    from shotbench.paths import data_dir

    base = data_dir() / "fixtures" / "mdsplusbench"
    return [
        f"old-ros3-1.14={base / 'multi-shot-ec2-s3.csv.gz'}",
        f"new-ros3-2.0dev={base / 'multi-shot-ec2-s3-libaws.csv.gz'}",
    ]


def single_shot_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of a run the single-shot analysis reads (a `layouts` run has others).

    Many-shot rows (layout shot/signal) and partial reads belong to this module's report;
    when several single-shot file families remain, the family joins the backend name so
    16 MB and 256 MB files never share a line.
    """
    if "layout" not in df.columns:
        return df
    layout = as_text(df["layout"])
    out = df[~layout.isin(LAYOUTS) & df["obj-type"].astype(str).isin(MODES)].copy()
    family = as_text(out["file-family"]) if "file-family" in out.columns else None
    if family is not None and family.nunique() > 1:
        out["backend"] = as_text(out["backend"]) + " · " + family
    return out


def partial_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of the partial-read workload (k signals of a shot, file opened once or per signal)."""
    return df[df["obj-type"].astype(str).str.startswith("partial-")].copy()


def partial_table(df: pd.DataFrame) -> pd.DataFrame:
    """Partial reads: median case runtime and opens per task, per family, backend, mode and
    page buffer; `each ÷ once` is the cost of reopening the file for every signal."""
    part = partial_rows(df)
    if part.empty:
        return part
    cases = part.groupby(["file-family", "backend", "obj-type", "pb-size", "num-workers", "trial"], dropna=False).agg(
        runtime=("total-runtime", "max"), open_time=("open-file-time", "sum"), signals=("tot-num-obj", "max")
    )
    table = cases.groupby(level=[0, 1, 2, 3, 4]).median().unstack("obj-type")
    if ("runtime", "partial-each") in table.columns and ("runtime", "partial-once") in table.columns:
        table[("each ÷ once", "")] = table[("runtime", "partial-each")] / table[("runtime", "partial-once")]
    return table


def load_partial(spec: str | Iterable[str] | Mapping[str, str | Path]) -> pd.DataFrame:
    """The partial-read table of every shotbench input (empty for upstream CSVs)."""
    frames = []
    for source in parse_sources(spec):
        if schema_of(read_header(source.path)) != "shotbench":
            continue
        df = partial_rows(pd.read_csv(source.path, low_memory=False))
        frames.append(df.assign(backend=source.label + " " + as_text(df["backend"])))
    return partial_table(pd.concat(frames, ignore_index=True)) if frames else pd.DataFrame()


def has_many_shot_rows(run: Path) -> bool:
    """A run folder whose workers.csv holds many-shot or partial-read rows (a `layouts` run)."""
    path = Path(run) / "workers.csv"
    if not path.is_file() or schema_of(read_header(path)) != "shotbench":
        return False
    df = pd.read_csv(path, usecols=["layout", "obj-type"], low_memory=False)
    return bool(df["layout"].isin(LAYOUTS).any() or df["obj-type"].astype(str).str.startswith("partial-").any())

"""Load benchmark results and turn them into the numbers the reports publish.

Two kinds of input carry the same per-worker rows: our run folders (`data/runs/<id>/`, several
backends and trials, plus per-case request counts) and plain CSVs in the upstream 12-column
schema (one backend, one trial per case). Both are normalised into one long table so every
summary is a vectorised groupby, whatever the number of rows.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from shotbench import stats
from shotbench.analyse import multishot
from shotbench.analyse.text import as_text
from shotbench.diskspace import atomic_open
from shotbench.errors import UserError
from shotbench.hdf5.effective import STATS_COLUMNS
from shotbench.plan.matrix import MODES, UPSTREAM_PAGE_BUFFER
from shotbench.records.schema import UPSTREAM_COLUMNS, valid_case_row
from shotbench.records.status import OK, UNSUPPORTED, error_count, legacy_case_status
from shotbench.runs import RUN_JSON, latest_run, read_meta, read_table
from shotbench.store.tlsrecords import TlsRecords
from shotbench.units import MiB

KEYS: list[str] = ["label", "backend", "obj-type", "pb-size", "num-workers"]
DESCRIBE_COLUMNS: list[str] = ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]
SUMMARY_COLUMNS: list[str] = KEYS + ["trials", "total-runtime", "norm-tot-runtime"] + DESCRIBE_COLUMNS
# the series name and what libhdf5 did differently from the request (effective_label)
SUMMARY_COLUMNS += ["series", "effective"]
RAW_GET = "raw-get"


@dataclass(frozen=True)
class Input:
    """One labelled result: a run folder or a plain per-worker CSV."""

    label: str
    path: Path
    kind: str  # "run" | "csv"


@dataclass
class Dataset:
    """All inputs normalised: per-worker rows, per-case rows, run metadata, corrections made."""

    inputs: list[Input]
    workers: pd.DataFrame
    cases: pd.DataFrame
    runs: dict[str, dict] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    failed: pd.DataFrame = field(default_factory=pd.DataFrame)  # failed/partial cases: never measurements
    # cases whose reader declared the file shape unsupported: findings, neither measured nor failed
    unsupported: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def series(self) -> list[str]:
        """Series names in input order (one line per series in every plot)."""
        return list(dict.fromkeys(self.cases["series"]))

    @property
    def has_run_metrics(self) -> bool:
        return any(inp.kind == "run" for inp in self.inputs)


def pb_label(size: int | float) -> str:
    """Human name of a page-buffer size: 0 is "off", -1 "default" (not set: the library's own),
    268435456 is "256 MiB" (not "264MB")."""
    size = int(size)
    if size < 0:
        return "default"
    if size == 0:
        return "off"
    if size % MiB == 0:
        return f"{size // MiB} MiB"
    if size % 1024 == 0 and size < MiB:
        return f"{size // 1024} KiB"
    return f"{size / MiB:.3g} MiB"


def _size(text: object) -> str:
    """A read-back size: binary units when exact, else decimal MB (2.0 reports 64,000,000)."""
    n = int(float(str(text)))
    if n == 0 or n % MiB == 0 or n % 1024 == 0 and n < MiB:
        return pb_label(n)
    return f"{n / 1e6:.3g} MB"


def _known(value: object) -> bool:
    return value is not None and str(value) not in ("", "nan", "None")


def effective_label(row: Mapping[str, object]) -> str:
    """What libhdf5 did that the requested page-buffer label does not already say ("" if nothing).

    `row` holds a case's requested `pb-size` and its read-back `pb-effective`,
    `file-space-strategy`, `block-cache-size`, `block-size` and `hdf5-version` (several read-back
    values joined by "|" are a mismatch between files and are shown as they are).
    """
    parts: list[str] = []
    req, eff = int(float(str(row.get("pb-size", 0)))), row.get("pb-effective")
    paged = str(row.get("file-space-strategy", "")) == "page"
    if _known(eff):
        eff_text = str(eff)
        got = _size(eff_text) if "|" not in eff_text else " or ".join(_size(v) for v in eff_text.split("|"))
        version = str(row.get("hdf5-version", "")).split(".")
        # "2.x default" (every 2.x ROS3 sets 64 MiB), "1.14 default" (none)
        generation = f"{version[0]}.x" if version[0] != "1" else ".".join(version[:2])
        if req < 0:
            parts.append(
                f"page buffer {got} ({generation} default)" if version[0].isdigit() else f"page buffer {got} (default)"
            )
        elif "|" in eff_text or int(float(eff_text)) != req:
            why = "; file not paged" if req > 0 and not paged else ""
            parts.append(f"page buffer {got} (asked {pb_label(req)}{why})")
    cache, block = row.get("block-cache-size"), row.get("block-size")
    if _known(cache) and _known(block):
        if "|" in str(cache) + str(block):
            text = f"block cache {cache} B in {block} B blocks"
        elif int(float(str(cache))) == 0 or int(float(str(block))) == 0:
            text = "block cache off"
        else:
            text = f"block cache {_size(cache)} in {_size(block)} blocks"
        # on a paged file 2.2 keeps only the first block (read at open, it holds the superblock)
        parts.append(text + (" (paged file: first block only)" if paged and text != "block cache off" else ""))
    return ", ".join(parts)


EFFECTIVE_INPUTS = ["pb-effective", "file-space-strategy", "block-cache-size", "block-size", "hdf5-version"]


def _case_effective(workers: pd.DataFrame) -> pd.Series:
    """effective_label per (label, case-id), from the read-back columns of the case's worker rows."""
    if "case-id" not in workers.columns or "pb-effective" not in workers.columns:
        return pd.Series(dtype=str)
    cols = [c for c in EFFECTIVE_INPUTS if c in workers.columns]

    def joined(values: pd.Series) -> str:
        seen = [str(v) for v in dict.fromkeys(values) if _known(v)]
        return "|".join(s[:-2] if s.endswith(".0") else s for s in seen)

    per_case = workers.groupby(["label", "case-id"], sort=False).agg({"pb-size": "first", **{c: joined for c in cols}})
    return per_case.apply(lambda r: effective_label(r.to_dict()), axis=1)


def effective_table(ds: Dataset) -> pd.DataFrame:
    """Per series, mode and requested page buffer: what libhdf5 ran and how its page buffer fared.

    Settings are the distinct read-back values; the page-buffer statistics are medians over the
    tasks (upstream's per-task numbers). Empty for inputs that read nothing back.
    """
    w = ds.workers
    if "pb-effective" not in w.columns:
        return pd.DataFrame()
    w = w[w["pb-effective"].notna()].copy()
    if w.empty:
        return pd.DataFrame()

    def distinct(values: pd.Series) -> str:
        return " | ".join(str(v)[:-2] if str(v).endswith(".0") else str(v) for v in dict.fromkeys(values) if _known(v))

    for col in STATS_COLUMNS:
        w[col] = pd.to_numeric(w[col], errors="coerce") if col in w.columns else np.nan
    settings = [c for c in ("pb-effective", "file-space-strategy", "block-cache-size", "block-size") if c in w.columns]
    g = w.groupby(["series", "obj-type", "pb-size"], sort=False, observed=True)
    out = g.agg(
        **{c: (c, distinct) for c in settings}, tasks=("pb-size", "size"), **{c: (c, "median") for c in STATS_COLUMNS}
    )
    out = out.reset_index()
    out.insert(3, "page buffer asked", out["pb-size"].map(pb_label))
    return out.drop(columns="pb-size")


def parse_input(text: str) -> Input:
    """`LABEL=PATH` (or a bare PATH, labelled by its name) into an Input, checking the path."""
    label, sep, path = text.partition("=")
    if not sep:
        label, path = "", text
    return make_input(label.strip(), Path(path.strip()).expanduser())


def make_input(label: str, path: Path) -> Input:
    if not path.exists():
        raise UserError(f"input {path} does not exist; pass LABEL=PATH with a run folder or a per-worker CSV.")
    if path.is_dir():
        if not (path / "workers.csv").is_file():
            raise UserError(
                f"folder {path} has no workers.csv; pass a run folder such as data/runs/<run-id>/ or a CSV file."
            )
        kind = "run"
    else:
        kind = "csv"
    if not label:
        label = path.name if kind == "run" else path.name.split(".")[0]
    return Input(label=label, path=path, kind=kind)


def parse_inputs(spec: str | Iterable[str] | Mapping[str, str | Path]) -> list[Input]:
    """Inputs as the notebook parameter allows them: "L=P", ["L=P", ...] or {label: path}."""
    if isinstance(spec, (str, Path)):
        spec = [str(spec)]
    if isinstance(spec, Mapping):
        inputs = [make_input(str(k), Path(v).expanduser()) for k, v in spec.items()]
    else:
        inputs = [parse_input(str(s)) for s in spec]
    if not inputs:
        raise UserError("no inputs given; pass at least one LABEL=PATH (a run folder or a per-worker CSV).")
    labels = [i.label for i in inputs]
    dupes = sorted({x for x in labels if labels.count(x) > 1})
    if dupes:
        raise UserError(f"label {dupes[0]!r} is used twice; give every input its own LABEL=PATH label.")
    return inputs


def _read_csv(path: Path, what: str) -> pd.DataFrame:
    try:
        return pd.read_csv(path, low_memory=False)
    except pd.errors.EmptyDataError:
        raise UserError(f"{path} is empty; pass a {what} with a header row and data.") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise UserError(f"{path} is not a readable CSV ({str(exc).splitlines()[0]}); pass a {what}.") from None


def _read_run_table(
    path: Path, what: str, valid: Callable[[Mapping[str, str]], bool], notes: list[str]
) -> pd.DataFrame:
    """A run folder's table with its torn or invalid rows set aside (named in a note), so a line
    cut in the middle of the file is never read as a measurement with empty fields."""
    table = read_table(path, valid)
    if table.set_aside:
        lines = ", ".join(map(str, table.set_aside[:5])) + (" …" if len(table.set_aside) > 5 else "")
        notes.append(
            f"{path}: {len(table.set_aside)} torn or invalid row(s) (line {lines}) set aside and not counted; "
            "`shotbench bench --resume` measures their cases again."
        )
    if not table.columns:
        raise UserError(f"{path} is empty; pass a {what} with a header row and data.")
    return pd.read_csv(io.StringIO(table.csv_text()), low_memory=False)


def check_schema(df: pd.DataFrame, path: Path) -> None:
    """Refuse a file that is not a per-worker CSV, naming what it lacks."""
    missing = [c for c in UPSTREAM_COLUMNS if c not in df.columns]
    if missing:
        raise UserError(
            f"{path} is not a per-worker CSV in the upstream 12-column schema: it lacks the columns "
            f"{', '.join(missing)}; pass a workers CSV from shotbench or MDSplusBench, or a run folder."
        )
    if df.empty:
        raise UserError(f"{path} has a header but no rows; pass a CSV with benchmark results.")
    numeric = ["open+read-data-time", "mean-obj-time", "pb-size", "num-workers", "total-runtime"]
    for col in numeric:
        if not pd.api.types.is_numeric_dtype(df[col]):
            raise UserError(f"{path} has non-numeric values in column {col!r}; pass an unmodified benchmark CSV.")
    modes = set(df["obj-type"].astype(str).unique())
    unknown = sorted(modes - set(MODES))
    if unknown:
        raise UserError(f"{path} has obj-type {unknown[0]!r}; only 'shots' and 'signals' are known access patterns.")


def _correct_legacy(df: pd.DataFrame, label: str) -> list[str]:
    """Fix the upstream tot-num-obj defect in place and say what was changed."""
    notes: list[str] = []
    bad = (df["obj-type"] == "shots") & (df["tot-num-obj"] != 1)
    if bad.any():
        values = sorted(int(v) for v in df.loc[bad, "tot-num-obj"].unique())
        df.loc[bad, "tot-num-obj"] = 1
        notes.append(
            f"{label}: tot-num-obj was {', '.join(map(str, values))} in {int(bad.sum())} shots-mode rows "
            "(the upstream harness wrote the file count); corrected to 1, one shot file per case."
        )
    return notes


def _infer_trials(df: pd.DataFrame) -> pd.Series:
    """Plain CSVs have no trial column: each distinct total-runtime of a case is one trial."""
    keys = ["obj-type", "pb-size", "num-workers"]
    code = df.groupby(keys + ["total-runtime"], sort=False).ngroup()
    return code.groupby([df[k] for k in keys]).rank(method="dense").astype(int) - 1


def _load_csv(inp: Input) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    return _prepare_frame(_read_csv(inp.path, "per-worker CSV"), inp.label, inp.path)


def _prepare_frame(df: pd.DataFrame, label: str, path: Path) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    check_schema(df, path)
    notes = _correct_legacy(df, label)
    if "backend" not in df.columns:
        df["backend"] = ""
    if "trial" not in df.columns:
        df["trial"] = _infer_trials(df)
    cases = df.drop_duplicates(KEYS[1:] + ["trial"])[KEYS[1:] + ["trial", "total-runtime"]].copy()
    return df, cases, notes


def _load_run(inp: Input) -> tuple[pd.DataFrame, pd.DataFrame, list[str], dict]:
    path = inp.path / "workers.csv"
    set_aside: list[str] = []
    df = multishot.single_shot_rows(
        _read_run_table(path, "workers.csv from a shotbench run", lambda r: True, set_aside)
    )
    check_schema(df, path)
    notes = _correct_legacy(df, inp.label)
    for col, default in (("backend", ""), ("trial", 0), ("error", "")):
        if col not in df.columns:
            df[col] = default
    df["backend"] = as_text(df["backend"])
    run: dict = {}
    meta = inp.path / RUN_JSON
    if meta.is_file():
        try:
            run = read_meta(inp.path)
        except json.JSONDecodeError:
            raise UserError(f"{meta} is not valid JSON; restore it or delete it to report without metadata.") from None
    case_file = inp.path / "cases.csv"
    if case_file.is_file() and case_file.stat().st_size > 0:
        cases = multishot.single_shot_rows(
            _read_run_table(case_file, "cases.csv from a shotbench run", valid_case_row, set_aside)
        )
        missing = [c for c in KEYS[1:] + ["trial", "total-runtime"] if c not in cases.columns]
        if missing:
            raise UserError(
                f"{case_file} lacks the columns {', '.join(missing)}; it was not written by shotbench bench."
            )
        cases["backend"] = as_text(cases["backend"])
        cases = with_status(cases)
        bad = cases["status"] != OK
        if bad.any() and "case-id" in df.columns and "case-id" in cases.columns:
            df = df[~df["case-id"].isin(set(cases.loc[bad, "case-id"]))].copy()
    else:
        cases = df.drop_duplicates(KEYS[1:] + ["trial"])[KEYS[1:] + ["trial", "total-runtime"]].copy()
        notes.append(f"{inp.label}: no cases.csv, so per-case runtimes come from workers.csv.")
    return df, cases, notes + set_aside, run


def with_status(cases: pd.DataFrame) -> pd.DataFrame:
    """Case rows with a `status` and an integer `errors` column, also for run folders written
    before they existed (where `errors` held text such as "16 errors; first: …")."""
    cases = cases.copy()
    if "first-error" not in cases.columns:
        cases["first-error"] = ""
    cases["first-error"] = cases["first-error"].astype(object)  # all-empty reads back as float NaN
    if "errors" not in cases.columns:
        cases["errors"] = 0
    legacy = cases["errors"].astype(object)
    if "status" not in cases.columns:
        cases["status"] = ""
    cases["status"] = as_text(cases["status"])
    missing = cases["status"] == ""
    if missing.any():
        cases.loc[missing, "status"] = [legacy_case_status(r) for r in cases.loc[missing].to_dict("records")]
        text = as_text(legacy[missing])
        cases.loc[missing & (cases["first-error"].fillna("") == ""), "first-error"] = text.str.replace(
            r"^\d+ errors; first: ", "", regex=True
        )
    cases["errors"] = [error_count(v) for v in legacy]
    cases["first-error"] = as_text(cases["first-error"])
    return cases


def ok_cases(cases: pd.DataFrame) -> pd.DataFrame:
    """Only the cases that are measurements: failed and partial cases never enter runtimes,
    ratios, confidence intervals or plots."""
    if "status" not in cases.columns:
        return cases
    return cases[cases["status"].fillna(OK).replace("", OK) == OK]


def failed_table(ds: Dataset) -> pd.DataFrame:
    """The failed and partial cases, with their first error: shown apart from the results."""
    cols = ["series", "case-id", "obj-type", "num-workers", "pb-size", "trial", "status", "errors", "first-error"]
    if ds.failed.empty:
        return pd.DataFrame(columns=cols)
    return ds.failed[[c for c in cols if c in ds.failed.columns]].reset_index(drop=True)


def stalls_table(ds: Dataset) -> pd.DataFrame:
    """Stalled tasks per series: tasks far beyond their case's other tasks or trials (a stalled
    connection). Their cases are not measurements; this counts what was set apart."""
    cols = ["series", "stalled cases", "stalled tasks"]
    f = ds.failed
    if f.empty or "stalls" not in f.columns:
        return pd.DataFrame(columns=cols)
    n = pd.to_numeric(f["stalls"], errors="coerce").fillna(0).astype(int)
    part = f.assign(_n=n)[n > 0]
    if part.empty:
        return pd.DataFrame(columns=cols)
    out = part.groupby("series", sort=False)["_n"].agg(["size", "sum"]).reset_index()
    out.columns = cols
    return out


def _series_names(labels: pd.Series, backends: pd.Series, single_run: bool) -> pd.Series:
    """One name per plotted line: the label, the backend (one run), or label/backend."""
    if single_run:
        return backends.where(backends != "", labels)
    return labels.where(backends == "", labels + "/" + backends)


def from_frames(frames: Mapping[str, pd.DataFrame]) -> Dataset:
    """A Dataset from in-memory upstream-schema tables (label -> rows), as if read from CSVs."""
    inputs, workers, cases, notes = [], [], [], []
    for label, df in frames.items():
        w, c, n = _prepare_frame(df.copy(), label, Path(f"<{label}>"))
        inputs.append(Input(label=label, path=Path(f"<{label}>"), kind="csv"))
        workers.append(w)
        cases.append(c)
        notes += n
    return _assemble(inputs, workers, cases, notes, {})


def load(spec: str | Iterable[str] | Mapping[str, str | Path] | list[Input]) -> Dataset:
    """Load and normalise every input; the only place that knows the two file layouts."""
    inputs = (
        spec
        if isinstance(spec, list) and spec and isinstance(spec[0], Input)
        else parse_inputs(cast("str | Iterable[str] | Mapping[str, str | Path]", spec))
    )
    frames, case_frames, notes, runs = [], [], [], {}
    for inp in inputs:
        if inp.kind == "run":
            df, cases, n, run = _load_run(inp)
            runs[inp.label] = run
        else:
            df, cases, n = _load_csv(inp)
        notes += n
        frames.append(df)
        case_frames.append(cases)
    return _assemble(inputs, frames, case_frames, notes, runs)


def _assemble(
    inputs: list[Input], frames: list[pd.DataFrame], case_frames: list[pd.DataFrame], notes: list[str], runs: dict
) -> Dataset:
    for inp, df, cases in zip(inputs, frames, case_frames):
        df["label"] = inp.label
        cases["label"] = inp.label
    workers = pd.concat(frames, ignore_index=True, sort=False)
    cases = pd.concat(case_frames, ignore_index=True, sort=False)
    single_run = len(inputs) == 1 and inputs[0].kind == "run"
    effective = _case_effective(workers)
    for frame in (workers, cases):
        if len(effective) and "case-id" in frame.columns:
            keys = pd.MultiIndex.from_frame(frame[["label", "case-id"]].astype({"case-id": str}))
            frame["effective"] = effective.reindex(keys).fillna("").to_numpy()
        else:
            frame["effective"] = ""

        frame["backend"] = as_text(frame["backend"])
        frame["pb-size"] = frame["pb-size"].astype("int64")
        frame["num-workers"] = frame["num-workers"].astype("int64")
        frame["obj-type"] = frame["obj-type"].astype(str)
        # names are computed once per distinct (label, backend, effective settings), not once per row
        pairs = frame[["label", "backend", "effective"]].drop_duplicates()
        names = _series_names(pairs["label"], pairs["backend"], single_run)
        names = names.where(pairs["effective"] == "", names + " · " + pairs["effective"])
        categories = list(dict.fromkeys(names))
        pair_codes = np.array([categories.index(n) for n in names])
        row_pairs = frame.groupby(["label", "backend", "effective"], sort=False).ngroup().to_numpy()
        frame["series"] = pd.Categorical.from_codes(pair_codes[row_pairs], categories=categories)
        frame["pb-label"] = frame["pb-size"].map({v: pb_label(v) for v in frame["pb-size"].unique()})
    workers["obj-type"] = workers["obj-type"].astype("category")
    cases["series"] = cases["series"].astype(str)
    good = ok_cases(cases)
    failed = cases.drop(good.index)
    unsupported = failed[failed["status"] == UNSUPPORTED] if "status" in failed.columns else failed.iloc[:0]
    failed = failed.drop(unsupported.index)
    cases = good.reset_index(drop=True)
    if not failed.empty:
        notes.append(
            f"{len(failed)} failed or partial cases are left out of every table and plot; they are listed on their own."
        )
    if not unsupported.empty:
        notes.append(
            f"{len(unsupported)} cases were of a file shape their reader declares unsupported: they are not "
            "timed, not failures, and counted in the `unsupported` column and the capability matrix."
        )
    sizes = sorted(workers["pb-size"].unique())
    if UPSTREAM_PAGE_BUFFER in sizes:
        notes.append(
            'Page buffer 268,435,456 bytes is asked as "256 MiB". libhdf5 rounds a page buffer down to whole '
            "file pages: with 8 MB pages it holds 264,000,000 bytes, which is what the upstream notebook's "
            '"264MB" label said. Where a run records what libhdf5 did (pb-effective), series names show it.'
        )
    if 0 in sizes:
        notes.append('Page buffer size 0 means the page buffer is off and is shown as "off".')
    if -1 in sizes:
        notes.append(
            'Page buffer "default" (pb-size -1) means none was set and the library chose; the series '
            "name says what it chose (64 MiB on libhdf5 2.x ROS3, none on 1.14)."
        )
    return Dataset(
        inputs=inputs,
        workers=workers,
        cases=cases,
        runs=runs,
        notes=notes,
        failed=failed,
        unsupported=unsupported.reset_index(drop=True),
    )


def _ordered(df: pd.DataFrame, ds: Dataset) -> pd.DataFrame:
    """Rows by mode, then series in input order, then page buffer and workers."""
    rank = {name: i for i, name in enumerate(ds.series)}
    order = df["series"].map(rank)
    mode_rank = df["obj-type"].map({m: i for i, m in enumerate(MODES)})
    idx = np.lexsort((df["num-workers"].to_numpy(), df["pb-size"].to_numpy(), order.to_numpy(), mode_rank.to_numpy()))
    return df.iloc[idx].reset_index(drop=True)


def runtimes(ds: Dataset) -> pd.DataFrame:
    """Total runtime per (label, backend, mode, page buffer, workers): the median over trials."""
    grouped = ds.cases.groupby(KEYS + ["series", "effective"], sort=False)
    out = grouped.agg(trials=("trial", "nunique"), **{"total-runtime": ("total-runtime", "median")})
    out = out.reset_index()
    out["pb-label"] = out["pb-size"].map(pb_label)
    return _ordered(out, ds)


def _find_series(rt: pd.DataFrame, name: str) -> str:
    """Resolve a baseline name given as a label, a backend, or label/backend."""
    combos = rt[["series", "label", "backend"]].drop_duplicates()
    hits = combos[
        (combos["series"] == name)
        | (combos["label"] + "/" + combos["backend"] == name)
        | ((combos["backend"] == name) | ((combos["label"] == name) & (combos["backend"] == "")))
    ]["series"].unique()
    if len(hits) == 1:
        return str(hits[0])
    choices = ", ".join(combos["series"].unique())
    if not len(hits):
        raise UserError(f"baseline {name!r} matches no input; choose one of: {choices}.")
    raise UserError(f"baseline {name!r} matches several inputs; write it as label/backend, one of: {choices}.")


def add_ratios(rt: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """Performance ratio baseline ÷ runtime (>1 is faster than the baseline).

    No baseline: every line is relative to its own smallest worker count (the upstream choice).
    "SERIES" or "SERIES@W": every line of a mode is relative to that series at its smallest (or
    W) worker count with the same page buffer, so different backends share one reference.
    """
    rt = rt.copy()
    if baseline is None or str(baseline).strip() == "":
        line = ["label", "backend", "series", "obj-type", "pb-size"]
        first = rt.loc[rt.groupby(line, sort=False)["num-workers"].idxmin(), line + ["total-runtime"]]
        base = rt[line].merge(first, on=line, how="left")["total-runtime"].to_numpy()
        rt["baseline"] = "smallest worker count of each line"
    else:
        name, _, workers = str(baseline).partition("@")
        series = _find_series(rt, name.strip())
        ref = rt[rt["series"] == series]
        if workers:
            try:
                w = int(workers)
            except ValueError:
                raise UserError(
                    f"baseline {baseline!r} has a worker count that is not a number; write SERIES@8."
                ) from None
            ref = ref[ref["num-workers"] == w]
            if ref.empty:
                raise UserError(f"baseline {series!r} has no case with {w} workers; pick a worker count it ran.")
        else:
            ref = ref.loc[ref.groupby(["obj-type", "pb-size"])["num-workers"].idxmin()]
        ref = ref[["obj-type", "pb-size", "total-runtime"]].rename(columns={"total-runtime": "base"})
        merged = rt[["obj-type", "pb-size"]].merge(ref, on=["obj-type", "pb-size"], how="left")
        # a page-buffer size the baseline never ran falls back to its first page buffer in that mode
        fallback = ref.groupby("obj-type")["base"].first()
        base = merged["base"].fillna(merged["obj-type"].map(fallback)).to_numpy()
        rt["baseline"] = str(baseline)
    rt["norm-tot-runtime"] = base / rt["total-runtime"].to_numpy()
    return rt


def scaling_table(ds: Dataset, baseline: str | None = None) -> pd.DataFrame:
    """Runtimes with performance ratios and series names: what the scaling plots draw."""
    return add_ratios(runtimes(ds), baseline)


def describe_times(ds: Dataset, keys: list[str] | None = None) -> pd.DataFrame:
    """pandas describe() of the per-worker mean object read time, one row per group."""
    keys = keys or KEYS
    grouped = ds.workers.groupby(keys, sort=False)["mean-obj-time"]
    quant = grouped.quantile([0.25, 0.5, 0.75]).unstack()
    quant.columns = ["25%", "50%", "75%"]
    out = grouped.agg(["count", "mean", "std", "min"]).join(quant).join(grouped.max().rename("max"))
    out["count"] = out["count"].astype(float)
    return out[DESCRIBE_COLUMNS]


def summary(
    inputs: Dataset | str | Iterable[str] | Mapping[str, str | Path], baseline: str | None = None
) -> pd.DataFrame:
    """The published table: one row per (label, backend, mode, page buffer, workers)."""
    ds = inputs if isinstance(inputs, Dataset) else load(inputs)
    rt = add_ratios(runtimes(ds), baseline)
    desc = describe_times(ds, KEYS + ["series"]).reset_index()
    out = rt.merge(desc, on=KEYS + ["series"], how="left")
    return out[SUMMARY_COLUMNS].reset_index(drop=True)


def modes(ds: Dataset) -> list[str]:
    present = set(ds.cases["obj-type"].unique())
    return [m for m in MODES if m in present]


# What the cases of one group fetch, and the path they fetch it by: every case of a (mode, workers)
# group reads the same files in a trial (plan.matrix), so each raw-GET measurement in it, the one
# after every case and the raw-get backend's own, times the same bytes.
CEILING_KEYS: list[str] = ["label", "obj-type", "num-workers", "file-family", "network"]


def raw_ceiling(cases: pd.DataFrame) -> pd.Series:
    """Per case, the raw-GET ceiling of its group's bytes: the median of every raw-GET measurement
    in its group (CEILING_KEYS), not of its own two or three. The ceiling is a property of the
    bytes, not of the reader; measured once after each case, a short one (0.1 s of signals) moved
    0.6-3.8x from its group's median, and a reader came out at 0.75x "the limit" it cannot beat.
    Runs without per-case measurements use the raw-get backend's runtimes. NaN where neither."""
    keys = [k for k in CEILING_KEYS if k in cases.columns]
    raw = pd.to_numeric(cases["raw-get-runtime"], errors="coerce") if "raw-get-runtime" in cases.columns else None
    own = pd.to_numeric(cases["total-runtime"], errors="coerce").where(cases["backend"] == RAW_GET)
    measured = own if raw is None else raw.fillna(own)
    groups = as_text(cases[keys])
    return measured.groupby([groups[k] for k in keys]).transform("median")


def small_tls_records(ds: Dataset) -> int | None:
    """The bytes per TLS record on the wire of the runs of `ds`, when every run counted small
    ones (bench/prepare.path_records, store/tlsrecords.TlsRecords.small); None when a run sent
    full-size records, did not count them, or read over http."""
    counted = [TlsRecords.of((meta.get("data") or {}).get("tls_records")) for meta in ds.runs.values()]
    small = [r for r in counted if r is not None and r.small]
    return max(r.median_bytes for r in small) if small and len(small) == len(counted) else None


def case_metrics(ds: Dataset) -> pd.DataFrame:
    """What only our runs carry, per case group (medians over trials).

    `raw-get-ratio` is the raw-GET ceiling runtime (raw_ceiling: its group's) ÷ this runtime: the
    share of the plain-GET speed a backend reaches (1 = as fast as fetching the same bytes with no
    HDF5 at all).
    """
    c = ds.cases.copy()
    c["_ceiling"] = raw_ceiling(c)
    for col in (
        "gets",
        "get-bytes",
        "harness-efficiency",
        "raw-get-runtime",
        "task-time-sum",
        "errors",
        "client-gets",
        "client-bytes",
        "amplification",
    ):
        if col not in c.columns:
            c[col] = np.nan
        c[col] = pd.to_numeric(c[col], errors="coerce")
    missing_eff = c["harness-efficiency"].isna() & c["task-time-sum"].notna()
    c.loc[missing_eff, "harness-efficiency"] = c["task-time-sum"] / (c["num-workers"] * c["total-runtime"])
    c["MB"] = c["get-bytes"] / 1e6
    c["client-MB"] = c["client-bytes"] / 1e6
    grouped = c.groupby(KEYS + ["series"], sort=False)
    out = grouped.agg(
        trials=("trial", "nunique"),
        **{
            "total-runtime": ("total-runtime", "median"),
            "raw-get-runtime": ("raw-get-runtime", "median"),
            "_ceiling": ("_ceiling", "median"),
            "gets": ("gets", "median"),
            "MB": ("MB", "median"),
            "harness-efficiency": ("harness-efficiency", "median"),
            "errors": ("errors", "sum"),
            "client-gets": ("client-gets", "median"),  # counted by the client
            "client-MB": ("client-MB", "median"),
            "amplification": ("amplification", "median"),
        },
    ).reset_index()
    out["raw-get-ratio"] = out.pop("_ceiling") / out["total-runtime"]
    out["pb-label"] = out["pb-size"].map(pb_label)
    return _ordered(out, ds)


def default_reference(ds: Dataset) -> str:
    """The series other backends are compared with: the libcurl ROS3 (1.14) if present."""
    names = ds.series
    for name in names:
        if name.endswith("ros3-1.14"):
            return name
    return names[0]


def backend_ratios(
    ds: Dataset, reference: str | None = None, n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """Speed of every series relative to a reference series, with BCa bootstrap CIs across trials.

    ratio = median reference runtime ÷ median runtime (>1: faster than the reference), per
    (mode, page buffer, workers). CIs need two trials on each side; otherwise they are NaN.
    """
    ref_name = _find_series(runtimes(ds), reference) if reference else default_reference(ds)
    c = ds.cases[["series", "obj-type", "pb-size", "num-workers", "total-runtime"]]
    keys = ["obj-type", "pb-size", "num-workers"]
    groups = {k: g["total-runtime"].to_numpy(float) for k, g in c.groupby(["series"] + keys, sort=False)}
    ref_by_workers: dict[tuple, list[np.ndarray]] = {}
    for (series, mode, _pb, w), values in groups.items():
        if series == ref_name:
            ref_by_workers.setdefault((mode, w), []).append(values)
    rows = []
    for (series, mode, pb, w), values in groups.items():
        if series == ref_name:
            continue
        ref = groups.get((ref_name, mode, pb, w))
        if ref is None:
            # a backend without a page buffer (raw-get, download) compares with the reference's only one
            candidates = ref_by_workers.get((mode, w), [])
            if len(candidates) != 1:
                continue
            ref = candidates[0]
        ci = stats.ratio_interval(ref, values, level, n_boot, seed)
        lo, hi = ci.low, ci.high
        rows.append(
            {
                "series": series,
                "reference": ref_name,
                "obj-type": mode,
                "pb-size": pb,
                "num-workers": w,
                "ratio": float(np.median(ref) / np.median(values)),
                "ci-low": lo,
                "ci-high": hi,
                "trials": min(len(ref), len(values)),
            }
        )
    cols = ["series", "reference", "obj-type", "pb-size", "num-workers", "ratio", "ci-low", "ci-high", "trials"]
    out = pd.DataFrame(rows, columns=cols)
    out["pb-label"] = out["pb-size"].map(pb_label)
    return _ordered(out, ds)


def default_inputs() -> list[str]:
    """What a notebook opened without parameters shows: the latest run, else the upstream CSVs."""
    from shotbench.paths import data_dir, runs_dir

    run = latest_run(runs_dir(), "read")
    if run is not None:
        return [f"{run.name}={run}"]
    ref = data_dir() / "fixtures" / "mdsplusbench"
    return [
        f"ros3-1.14={ref / 'single-shot-ec2-s3.csv.gz'}",
        f"ros3-2.0-dev={ref / 'single-shot-ec2-s3-libaws.csv.gz'}",
    ]


def write_summary(table: pd.DataFrame, out_dir: Path) -> Path:
    """summary.csv beside the report, so numbers can be checked without parsing HTML."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "summary.csv"
    with atomic_open(path, "w", newline="") as fh:  # whole or not at all
        table.to_csv(fh, index=False)
    return path


def describe_table(ds: Dataset, mode: str) -> pd.DataFrame:
    """describe() of worker mean read times for one mode, indexed the way readers scan it."""
    d = describe_times(ds, ["series", "pb-size", "num-workers", "obj-type"]).reset_index()
    d = d[d["obj-type"] == mode].drop(columns="obj-type")
    rank = {name: i for i, name in enumerate(ds.series)}
    d = d.assign(_r=d["series"].map(rank)).sort_values(["_r", "pb-size", "num-workers"]).drop(columns="_r")
    d["page buffer"] = d["pb-size"].map(pb_label)
    return d.set_index(["series", "page buffer", "num-workers"]).drop(columns="pb-size")


def inputs_table(ds: Dataset) -> pd.DataFrame:
    """What was loaded, so a reader can trace every number to a file."""
    rows = []
    for inp in ds.inputs:
        w = ds.workers[ds.workers["label"] == inp.label]
        rows.append(
            {
                "label": inp.label,
                "kind": "run folder" if inp.kind == "run" else "per-worker CSV",
                "path": str(inp.path),
                "rows": len(w),
                "backends": ", ".join(b for b in dict.fromkeys(w["backend"]) if b) or "(one, unnamed)",
                "modes": ", ".join(m for m in MODES if m in set(w["obj-type"])),
                "page buffers": ", ".join(pb_label(s) for s in sorted(w["pb-size"].unique())),
                "workers": ", ".join(str(x) for x in sorted(w["num-workers"].unique())),
            }
        )
    return pd.DataFrame(rows)


def run_versions(ds: Dataset) -> pd.DataFrame:
    """Backend library versions recorded in run.json (what each line actually ran)."""
    rows = []
    for label, run in ds.runs.items():
        for name, v in ((run.get("versions") or {}).get("backends") or {}).items():
            rows.append({"label": label, "backend": name, **{k: v.get(k) for k in ("hdf5", "h5py", "python")}})
    return pd.DataFrame(rows, columns=["label", "backend", "hdf5", "h5py", "python"])

"""The run folder both benchmarks write, in the spirit of asv's `Results`: one class, a schema
version in its metadata, durable appends, resume.

A run folder holds `run.json` (what ran, where, with which versions), `cases.csv` (one row per
case and trial) and its kind's details table: `workers.csv` (read: one row per Dask task) or
`transfers.csv` (transfer: one row per file). A case's detail rows are appended first and its
case row last, each flushed and fsynced, so the case row is the commit mark: a resume drops
detail rows of cases without one and runs those cases again.

`run.json` records `schema` (the format version, checked on reading: a folder without it is
schema 1) and `kind` ("read" or "transfer"; a folder written before `kind` existed is told
apart by its details table). A `shotbench direction` ablation folder is of kind "direction":
it has no tables of its own, only its settings groups' read runs in folders below it.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import random
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from shotbench.diskspace import DiskFull, atomic_open, atomic_write, full_disk, is_full
from shotbench.errors import UserError

T = TypeVar("T")

SCHEMA = 1  # the run-folder format this code writes and the newest it reads
RUN_JSON = "run.json"
CASES_CSV = "cases.csv"
# The details table of each kind: only that kind writes it, so it names the kind of a folder
# whose run.json predates the `kind` field.
DETAILS_CSV = {"read": "workers.csv", "transfer": "transfers.csv"}
DIRECTION = "direction"  # an ablation's folder: told apart by run.json alone (it has always had a kind)
KINDS = (*DETAILS_CSV, DIRECTION)

CsvRow = Mapping[str, Any]


def case_id(row: CsvRow) -> Hashable:
    """A case row's identity when its case id already names the trial (read: `t1-…`)."""
    return row.get("case-id")


@dataclass(frozen=True)
class RunKind:
    """One benchmark's kind of run folder: its name ("read", "transfer"), the columns of its two
    tables, and what names a case (and trial) among the rows, for resuming."""

    name: str
    case_columns: Sequence[str]
    detail_columns: Sequence[str]
    key: Callable[[CsvRow], Hashable] = case_id
    # a case row that parses as this kind's typed row; others are set aside, never counted
    valid_case: Callable[[CsvRow], bool] = lambda row: True

    @property
    def details_csv(self) -> str:
        return DETAILS_CSV[self.name]


def read_meta(folder: Path) -> dict[str, Any]:
    """run.json of a run folder, refused in one sentence when a newer shotbench wrote it.

    Raises OSError when it is missing and ValueError (json.JSONDecodeError) when it is not a
    JSON object, so each caller words its own fix.
    """
    path = Path(folder) / RUN_JSON
    text = path.read_text()
    meta = json.loads(text)
    if not isinstance(meta, dict):
        raise json.JSONDecodeError("run.json holds no JSON object", text, 0)
    schema = meta.get("schema", 1)
    if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
        raise UserError(
            f"{path} has run format {schema!r}, which no shotbench wrote (formats start at 1); "
            "fix its `schema` field or start a new run."
        )
    if schema > SCHEMA:
        raise UserError(
            f"{path} has run format {schema!r}, newer than this shotbench reads (up to {SCHEMA}); "
            "update shotbench (git pull, then make venv) to read it."
        )
    return meta


def kind_of(folder: Path) -> str | None:
    """ "read", "transfer", "direction" or None (not a run folder): run.json's `kind`, else the
    details table present."""
    folder = Path(folder)
    try:
        kind = json.loads((folder / RUN_JSON).read_text()).get("kind")
    except (OSError, ValueError, AttributeError):
        kind = None
    if kind in KINDS:
        return kind
    return next((k for k, name in DETAILS_CSV.items() if (folder / name).is_file()), None)


# What a run folder of another kind is, and the commands that read it ({f}: the folder).
READERS = {
    "transfer": "a transfer run, not a read run; check it with `shotbench transfer --check {f}` or render it with "
    "`shotbench report --transfer {f}`",
    DIRECTION: "an ablation run (`shotbench direction`), not a read run; render it with `shotbench report "
    "--direction {f}`, or pass the read runs in its settings/<setting>/ folders",
}


def require_read_run(folder: Path, fix: str) -> None:
    """One sentence unless `folder` is a read run: what it is and the command that reads it, or
    `fix` when it is no run folder at all."""
    kind = kind_of(folder)
    if kind == "read":
        return
    if kind in READERS:
        raise UserError(f"{folder} is {READERS[kind].format(f=folder)}.")
    raise UserError(f"{folder} is not a run folder; {fix}.")


def require_cases(folder: Path) -> None:
    """One sentence for a run whose cases.csv is there but holds no case row: the case row is the
    commit mark, so such a run measured nothing (detail rows without one are cases cut short)."""
    file = Path(folder) / CASES_CSV
    if file.is_file() and not read_table(file).rows:
        raise UserError(
            f"{folder} has no cases (its {CASES_CSV} holds no case row), so it measured nothing; "
            "pass a run that finished at least one case."
        )


def run_id(folder: Path) -> str | None:
    """The run id its run.json records (a copied folder keeps it: two folders, one run), or None."""
    try:
        found = read_meta(folder).get("run_id")
    except (OSError, ValueError):
        return None
    return found if isinstance(found, str) and found else None


def refuse_copies(folders: Sequence[Path], where: str) -> None:
    """One sentence when two of `folders` hold one run (the same run id): a copy's tasks would
    count twice, as if the run had measured them twice."""
    seen: dict[str, Path] = {}
    for folder in folders:
        found = run_id(folder)
        if found is None:
            continue
        if found in seen:
            raise UserError(
                f"{where} names run {found} twice: {seen[found]} and {folder} are copies of it; give each run only once."
            )
        seen[found] = folder


def run_folders(runs_dir: Path, kind: str) -> list[Path]:
    """The run folders of one kind below runs_dir, oldest first (run ids start with a UTC time)."""
    if kind not in KINDS:
        raise ValueError(f"unknown run kind {kind!r}")
    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        return []
    return sorted(p for p in runs_dir.iterdir() if p.is_dir() and kind_of(p) == kind)


def latest_run(runs_dir: Path, kind: str) -> Path | None:
    """The newest run folder of one kind below runs_dir, or None."""
    folders = run_folders(runs_dir, kind)
    return folders[-1] if folders else None


def interleave(items: Sequence[T], trials: Iterable[int], rng: Callable[[int], random.Random]) -> list[tuple[int, T]]:
    """(trial, item): every item once per trial, each trial in its own shuffle drawn from
    `rng(trial)`, so drift (page cache, a noisy neighbour) spreads over all items instead of
    landing on whichever ran last, and the same seed gives the same order on resume."""
    order: list[tuple[int, T]] = []
    for trial in trials:
        block = list(items)
        rng(trial).shuffle(block)
        order += [(trial, item) for item in block]
    return order


def finite(value: Any) -> Any:
    """`value` with every NaN or infinity replaced by None (JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def strict_json(meta: Any) -> str:
    """JSON every reader accepts: no NaN or Infinity (they become null), anything else as text."""
    return json.dumps(finite(meta), indent=2, default=str, allow_nan=False)


def _complete(text: str) -> str:
    """Whole lines only: a line cut short by a kill (no trailing newline) is left out."""
    return text if not text or text.endswith("\n") else text[: text.rfind("\n") + 1]


@dataclass
class Table:
    """A CSV table read row by row: the rows that parse, and the line numbers of those set aside
    (a line torn by a crash or an edit, a value of the wrong type)."""

    columns: list[str]
    rows: list[dict[str, str]]
    set_aside: list[int]
    set_aside_text: list[str]

    def csv_text(self) -> str:
        """The valid rows as CSV text, for readers that parse CSV themselves (pandas)."""
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=self.columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.rows)
        return buf.getvalue()


def read_table(file: Path, valid: Callable[[CsvRow], bool] = lambda row: True) -> Table:
    """Complete lines of a table; a row with the wrong number of fields, a line break inside a
    field, or one `valid` refuses is set aside with its line number."""
    if not Path(file).exists():
        return Table([], [], [], [])
    records = csv.reader(io.StringIO(_complete(Path(file).read_text(encoding="utf-8", errors="replace"))))
    columns = next(records, [])
    rows, bad, bad_text = [], [], []
    line = records.line_num
    for record in records:
        first, line = line + 1, records.line_num
        row = dict(zip(columns, record))
        if not record:
            continue
        if len(record) != len(columns) or any("\n" in v or "\r" in v for v in record) or not valid(row):
            bad.append(first)
            out = io.StringIO()
            csv.writer(out, lineterminator="\n").writerow(record)
            bad_text.append(out.getvalue())
            continue
        rows.append(row)
    return Table(columns, rows, bad, bad_text)


def resume_hint(folder: Path, kind: str) -> str:
    """What to do once space is freed: finish this run where it stopped."""
    return f"finish the run with `shotbench {'bench' if kind == 'read' else kind} --resume {folder}`"


def _write_table(file: Path, columns: Sequence[str], rows: Iterable[CsvRow], then: str) -> None:
    """Replace a table atomically (`diskspace.atomic_open`: temp file, fsync, rename)."""
    with atomic_open(file, "w", then, newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(columns), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k, "") for k in columns})


class RunFolder:
    """One run's files; every append is on disk before the next case starts."""

    def __init__(self, path: Path, kind: RunKind) -> None:
        self.path = Path(path)
        self.kind = kind
        self.run_json = self.path / RUN_JSON
        self.cases_csv = self.path / CASES_CSV
        self.details_csv = self.path / kind.details_csv
        self.set_aside: list[int] = []  # line numbers of cases.csv rows the last repair set aside
        self.then = resume_hint(self.path, kind.name)  # what a full disk's sentence tells the user to do next
        # Space held while the run is `running`, given back to write its last status when the disk
        # fills, so run.json never stays at `running` for want of a few kilobytes.
        self.reserve = self.path / ".run.json.reserve"

    @classmethod
    def create(cls, path: Path, kind: RunKind, meta: dict[str, Any]) -> RunFolder:
        """A new run folder (refused if it exists): empty tables with their headers, then run.json."""
        Path(path).mkdir(parents=True, exist_ok=False)
        folder = cls(path, kind)
        folder.add_missing_tables()
        folder.write_meta(meta)
        return folder

    def add_missing_tables(self) -> None:
        """Header-only tables where none exist yet (a run stopped before its first case)."""
        for file, cols in ((self.cases_csv, self.kind.case_columns), (self.details_csv, self.kind.detail_columns)):
            if not file.is_file() or file.stat().st_size == 0:
                _write_table(file, cols, [], self.then)

    def read_meta(self) -> dict[str, Any]:
        return read_meta(self.path)

    def write_meta(self, meta: dict[str, Any]) -> None:
        """run.json, stamped with this code's schema and the folder's kind; replaced atomically."""
        meta.update(schema=SCHEMA, kind=self.kind.name)
        text = strict_json(meta) + "\n"
        try:
            atomic_write(self.run_json, text, self.then)
        except DiskFull:
            if not self.reserve.exists():
                raise
            self.reserve.unlink()  # the disk filled: spend the reserve on this status
            atomic_write(self.run_json, text, self.then)
        if meta.get("status") == "running":
            self._hold_reserve(2 * len(text.encode()) + 64 * 1024)
        else:
            self.reserve.unlink(missing_ok=True)

    def _hold_reserve(self, size: int) -> None:
        """Keep `size` bytes allocated beside run.json (see `reserve`), written whole or not at all."""
        if self.reserve.exists() and self.reserve.stat().st_size >= size:
            return
        atomic_write(self.reserve, bytes(size), self.then)

    @staticmethod
    def _header(file: Path) -> list[str]:
        with open(file, newline="") as fh:
            return next(csv.reader(io.StringIO(fh.readline())), [])

    @staticmethod
    def cut_torn_tail(file: Path) -> None:
        """Drop a last line a kill cut short, so the next append starts on a line of its own."""
        with open(file, "rb+") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size == 0:
                return
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) == b"\n":
                return
            fh.seek(0)
            fh.truncate(fh.read().rfind(b"\n") + 1)
            fh.flush()
            os.fsync(fh.fileno())

    def _append(self, file: Path, rows: Sequence[CsvRow]) -> None:
        """Rows under the file's own header (unknown keys left out, missing ones empty), fsynced."""
        self.cut_torn_tail(file)
        columns = self._header(file)
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
        for row in rows:
            writer.writerow({k: row.get(k, "") for k in columns})
        data = buf.getvalue().encode("utf-8")
        fd = os.open(file, os.O_WRONLY | os.O_APPEND)  # unbuffered: a failed write is known here, not at close
        try:
            before = os.lseek(fd, 0, os.SEEK_END)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            except OSError as exc:
                os.ftruncate(fd, before)  # no torn row left behind: the table is as it was
                if is_full(exc):
                    raise full_disk(self.path, len(data), self.then) from None
                raise
        finally:
            os.close(fd)

    def append_case(self, details: Sequence[CsvRow], case_row: CsvRow) -> None:
        """A case's detail rows, then its case row (the commit mark)."""
        if details:
            self._append(self.details_csv, details)
        self._append(self.cases_csv, [case_row])

    def case_table(self) -> Table:
        """cases.csv, its torn or invalid rows set aside (see `read_table`)."""
        return read_table(self.cases_csv, self.kind.valid_case)

    def cases(self) -> list[dict[str, str]]:
        """Complete, valid case rows (a torn line, last or not, is never counted)."""
        return self.case_table().rows

    def details(self) -> list[dict[str, str]]:
        """Complete detail rows: workers.csv of a read run, transfers.csv of a transfer run."""
        return read_table(self.details_csv).rows

    @property
    def set_aside_csv(self) -> Path:
        """Where a resume keeps the raw text of case rows it could not parse, for a person to look at."""
        return self.path / "cases.set-aside.csv"

    def _cases_keeping_set_aside(self) -> Table:
        """cases.csv before a rewrite: rows that do not parse are copied to `set_aside_csv`."""
        table = self.case_table()
        self.set_aside = table.set_aside
        if table.set_aside_text:
            with open(self.set_aside_csv, "a", encoding="utf-8") as fh:
                fh.writelines(table.set_aside_text)
                fh.flush()
                os.fsync(fh.fileno())
        return table

    def rewrite(
        self, case: Callable[[dict[str, str]], dict[str, Any]], detail: Callable[[dict[str, str]], dict[str, Any]]
    ) -> None:
        """Both tables with every row passed through `case` / `detail` (a verdict reached after
        the rows were written, e.g. a stall seen only against later trials); details first,
        since the case row is the commit mark."""
        table = self._cases_keeping_set_aside()
        _write_table(self.details_csv, self.kind.detail_columns, [detail(r) for r in self.details()], self.then)
        _write_table(self.cases_csv, self.kind.case_columns, [case(r) for r in table.rows], self.then)

    def repair(self, keep: Callable[[CsvRow], bool] = lambda row: True) -> set[Hashable]:
        """Keep the first case row of each key that `keep` accepts and the detail rows of those
        cases; drop the rest (torn lines, unfinished cases, cases to run again). Rows that do
        not parse are copied to `set_aside_csv` first and their cases run again. Both tables
        are rewritten with the kind's columns (an older folder gains new ones, empty).
        Returns the keys of the cases that stay measured; `self.set_aside` lists the line
        numbers of the rows set aside."""
        key = self.kind.key
        table = self._cases_keeping_set_aside()
        kept: dict[Hashable, dict[str, str]] = {}
        for row in table.rows:
            if keep(row):
                kept.setdefault(key(row), row)
        details = [r for r in self.details() if key(r) in kept]
        _write_table(self.cases_csv, self.kind.case_columns, kept.values(), self.then)
        _write_table(self.details_csv, self.kind.detail_columns, details, self.then)
        return set(kept)

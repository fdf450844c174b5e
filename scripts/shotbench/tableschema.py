"""How every CSV table of a run folder is declared: one typed row class per table, one field per column.

Both benchmarks use it (the read benchmark's `records/schema.py`, the transfer benchmark's
`transfer/rows.py`), so a column's name, unit and meaning are written once, the CSV header
is derived from the field order, and the column reference in the documentation is generated
from the same declarations. Columns that several tables share are declared once, here or in the
schema module of their benchmark, and reused by each table that writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class Column:
    """One CSV column: its header name, its unit ("" for a count or a label) and what it holds."""

    name: str
    unit: str = ""
    doc: str = ""

    def field(self) -> Any:
        """A dataclass field that writes this column (empty until measured)."""
        return field(default="", metadata={"column": self})


def column(name: str, unit: str = "", doc: str = "") -> Any:
    """A field that is one CSV column of this table only."""
    return Column(name, unit, doc).field()


def columns_group(columns: Sequence[Column]) -> Any:
    """A field holding several columns whose values another module computes (name -> value)."""
    return field(default_factory=dict, metadata={"group": tuple(columns)})


class Table:
    """A row type whose fields, in order, are its table's columns: header, units and CSV row."""

    @classmethod
    def declared(cls) -> list[Column]:
        """Every column of the table, in CSV order."""
        out: list[Column] = []
        for f in fields(cls):  # type: ignore[arg-type]
            out.extend(f.metadata["group"] if "group" in f.metadata else [f.metadata["column"]])
        return out

    @classmethod
    def columns(cls) -> list[str]:
        """The CSV header."""
        return [c.name for c in cls.declared()]

    @classmethod
    def units(cls) -> dict[str, str]:
        """Unit per column declared one by one (grouped columns carry their own)."""
        return {
            f.metadata["column"].name: f.metadata["column"].unit
            for f in fields(cls)  # type: ignore[arg-type]
            if "column" in f.metadata
        }

    @classmethod
    def by_column(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """Field names for CSV-named values (those of this table; others left out)."""
        names = {f.metadata["column"].name: f.name for f in fields(cls) if "column" in f.metadata}  # type: ignore[arg-type]
        return {names[k]: v for k, v in values.items() if k in names}

    def to_csv(self) -> dict[str, Any]:
        """The row as its table writes it, in column order."""
        out: dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if "group" in f.metadata:
                out.update({c.name: value.get(c.name, "") for c in f.metadata["group"]})
            else:
                out[f.metadata["column"].name] = value
        return out


# Columns every run folder's tables share: which run, which case, which trial of it.
RUN_ID = Column("run-id", doc="the run folder's id (`<UTC time>-<random>`)")
CASE_ID = Column("case-id", doc="the case: everything it varies, joined into one name")
TRIAL = Column("trial", doc="which repetition of the case (1, 2, …)")
ORDER = Column("order", doc="the case's position in the run's seeded, interleaved order")
STARTED = Column("started", doc="UTC time the case started (ISO 8601)")
FINISHED = Column("finished", doc="UTC time the case finished (ISO 8601)")

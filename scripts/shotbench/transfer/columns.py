"""The transfer benchmark's run folder (shotbench.runs): the columns of cases.csv and
transfers.csv, and what names one case's row among them. The only module that reads a raw
transfer row by column name."""

from __future__ import annotations

from shotbench.runs import CsvRow, RunKind

CASE_COLUMNS = [
    "run-id",
    "case-id",
    "trial",
    "order",
    "direction",
    "tool",
    "mode",
    "network",
    "concurrency",
    "test",
    "file-count",
    "file-size",
    "total-bytes",
    "seconds",
    "mb-per-s",
    "files-ok",
    "error",
    "started",
    "finished",
]
TRANSFER_COLUMNS = [
    "run-id",
    "case-id",
    "trial",
    "direction",
    "tool",
    "concurrency",
    "file",
    "size",
    "seconds",
    "verified",
    "error",
]


def case_trial(row: CsvRow) -> tuple[str, int]:
    """A transfer case row's identity: its case id does not name the trial."""
    return row["case-id"], int(row["trial"])


RUN_KIND = RunKind("transfer", CASE_COLUMNS, TRANSFER_COLUMNS, key=case_trial)

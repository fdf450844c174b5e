"""The transfer benchmark's run folder (shotbench.runs): the typed rows of cases.csv and
transfers.csv (their columns in order), and what names one case's row among them. The only module that reads a raw
transfer row by column name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shotbench.runs import CsvRow, RunKind
from shotbench.tableschema import CASE_ID, FINISHED, ORDER, RUN_ID, STARTED, TRIAL, Column, Table, column

# Columns both tables of a transfer run write, declared once.
DIRECTION = Column("direction", doc="`upload` or `download`")
TOOL = Column("tool", doc="the transfer tool (`transfer/programs/`)")
CONCURRENCY = Column("concurrency", doc="the thread, worker or connection count the tool was given")
SECONDS = Column("seconds", "s", "wall time of the transfer; empty when it failed")
ERROR = Column("error", doc="what went wrong, in one line; empty when ok")


@dataclass(frozen=True)
class TransferCaseRow(Table):
    """One row of a transfer run's cases.csv: one tool moving one set of files, once."""

    run_id: Any = RUN_ID.field()
    case_id: Any = CASE_ID.field()
    trial: Any = TRIAL.field()
    order: Any = ORDER.field()
    direction: Any = DIRECTION.field()
    tool: Any = TOOL.field()
    mode: Any = column(
        "mode", doc="how the tool is driven: `cli` (an external program), `async` or `sync` (a library in this process)"
    )
    network: Any = column("network", doc="the network profile between tool and server (`loopback` when none)")
    concurrency: Any = CONCURRENCY.field()
    test: Any = column("test", doc="the matrix row: file count × file size, e.g. `1000 File/1 MiB ea`")
    file_count: Any = column("file-count", doc="files moved")
    file_size: Any = column("file-size", "B", "size of each file")
    total_bytes: Any = column("total-bytes", "B", "file-count × file-size")
    seconds: Any = SECONDS.field()
    mb_per_s: Any = column("mb-per-s", "MB/s", "total-bytes ÷ seconds, in 10^6 bytes per second")
    client_cpu_s: Any = column(
        "client-cpu-s",
        "s",
        "CPU time (user + system) of the benchmark process and the tool's programs while the transfer was timed; "
        "empty when it failed",
    )
    server_cpu_s: Any = column(
        "server-cpu-s",
        "s",
        "CPU time of the embedded server's processes (versitygw, its byte counter, the proxy in front) while the "
        "transfer was timed: work the tool made the server do on the same cores; empty for your own S3 and on the "
        "sweep's networks",
    )
    stolen_cpu_s: Any = column(
        "stolen-cpu-s",
        "s",
        "CPU time the hypervisor gave to other machines while the transfer was timed, over all of this machine's "
        "CPUs (/proc/stat `steal`, 10 ms ticks): time no process here could run; empty where the kernel does not "
        "count it and for runs from before it was read",
    )
    files_ok: Any = column("files-ok", doc="files verified as delivered whole")
    checksum_checked: Any = column(
        "checksum-checked",
        doc="downloads: files whose bytes the tool itself compared with the whole-object CRC64NVME the server "
        "stores, as the tool reported it (`shotbench`, `awscrt-crc64nvme`); empty where the tool makes no such "
        "check",
    )
    error: Any = ERROR.field()
    started: Any = STARTED.field()
    finished: Any = FINISHED.field()


@dataclass(frozen=True)
class TransferRow(Table):
    """One row of transfers.csv: one file of a case, checked after the transfer."""

    run_id: Any = RUN_ID.field()
    case_id: Any = CASE_ID.field()
    trial: Any = TRIAL.field()
    direction: Any = DIRECTION.field()
    tool: Any = TOOL.field()
    concurrency: Any = CONCURRENCY.field()
    file: Any = column("file", doc="the file's name")
    size: Any = column("size", "B", "the file's size as delivered; empty when it never arrived")
    seconds: Any = SECONDS.field()
    verified: Any = column("verified", doc="whether the delivered file matched the source, checked by content")
    error: Any = ERROR.field()


CASE_COLUMNS = TransferCaseRow.columns()
TRANSFER_COLUMNS = TransferRow.columns()


def case_trial(row: CsvRow) -> tuple[str, int]:
    """A transfer case row's identity: its case id does not name the trial."""
    return row["case-id"], int(row["trial"])


RUN_KIND = RunKind("transfer", CASE_COLUMNS, TRANSFER_COLUMNS, key=case_trial)

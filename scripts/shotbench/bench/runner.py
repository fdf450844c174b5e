"""Run the cases of a benchmark: one driver process per Python environment, results appended
as each case finishes, resumable.

The orchestrator (this module, main environment) never imports a backend's libraries: it
plans the tasks, asks the environment's driver (`bench/driver.py`, messages in `bench/protocol.py`)
to warm a cluster, marks the S3 access log, starts the case, and writes the rows.
"""

from __future__ import annotations

import http.client
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from shotbench.analyse import stopping
from shotbench.backends import registry
from shotbench.backends.base import Backend
from shotbench.backends.meters import case_columns
from shotbench.bench.checksums import Checksums
from shotbench.bench.driverpool import PREPARE_TIMEOUT, DriverError, DriverProc, Drivers, DriverTimeout
from shotbench.bench.faultcount import InjectedFaults
from shotbench.bench.inventory import Workload
from shotbench.bench.progress import case_line
from shotbench.bench.protocol import (
    Gather,
    Prepare,
    Run,
    RunReply,
    Spec,
)
from shotbench.bench.watchdog import ServerGone, Watchdog, answers
from shotbench.errors import UserError
from shotbench.plan import matrix as planmod
from shotbench.plan.matrix import Case, ShotFile
from shotbench.provenance import utc_iso
from shotbench.records.schema import (
    CaseRow,
    WorkerRow,
    efficiency,
    harness_overhead,
    task_time_sum,
    worker_rows,
)
from shotbench.records.status import FAILED, OK, STALL, TIMEOUT, beyond, case_status, row_status, stalled
from shotbench.runs import RunFolder
from shotbench.store.credentials import (
    CaseCredentials,
    CredentialSource,
    refused,
    refused_sentence,
)


def credential_label(cls: type[Backend], options: dict[str, Any], creds: CaseCredentials | None) -> str:
    """cases.csv's `credential-source`: how the backend took the case's set, and where it came
    from (`given:iam-role`; `chain:iam-role` when libhdf5 2.x's own chain found it; `anonymous`)."""
    use = cls.signs_with(cls.effective_options(options))
    if creds is None or not use:
        return ""
    if creds.source == "anonymous":
        return "anonymous"
    return f"{use}:{creds.source}"


class ServerDown(UserError):
    """The S3 endpoint stopped answering between cases: the run cannot go on."""

    exit_code = 1


HEALTH_TIMEOUT = 5.0  # the server's answer to one HEAD between cases
HEALTH_ATTEMPTS = 3  # one reset connection is a fault, not a dead server
HEALTH_STALL_ATTEMPTS = 2  # a check that got no answer in HEALTH_TIMEOUT is tried once more, not twice
DEADLINE_SLACK = 10.0  # seconds past the task deadline for the driver to report back
INDEX_SECONDS_PER_FILE = 120.0  # an index, repository or HSDS load, built before the clock (HSDS: ~30 s a file here)


@dataclass
class CaseResult:
    case_row: CaseRow
    rows: list[WorkerRow]
    dashboard: str = ""


@dataclass
class Runner:
    """Runs cases against one workload, appending each to the run folder."""

    folder: RunFolder
    run_id: str
    workload: Workload
    seed: int
    options: dict[str, dict[str, Any]]
    drivers: Drivers
    dashboards: set[str] = field(default_factory=set)
    say: Callable[[str], None] = print
    task_timeout: float = 0.0  # seconds; 0 = derived per case from what its tasks read
    checksums: Checksums | None = None  # set: every signal read is checked against the local copy
    faults: InjectedFaults = field(default_factory=InjectedFaults)  # HTTP faults the proxy injected, per case
    gone: ServerGone | None = None  # set when the watchdog ended a case: the run stops after recording it
    stop_rule: stopping.Rule = field(default_factory=stopping.Rule)  # trials until the interval is tight
    _samples: dict[str, list[float]] | None = None  # per case group: task read times of its ok trials
    _trials: dict[str, int] = field(default_factory=dict)
    # requests may reach the server after their client gave up (fault profiles): each count then
    # waits for the access log to go quiet, not only for the last response
    late_lines: bool = False
    _log_end: int | None = None  # access-log offset where the last counted window ended
    _credentials: CredentialSource | None = None  # asked for a current set at every case's start
    _case_creds: CaseCredentials | None = None  # the set the current case was given

    def __post_init__(self) -> None:
        self.drivers.watch = self.watchdog()

    def watchdog(self) -> Watchdog | None:
        """Checks of the run's S3 endpoint and scheduler while its cases run (none for local data)."""
        s3 = self.workload.s3
        url = None
        if s3 is not None:
            url = getattr(s3, "endpoint_url", None) or (
                f"https://s3.{s3.region}.amazonaws.com/" if getattr(s3, "region", None) else None
            )
        if url is None and not self.drivers.scheduler:
            return None
        return Watchdog(url, getattr(s3, "ca_bundle", None), self.drivers.scheduler)

    def _group_samples(self) -> dict[str, list[float]]:
        """Task times of every ok case already in the folder (a resumed run continues them)."""
        if self._samples is None:
            self._samples = {}
            ok = {r["case-id"] for r in self.folder.cases() if row_status(r) == OK}
            for cid in ok:
                g = stopping.group_of(cid)
                self._trials[g] = self._trials.get(g, 0) + 1
            for r in self.folder.details():
                if r.get("case-id") in ok and r.get("open+read-data-time", "") != "":
                    self._samples.setdefault(stopping.group_of(r["case-id"]), []).append(
                        float(r["open+read-data-time"])
                    )
        return self._samples

    def _stop(self, res: CaseResult) -> CaseResult:
        """The group's interval after this case, and whether it needs another trial (case row columns)."""
        row = res.case_row
        if row.status != OK:
            return res
        g = stopping.group_of(str(row.case_id))
        samples = self._group_samples().setdefault(g, [])
        samples += [float(r.open_read_data_time) for r in res.rows if (r.status or OK) == OK]
        self._trials[g] = self._trials.get(g, 0) + 1
        width, verdict = self.stop_rule.verdict(samples, self._trials[g])
        return replace(
            res, case_row=replace(row, ci_half_width="" if width != width else round(width, 5), stop=verdict)
        )

    def spec(self, case: Case, backend: str | None = None) -> Spec:
        """The case's backend with its settings; with `backend` (the raw-get ceiling), that one with none."""
        name = backend or case.backend
        if self._credentials is None:
            self._credentials = CredentialSource(self.workload.s3)
        creds = self._credentials.current()
        if backend is None:
            self._case_creds = creds
        return Spec(
            name,
            self.workload.source,
            pb_size=case.pb_size if backend is None else 0,
            chunk_cache=case.chunk_cache if backend is None else 0,
            options={**self._index_option(name), **self.options.get(name, {})},
            block_cache=case.block_cache if backend is None else None,
            verify=self.checksums is not None and backend is None,
            credentials=None if creds is None else creds.to_json(),
            endpoint=self.workload.path_of(case.backend)[1],  # the raw-get ceiling too: the case's path
        )

    def _labelled(self, row: CaseRow, cls: type[Backend]) -> CaseRow:
        """`row` with the case's credential-source (see `credential_label`) and the network
        profile its requests went through (the run's, or its backend's own path)."""
        opts = self.options.get(cls.name, {})
        return replace(
            row,
            credential_source=credential_label(cls, opts, self._case_creds),
            network=self.workload.path_of(str(row.backend))[0] if self.workload.s3 is not None else "",
        )

    def _index_option(self, name: str) -> dict[str, str]:
        """Readers with a per-file index keep it beside the run, shared by all its cases."""
        if getattr(registry.get(name), "builds_index", False):
            return {"index_dir": str(self.folder.path / "index" / name)}
        return {}

    def deadline(self, tasks: list[Any]) -> float:
        """Seconds a case's tasks may take before they are recorded as `timeout`.

        `task_timeout` from the config when set; else derived from the most any one task
        could read (every file it opens, whole, at a slow 2 MB/s) plus a minute of slack.
        """
        if self.task_timeout > 0:
            return self.task_timeout
        most = 0
        for t in tasks:
            most = max(
                most,
                sum(sum({it.key: it.size if it.length < 0 else it.length for it in p.items}.values()) for p in t.parts),
            )
        return 60.0 + most / 2e6

    def _timed(
        self,
        drv: DriverProc,
        cls: type[Backend],
        case: Case,
        tasks: list[Any],
        gather: ShotFile | None = None,
    ) -> tuple[RunReply, float | None, Any]:
        """The case's run reply, its gather-time (None when not measured) and its access-log counts.

        The spec, with the case's credentials, is made right before the case is prepared: a driver
        that had to start first does not eat into the set's life."""
        self.drivers.reserve(cls.env_key(), case.workers)
        spec = self.spec(case)
        prep = drv.request(Prepare(case.workers, spec), timeout=PREPARE_TIMEOUT)
        seconds = None
        if gather is not None:  # upstream's gather-time: listed before the clock, timed on its own
            seconds = drv.request(Gather(gather.key, gather.size), timeout=PREPARE_TIMEOUT).seconds
        link = prep.dashboard
        if link and link not in self.dashboards:
            self.dashboards.add(link)
            self.say(f"  dask dashboard [{drv.name}]: {link}")
        log = self.workload.access_log
        stats = None
        bucket = self.workload.bucket
        if log is not None:
            from shotbench.store import accesslog

            if self.late_lines or self._log_end is None:
                accesslog.settle(log, quiet=0.25)  # late lines of given-up requests land before the mark
                self._log_end = accesslog.offset_marker(log)
            # the mark: after the byte counts of every GET so far (the raw-get ceiling's come ~0.1 s late)
            _, mark = accesslog.counted_window(log, self._log_end, bucket)
        limit = self.deadline(tasks)
        if getattr(cls, "builds_index", False):  # the untimed index build runs inside this request
            limit += INDEX_SECONDS_PER_FILE * len({it.key for t in tasks for p in t.parts for it in p.items})
        out = drv.request(Run(tasks, park_timeout=PREPARE_TIMEOUT), timeout=limit + DEADLINE_SLACK)
        if log is not None:
            if self.late_lines:
                accesslog.settle(log, quiet=0.25)
            # every response is back, so every line is in: wait only for the GETs' byte counts
            records, self._log_end = accesslog.counted_window(log, mark, bucket)
            stats = accesslog.window_stats(records, bucket)
        return out, seconds, stats

    def raw_get_runtime(self, case: Case) -> float | None:
        """The S3 ceiling for exactly this case's work, measured right after it."""
        cls = registry.get("raw-get")
        files = self.workload.files_for(case.mode, case.family)
        tasks = planmod.case_tasks(case, files, self.seed, reads_hdf5=False)
        drv = self.drivers.for_backend(cls)
        self.drivers.reserve(cls.env_key(), case.workers)
        drv.request(Prepare(case.workers, self.spec(case, "raw-get")), timeout=PREPARE_TIMEOUT)
        out = drv.request(Run(tasks), timeout=self.deadline(tasks) + DEADLINE_SLACK)
        return float(out.total)

    def check_server(self) -> None:
        """Between cases: a dead S3 endpoint stops the run now, not after every client's retries."""
        s3 = self.workload.s3
        if s3 is None or not getattr(s3, "endpoint_url", None):
            return
        from shotbench.store.s3 import check_reachable

        try:
            check_reachable(s3)
            for attempt in range(HEALTH_ATTEMPTS):  # one reset or stalled connection is a fault, not a dead server
                try:
                    answers(s3.endpoint_url, HEALTH_TIMEOUT, getattr(s3, "ca_bundle", None))
                    break
                except (
                    TimeoutError
                ):  # a stalled check costs HEALTH_TIMEOUT each time: a dead server must stop the run soon
                    if attempt >= HEALTH_STALL_ATTEMPTS - 1:
                        raise
                except (ConnectionResetError, http.client.RemoteDisconnected, http.client.BadStatusLine):
                    if attempt == HEALTH_ATTEMPTS - 1:
                        raise
        except (UserError, OSError, http.client.HTTPException) as exc:
            reason = (
                str(exc).split(";")[0]
                if isinstance(exc, UserError)
                else f"no HTTP answer within {HEALTH_TIMEOUT:.0f} s"
            )
            raise ServerDown(
                f"the S3 server stopped answering during the run ({reason}); "
                "fix it and finish with `shotbench bench --resume`."
            ) from None

    def run_case(self, case: Case) -> CaseResult:
        cls = registry.get(case.backend)
        files = self.workload.files_for(case.mode, case.family)
        layout, family = self.workload.shape(case.family)
        started = time.time()
        base = CaseRow(
            run_id=self.run_id,
            case_id=case.case_id,
            trial=case.trial,
            order=case.order,
            backend=case.backend,
            obj_type=case.mode,
            num_workers=case.workers,
            pb_size=case.pb_size,
            chunk_cache=case.chunk_cache,
            layout=layout,
            file_family=family,
            block_cache="" if case.block_cache is None else case.block_cache,
        )
        many = planmod.is_many_shot(files) and cls.reads_hdf5
        self._case_creds = None
        tasks: list[Any] = []
        v: dict[str, str] = {}
        try:
            drv = self.drivers.for_backend(cls)
            v = drv.versions
            tasks = planmod.case_tasks(case, files, self.seed, cls.reads_hdf5)
            out, gather, stats = self._timed(drv, cls, case, tasks, files[0] if many else None)
        except DriverTimeout as exc:
            base = self._labelled(base, cls)
            hdf5, h5v = (v.get("hdf5", ""), v.get("h5py", "")) if cls.reads_hdf5 else ("", "")
            rows = timeout_rows(tasks, case, str(exc), files, self.run_id, hdf5, h5v)
            return CaseResult(failed_row(base, len(tasks), len(rows), f"timeout: {exc}", started), rows)
        except ServerGone as exc:
            base = self._labelled(base, cls)
            self.gone = exc
            reason = str(exc).split(";")[0]
            hdf5, h5v = (v.get("hdf5", ""), v.get("h5py", "")) if cls.reads_hdf5 else ("", "")
            rows = timeout_rows(tasks, case, reason, files, self.run_id, hdf5, h5v, status=FAILED)
            return CaseResult(failed_row(base, len(tasks), max(1, len(rows)), reason, started), rows)
        except (DriverError, UserError) as exc:
            return CaseResult(failed_row(self._labelled(base, cls), 0, 1, str(exc), started), [])
        base = self._labelled(base, cls)
        creds = self._case_creds
        total = float(out.total)
        raw = out.rows
        if self.checksums is not None:
            for r in raw:
                r["verified"], wrong = self.checksums.verdict(r)
                r["error"] = r.get("error") or wrong
        hdf5, h5v = (v.get("hdf5", ""), v.get("h5py", "")) if cls.reads_hdf5 else ("", "")
        rows = worker_rows(
            raw,
            case=case,
            total=total,
            tot_num_obj=planmod.tot_num_obj(case.mode, files, case.files),
            run_id=self.run_id,
            hdf5=hdf5,
            h5py_version=h5v,
            layout=layout,
            family=family,
            gather=gather,
        )
        rows, stalls = mark_stalls(rows)
        errors = [r.error for r in rows if r.error]
        if creds is not None and creds.expires and any(refused(str(e)) for e in errors):  # a set that expires
            self.say(refused_sentence(str(case.case_id), creds))
        ceiling_error = ""
        rg: float | None = total if not cls.reads_hdf5 else None
        if rg is None and not errors:
            try:
                with self.faults.ceiling():
                    rg = self.raw_get_runtime(case)
            except ServerGone as exc:
                self.gone = exc
                ceiling_error = f"raw-get: {str(exc).split(';')[0]}"
            except (DriverError, UserError) as exc:
                ceiling_error = f"raw-get: {exc}"
        first = errors[0] if errors else ceiling_error
        tsum = task_time_sum(raw)
        row = replace(
            base,
            n_tasks=len(tasks),
            total_runtime=total,
            task_time_sum=tsum,
            harness_efficiency=efficiency(tsum, case.workers, total),
            harness_overhead=harness_overhead(raw, total),
            raw_get_runtime="" if rg is None else rg,
            gets="" if stats is None else stats.gets,
            get_bytes="" if stats is None or stats.get_bytes is None else stats.get_bytes,
            hdf5_version=hdf5,
            h5py_version=h5v,
            errors=len(errors) + bool(ceiling_error),
            status=case_status([r.status for r in rows], bool(ceiling_error)),
            first_error=" ".join(first.split())[:500],
            stalls=stalls,
            started=utc_iso(out.started),
            finished=utc_iso(out.finished),
            **CaseRow.by_column(
                case_columns(
                    raw, planmod.needed_bytes(tasks, files) if cls.reads_hdf5 else sum(int(r["bytes"]) for r in raw)
                )
            ),  # raw-get: the ranges it fetched
            gather_time="" if gather is None else gather,
        )
        return CaseResult(row, rows)

    def run(self, cases: list[Case], done_before: int = 0, total_cases: int | None = None) -> list[CaseRow]:
        """Run `cases` in order, appending each; prints progress with an ETA."""
        total_cases = total_cases or len(cases) + done_before
        t0 = time.time()
        out = []
        for i, case in enumerate(cases, 1):
            self.check_server()
            with self.faults.case(case.case_id):
                res = self.run_case(case)
            res = self._stop(res)
            self.folder.append_case([r.to_csv() for r in res.rows], res.case_row.to_csv())
            if self.gone is not None:  # the case is recorded as failed; the run stops here
                raise self.gone
            if res.case_row.status != OK:
                self.check_server()  # a dead server ends the run now; --resume reruns failed cases
            out.append(res.case_row)
            elapsed = time.time() - t0
            eta = elapsed / i * (len(cases) - i)
            self.say(case_line(case, res.case_row, done_before + i, total_cases, elapsed, eta))
        n = flag_stalled_trials(self.folder)
        if n:
            self.say(
                f"{n} case(s) far slower than the same settings' other trials were set apart as stalls, not measurements"
            )
        return out


def mark_stalls(rows: list[WorkerRow]) -> tuple[list[WorkerRow], int]:
    """Rows of one case far beyond the case's other tasks become `stall` (with the reason as
    their error), so a stalled connection never enters a statistic; returns the rows and how many."""
    times = [float(r.open_read_data_time) for r in rows]
    flags = stalled(times, [float(r.bytes_read or 0) for r in rows])
    out = []
    for i, (r, slow) in enumerate(zip(rows, flags)):
        if slow and r.status == OK:
            med = statistics.median(times[:i] + times[i + 1 :])
            r = replace(
                r, status=STALL, error=f"stall: {times[i]:.1f} s against a median {med:.2f} s of the case's other tasks"
            )
        out.append(r)
    return out, sum(1 for r in out if r.status == STALL)


def _settings(case_id: str) -> str:
    """A case id without its trial (`t2-…`): the cases that are trials of the same settings."""
    return case_id.split("-", 1)[1] if case_id[:1] == "t" and "-" in case_id else case_id


def flag_stalled_trials(folder: RunFolder) -> int:
    """An ok case far slower than the same settings' other ok trials is a stall, found once the
    trials are in (a one-task case has no peer within it). Its slowest task becomes `stall`, the
    case is no longer `ok`; both tables are rewritten. Returns the number of cases set apart."""
    groups: dict[str, list[dict[str, str]]] = {}
    for r in folder.cases():
        if row_status(r) == OK:
            groups.setdefault(_settings(r["case-id"]), []).append(r)
    peers: dict[str, float] = {}
    for rs in groups.values():
        totals = [float(r["total-runtime"]) for r in rs]
        for i, r in enumerate(rs):
            others = totals[:i] + totals[i + 1 :]
            if beyond(totals[i], others):
                peers[r["case-id"]] = statistics.median(others)
    if not peers:
        return 0
    slowest: dict[str, dict[str, str]] = {}
    for w in folder.details():
        cid = w.get("case-id", "")
        if cid in peers and (
            cid not in slowest or float(w["open+read-data-time"]) > float(slowest[cid]["open+read-data-time"])
        ):
            slowest[cid] = w

    def ident(w: dict[str, str]) -> tuple[str, ...]:
        return (w.get("case-id", ""), w.get("worker#", ""), w.get("obj-id", ""), w.get("open+read-data-time", ""))

    marked = {ident(w) for w in slowest.values()}

    def detail(w: dict[str, str]) -> dict[str, str]:
        if ident(w) in marked:
            return {
                **w,
                "status": STALL,
                "error": f"stall: the case took far longer than its other trials (median {peers[w['case-id']]:.2f} s)",
            }
        return w

    def case(r: dict[str, str]) -> dict[str, Any]:
        cid = r["case-id"]
        if cid not in peers:
            return r
        reason = f"stall: {float(r['total-runtime']):.1f} s against a median {peers[cid]:.2f} s of its other trials"
        tasks = max(1, int(float(r.get("n-tasks") or 1)))
        return {
            **r,
            "status": case_status([STALL] + [OK] * (tasks - 1), False),
            "stalls": 1,
            "errors": int(float(r.get("errors") or 0)) + 1,
            "first-error": r.get("first-error") or reason,
        }

    folder.rewrite(case, detail)
    return len(peers)


def failed_row(base: CaseRow, n_tasks: int, errors: int, error: str, started: float) -> CaseRow:
    """The case row of a case that produced no measurement."""
    return replace(
        base,
        n_tasks=n_tasks,
        errors=errors,
        status=FAILED,
        first_error=" ".join(error.split())[:500],
        started=utc_iso(started),
        finished=utc_iso(),
    )


def timeout_rows(
    tasks: list[Any],
    case: Case,
    error: str,
    files: list[ShotFile],
    run_id: str,
    hdf5: str,
    h5py_version: str,
    status: str = TIMEOUT,
) -> list[WorkerRow]:
    """One `timeout` row per part of every task that did not report before the deadline (or,
    with `status`, that was ended for another reason: its server gone)."""
    raw = [
        {
            "worker#": t.index,
            "obj-id": p.obj_id,
            "time": 0.0,
            "objs": 0,
            "dsets": 0,
            "bytes": 0,
            "open": 0.0,
            "error": error,
            "status": status,
        }
        for t in tasks
        for p in t.parts
    ]
    return worker_rows(
        raw,
        case=case,
        total=0.0,
        tot_num_obj=planmod.tot_num_obj(case.mode, files, case.files),
        run_id=run_id,
        hdf5=hdf5,
        h5py_version=h5py_version,
    )

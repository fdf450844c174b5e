"""Run the cases of a benchmark: one driver process per Python environment, results appended
as each case finishes, resumable.

The orchestrator (this module, main environment) never imports a backend's libraries: it
plans the tasks, asks the environment's driver (`read/run/driver.py`, messages in `read/run/protocol.py`)
to warm a cluster, marks the S3 access log, starts the case, and writes the rows.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import select
import signal
import statistics
import subprocess
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from shotbench.backends import registry
from shotbench.backends.base import Backend, Source, child_env
from shotbench.backends.meters import case_columns
from shotbench.errors import UserError
from shotbench.paths import state_dir
from shotbench.processes import die_with_parent
from shotbench.provenance import utc_iso
from shotbench.read.analyse import stopping
from shotbench.read.plan import matrix as planmod
from shotbench.read.plan.matrix import Case, ShotFile
from shotbench.read.run.checksums import Checksums
from shotbench.read.run.faultcount import InjectedFaults
from shotbench.read.run.protocol import (
    PROTOCOL_VERSION,
    Close,
    Failed,
    Gather,
    Hello,
    Prepare,
    ProtocolMismatch,
    Quit,
    Reply,
    Request,
    Run,
    RunReply,
    Spec,
    read_reply,
)
from shotbench.read.schema import (
    efficiency,
    harness_overhead,
    task_time_sum,
    worker_rows,
)
from shotbench.read.status import FAILED, OK, TIMEOUT, case_status, row_status
from shotbench.runs import RunFolder
from shotbench.units import MiB


class DriverError(RuntimeError):
    """The driver process of an environment failed (or exited)."""


class DriverTimeout(DriverError):
    """The driver did not answer within the deadline; its process group has been ended."""


class ServerDown(UserError):
    """The S3 endpoint stopped answering between cases: the run cannot go on."""

    exit_code = 1


HELLO_TIMEOUT = 180.0  # a driver imports h5py, numpy and dask before it answers
HEALTH_TIMEOUT = 5.0  # the server's answer to one HEAD between cases
HEALTH_ATTEMPTS = 3
DEADLINE_SLACK = 10.0  # seconds past the task deadline for the driver to report back
PREPARE_TIMEOUT = 300.0  # starting and warming a LocalCluster (bounded; a dead scheduler ends here)

R = TypeVar("R", bound=Reply)


class DriverProc:
    """`<env python> -m shotbench.read.run.driver --serve`, spoken to with `read/run/protocol.py`'s messages."""

    def __init__(self, name: str, python: Path, env: dict[str, str], log: Path, scheduler: str | None,
                 prefix: list[str] | None = None) -> None:
        self.name, self.python, self.env, self.log, self.scheduler = name, python, env, log, scheduler
        self.prefix = list(prefix or [])  # e.g. a mount namespace that trusts a private CA
        self.proc: subprocess.Popen[str] | None = None
        self.versions: dict[str, str] = {}

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        cmd = [*self.prefix, str(self.python), "-m", "shotbench.read.run.driver", "--serve"]
        if self.scheduler:
            cmd += ["--scheduler", self.scheduler]
        self._logfh = open(self.log, "a")
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._logfh,
            text=True, env=self.env, start_new_session=True, bufsize=1,
            preexec_fn=die_with_parent(),
        )
        self.versions = self.request(Hello(PROTOCOL_VERSION), timeout=HELLO_TIMEOUT).versions

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def request(self, req: Request[R], timeout: float | None = None) -> R:
        """One request, one reply line; with `timeout`, a driver that has not answered in time
        is ended (with its Dask processes) and `DriverTimeout` raised. A driver whose reply
        shows another version of shotbench is ended too (`ProtocolMismatch`, naming `make envs`)."""
        if not self.alive() and not isinstance(req, Hello):
            self.start()
        assert self.proc and self.proc.stdin and self.proc.stdout
        try:
            self.proc.stdin.write(json.dumps(req.to_json()) + "\n")
            self.proc.stdin.flush()
            if timeout is not None and not select.select([self.proc.stdout], [], [], timeout)[0]:
                self.kill()
                raise DriverTimeout(f"no answer from the {self.name} driver within {timeout:.0f} s")
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            raise DriverError(f"the {self.name} driver exited; see {self.log}")
        try:
            reply = read_reply(req, json.loads(line))
        except ProtocolMismatch as exc:
            self.kill()
            raise ProtocolMismatch(f"the {self.name} environment: {exc}") from None
        if isinstance(reply, Failed):
            raise DriverError(reply.error)
        return reply

    def stop(self, timeout: float = 20.0) -> None:
        """Ask the driver to quit (it closes its clusters); if it is busy mid-case, end its
        process group (the driver and the Dask processes it started)."""
        if self.proc is None:
            return
        try:
            if self.alive():
                assert self.proc.stdin
                self.proc.stdin.write(json.dumps(Quit().to_json()) + "\n")
                self.proc.stdin.flush()
                self.proc.stdin.close()
                self.proc.wait(timeout=timeout)
        except Exception:  # noqa: BLE001 - fall through to ending the group
            pass
        self.kill()

    def kill(self) -> None:
        """End the driver's process group (the driver and the Dask processes it started)."""
        if self.proc is None:
            return
        if self.alive():
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, sig)
                try:
                    self.proc.wait(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self.proc = None


class Drivers:
    """One driver per environment, started on first use; keeps warm clusters within a budget."""

    def __init__(self, s3: Any, log_dir: Path, scheduler: str | None, max_live_workers: int, backends: list[str]) -> None:
        self.s3, self.log_dir, self.scheduler = s3, log_dir, scheduler
        self.max_live = max_live_workers
        self.drivers: dict[str, DriverProc] = {}
        self.live: OrderedDict[tuple[str, int], int] = OrderedDict()
        self.backends = backends

    def for_backend(self, cls: type[Backend]) -> DriverProc:
        key = cls.env_key()
        drv = self.drivers.get(key)
        if drv is None:
            extra = dict(self.s3.env_vars()) if self.s3 is not None else {}
            if self.s3 is not None:
                for name in self.backends:
                    other = registry.get(name)
                    if other.env_key() == key:
                        extra.update(other.process_env(self.s3))
            drv = DriverProc(key, cls.python(), child_env(extra), self.log_dir / f"driver-{key}.log", self.scheduler,
                             self._trust_prefix(cls))
            drv.start()
            self.drivers[key] = drv
        elif not drv.alive():
            self.live = OrderedDict((k, v) for k, v in self.live.items() if k[0] != key)
            drv.start()
        return drv

    def _trust_prefix(self, cls: type[Backend]) -> list[str]:
        """ROS3 drivers trust only the system CA bundle: over https to the embedded server they
        run in a mount namespace whose system bundle also holds its private CA."""
        ca = getattr(self.s3, "ca_bundle", None)
        if not ca or not cls.name.startswith("ros3"):
            return []
        from shotbench.store import tls

        self.log_dir.mkdir(parents=True, exist_ok=True)
        return tls.with_system_bundle(tls.trusting(ca, self.log_dir), [])

    def reserve(self, env_key: str, workers: int) -> None:
        """Evict least recently used warm clusters so idle processes stay within budget."""
        k = (env_key, workers)
        if k in self.live:
            self.live.move_to_end(k)
            return
        if self.scheduler is None:
            while self.live and sum(self.live.values()) + workers > self.max_live:
                (ek, w), _ = self.live.popitem(last=False)
                drv = self.drivers.get(ek)
                if drv and drv.alive():
                    drv.request(Close(w))
        self.live[k] = workers

    def stop(self, timeout: float = 20.0) -> None:
        for drv in self.drivers.values():
            drv.stop(timeout)


@dataclass
class Workload:
    """The files a run reads and where: fixed for the whole run (and its resumes)."""

    source: Source
    files: list[ShotFile]  # every file (shots mode picks from these)
    signal_files: list[ShotFile]  # the seeded sample read in signals mode
    s3: Any  # S3Config or None (local data)
    access_log: Path | None
    bucket: str | None
    families: dict[str, Any] = field(default_factory=dict)  # name -> families.Family (`layouts` runs)
    family_files: dict[str, tuple[list[ShotFile], list[ShotFile]]] = field(default_factory=dict)

    def files_for(self, mode: str, family: str = "") -> list[ShotFile]:
        """The files a case reads; a family's own files (and signals sample) in a `layouts` run."""
        files, signal_files = self.family_files[family] if family else (self.files, self.signal_files)
        return signal_files if mode == "signals" else files

    def shape(self, family: str) -> tuple[str, str]:
        """(layout, family) as the rows record them; ("", "") for the one-workload runs."""
        fam = self.families.get(family)
        return (fam.layout, fam.name) if fam is not None else ("", "")


@dataclass
class CaseResult:
    case_row: dict[str, Any]
    rows: list[dict[str, Any]]
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
    stop_rule: stopping.Rule = field(default_factory=stopping.Rule)  # trials until the interval is tight
    _samples: dict[str, list[float]] | None = None  # per case group: task read times of its ok trials
    _trials: dict[str, int] = field(default_factory=dict)

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
                    self._samples.setdefault(stopping.group_of(r["case-id"]), []).append(float(r["open+read-data-time"]))
        return self._samples

    def _stop(self, res: CaseResult) -> None:
        """The group's interval after this case, and whether it needs another trial (case row columns)."""
        row = res.case_row
        if row["status"] != OK:
            return
        g = stopping.group_of(row["case-id"])
        samples = self._group_samples().setdefault(g, [])
        samples += [float(r["open+read-data-time"]) for r in res.rows if r.get("status", OK) == OK]
        self._trials[g] = self._trials.get(g, 0) + 1
        width, verdict = self.stop_rule.verdict(samples, self._trials[g])
        row["ci-half-width"] = "" if width != width else round(width, 5)
        row["stop"] = verdict

    def spec(self, case: Case, backend: str | None = None) -> Spec:
        """The case's backend with its settings; with `backend` (the raw-get ceiling), that one with none."""
        name = backend or case.backend
        return Spec(
            name, self.workload.source,
            pb_size=case.pb_size if backend is None else 0, chunk_cache=case.chunk_cache if backend is None else 0,
            options={**self._index_option(name), **self.options.get(name, {})},
            block_cache=case.block_cache if backend is None else None,
            verify=self.checksums is not None and backend is None,
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
            most = max(most, sum(sum({it.key: it.size if it.length < 0 else it.length for it in p.items}.values())
                                 for p in t.parts))
        return 60.0 + most / 2e6

    def _timed(self, drv: DriverProc, cls: type[Backend], case: Case, spec: Spec, tasks: list[Any],
               gather: ShotFile | None = None) -> tuple[RunReply, float | None, Any]:
        """The case's run reply, its gather-time (None when not measured) and its access-log counts."""
        self.drivers.reserve(cls.env_key(), case.workers)
        prep = drv.request(Prepare(case.workers, spec), timeout=PREPARE_TIMEOUT)
        seconds = None
        if gather is not None:  # upstream's gather-time: listed before the clock, timed on its own
            seconds = drv.request(Gather(gather.key, gather.size), timeout=PREPARE_TIMEOUT).seconds
        link = prep.dashboard
        if link and link not in self.dashboards:
            self.dashboards.add(link)
            self.say(f"  dask dashboard [{drv.name}, {case.workers} workers]: {link}")
        log = self.workload.access_log
        stats = None
        if log is not None:
            from shotbench.store import accesslog

            accesslog.settle(log, quiet=0.25)  # earlier requests' late lines land before the mark
            mark = accesslog.offset_marker(log)
        limit = self.deadline(tasks)
        out = drv.request(Run(tasks, park_timeout=PREPARE_TIMEOUT), timeout=limit + DEADLINE_SLACK)
        if log is not None:
            stats = accesslog.count_since(log, mark, bucket=self.workload.bucket, quiet=0.25)
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
            for attempt in range(HEALTH_ATTEMPTS):  # one reset connection is a fault, not a dead server
                try:
                    answers(s3.endpoint_url, HEALTH_TIMEOUT, getattr(s3, "ca_bundle", None))
                    break
                except (ConnectionResetError, http.client.RemoteDisconnected, http.client.BadStatusLine):
                    if attempt == HEALTH_ATTEMPTS - 1:
                        raise
        except (UserError, OSError, http.client.HTTPException) as exc:
            reason = str(exc).split(";")[0] if isinstance(exc, UserError) else f"no HTTP answer within {HEALTH_TIMEOUT:.0f} s"
            raise ServerDown(f"the S3 server stopped answering during the run ({reason}); "
                             "fix it and finish with `shotbench bench --resume`.") from None

    def run_case(self, case: Case) -> CaseResult:
        cls = registry.get(case.backend)
        files = self.workload.files_for(case.mode, case.family)
        layout, family = self.workload.shape(case.family)
        started = time.time()
        base = {
            "run-id": self.run_id, "case-id": case.case_id, "trial": case.trial, "order": case.order,
            "backend": case.backend, "obj-type": case.mode, "num-workers": case.workers,
            "pb-size": case.pb_size, "chunk-cache": case.chunk_cache, "layout": layout, "file-family": family,
            "block-cache": "" if case.block_cache is None else case.block_cache,
        }
        many = planmod.is_many_shot(files) and cls.reads_hdf5
        tasks: list[Any] = []
        v: dict[str, str] = {}
        try:
            drv = self.drivers.for_backend(cls)
            v = drv.versions
            tasks = planmod.case_tasks(case, files, self.seed, cls.reads_hdf5)
            out, gather, stats = self._timed(drv, cls, case, self.spec(case), tasks, files[0] if many else None)
        except DriverTimeout as exc:
            hdf5, h5v = (v.get("hdf5", ""), v.get("h5py", "")) if cls.reads_hdf5 else ("", "")
            rows = timeout_rows(tasks, case, str(exc), files, self.run_id, hdf5, h5v)
            return CaseResult(failed_row(base, len(tasks), len(rows), f"timeout: {exc}", started), rows)
        except (DriverError, UserError) as exc:
            return CaseResult(failed_row(base, 0, 1, str(exc), started), [])
        total = float(out.total)
        raw = out.rows
        if self.checksums is not None:
            for r in raw:
                r["verified"], wrong = self.checksums.verdict(r)
                r["error"] = r.get("error") or wrong
        hdf5, h5v = (v.get("hdf5", ""), v.get("h5py", "")) if cls.reads_hdf5 else ("", "")
        rows = worker_rows(raw, case=case, total=total, tot_num_obj=planmod.tot_num_obj(case.mode, files),
                           run_id=self.run_id, hdf5=hdf5, h5py_version=h5v, layout=layout, family=family, gather=gather)
        errors = [r["error"] for r in rows if r["error"]]
        ceiling_error = ""
        rg: float | None = total if not cls.reads_hdf5 else None
        if rg is None and not errors:
            try:
                with self.faults.ceiling():
                    rg = self.raw_get_runtime(case)
            except (DriverError, UserError) as exc:
                ceiling_error = f"raw-get: {exc}"
        first = errors[0] if errors else ceiling_error
        tsum = task_time_sum(raw)
        row = {
            **base, "n-tasks": len(tasks), "total-runtime": total, "task-time-sum": tsum,
            "harness-efficiency": efficiency(tsum, case.workers, total),
            "harness-overhead": harness_overhead(raw, total),
            "raw-get-runtime": "" if rg is None else rg,
            "gets": "" if stats is None else stats.gets, "get-bytes": "" if stats is None or stats.get_bytes is None else stats.get_bytes,
            "hdf5-version": hdf5, "h5py-version": h5v,
            "errors": len(errors) + bool(ceiling_error),
            "status": case_status([r["status"] for r in rows], bool(ceiling_error)),
            "first-error": " ".join(first.split())[:500],
            "started": utc_iso(out.started), "finished": utc_iso(out.finished),
            **case_columns(raw, planmod.needed_bytes(tasks, files) if cls.reads_hdf5
                           else sum(int(r["bytes"]) for r in raw)),  # raw-get: the ranges it fetched
            "gather-time": "" if gather is None else gather,
        }
        return CaseResult(row, rows)

    def run(self, cases: list[Case], done_before: int = 0, total_cases: int | None = None) -> list[dict[str, Any]]:
        """Run `cases` in order, appending each; prints progress with an ETA."""
        total_cases = total_cases or len(cases) + done_before
        t0 = time.time()
        out = []
        for i, case in enumerate(cases, 1):
            self.check_server()
            with self.faults.case(case.case_id):
                res = self.run_case(case)
            self._stop(res)
            self.folder.append_case(res.rows, res.case_row)
            if res.case_row["status"] != OK:
                self.check_server()  # a dead server ends the run now; --resume reruns failed cases
            out.append(res.case_row)
            elapsed = time.time() - t0
            eta = elapsed / i * (len(cases) - i)
            r = res.case_row
            if r["status"] == OK:
                what = f"{float(r['total-runtime']):.3f}s eff {float(r['harness-efficiency']):.2f}"
                if r.get("gets", "") != "":
                    what += f" GETs {r['gets']}"
                if r.get("client-gets", "") != "":
                    amp = r.get("amplification", "")
                    what += f" client GETs {r['client-gets']}" + (f" amp {float(amp):.1f}x" if amp != "" else "")
            else:
                what = f"{r['status'].upper()} ({r['errors']} errors)  [{r['first-error'][:120]}]"
            self.say(
                f"[{done_before + i}/{total_cases}] {case.family + ' ' if case.family else ''}{case.backend:<9} {case.mode:<7} w={case.workers:<2} "
                f"pb={_mib(case.pb_size):<7}{_bc(case.block_cache)} t{case.trial}  {what}  "
                f"elapsed {_dur(elapsed)} ETA {_dur(eta)}"
            )
        return out


def answers(url: str, timeout: float, ca_bundle: str | None = None) -> None:
    """Any HTTP answer from `url` within `timeout` (an S3 error is an answer); OSError if none.
    Over https the server is checked against `ca_bundle` (a private CA) or the system's."""
    import ssl
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    if parts.scheme == "https":
        ctx = ssl.create_default_context(cafile=ca_bundle) if ca_bundle else ssl.create_default_context()
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(host, parts.port, timeout=timeout, context=ctx)
    else:
        conn = http.client.HTTPConnection(host, parts.port, timeout=timeout)
    try:
        conn.request("HEAD", "/")
        conn.getresponse().read()
    finally:
        conn.close()


def failed_row(base: dict[str, Any], n_tasks: int, errors: int, error: str, started: float) -> dict[str, Any]:
    """The case row of a case that produced no measurement."""
    return {**base, "n-tasks": n_tasks, "errors": errors, "status": FAILED,
            "first-error": " ".join(error.split())[:500], "started": utc_iso(started), "finished": utc_iso()}


def timeout_rows(tasks: list[Any], case: Case, error: str, files: list[ShotFile], run_id: str,
                 hdf5: str, h5py_version: str) -> list[dict[str, Any]]:
    """One `timeout` row per part of every task that did not report before the deadline."""
    raw = [{"worker#": t.index, "obj-id": p.obj_id, "time": 0.0, "objs": 0, "dsets": 0, "bytes": 0,
            "open": 0.0, "error": error, "status": TIMEOUT} for t in tasks for p in t.parts]
    return worker_rows(raw, case=case, total=0.0, tot_num_obj=planmod.tot_num_obj(case.mode, files),
                       run_id=run_id, hdf5=hdf5, h5py_version=h5py_version)


def _mib(n: int) -> str:
    return "default" if n < 0 else f"{n // MiB}MiB" if n else "0"


def _bc(n: int | None) -> str:
    return "" if n is None else f" bc={_mib(n)}"


def _dur(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s"


# --------------------------------------------------------------------------------------
# Inventory: which shot/signals each file holds (the upstream gather-info pass, untimed).


def _inventory_key(source: Source, objs: list[Any]) -> str:
    h = hashlib.sha256(json.dumps(
        ["v4", source.to_dict()] + [[o.key, o.size, getattr(o, "etag", None)] for o in objs]).encode())
    return h.hexdigest()[:16]


def inventory(source: Source, objs: list[Any], s3: Any, say: Callable[[str], None] = print) -> list[ShotFile]:
    """Open every file once to list its shot and signals; cached by (location, sizes, etags)."""
    cache = state_dir() / "inventory" / f"{_inventory_key(source, objs)}.json"
    if cache.exists():
        data = json.loads(cache.read_text())
        return [ShotFile(d["key"], d["size"], d["shot"], tuple(d["signals"]), tuple(d.get("weights", ())),
                         d.get("file_meta", 0), d.get("shot_meta", 0), tuple(tuple(p) for p in d.get("datasets", ())),
                         tuple((p, n) for p, n in d.get("stored", ()))) for d in data]
    from shotbench.backends.base import ReadSettings
    from shotbench.hdf5.shotfile import shot_ids

    local_ok = source.local_dir or source.kind == "local"
    if local_ok:
        from shotbench.backends.local import LocalBackend

        reader: Backend = LocalBackend(source, ReadSettings())
    else:
        from shotbench.backends.obstore import ObstoreBackend

        reader = ObstoreBackend(source, ReadSettings(options={"block_size": MiB}))
    reader.setup(s3)
    out: list[ShotFile] = []
    t0 = time.time()
    for i, o in enumerate(objs, 1):
        try:
            with reader.open(o.key, o.size) as fh:
                shots = shot_ids(fh)
                if not shots:
                    raise UserError(f"{o.key} holds no /shots/<id> group; point --data at single-shot HDF5 files.")
                out += describe(fh, o.key, int(o.size), shots)
        except (OSError, KeyError, ValueError) as exc:
            raise unreadable(o.key, o.size, exc) from None
        if len(objs) > 20 and (i % 50 == 0 or i == len(objs)):
            say(f"  listing signals: {i}/{len(objs)} files ({time.time() - t0:.0f}s)")
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps([{"key": f.key, "size": f.size, "shot": f.shot, "signals": list(f.signals),
                                  "weights": list(f.weights), "file_meta": f.file_meta, "shot_meta": f.shot_meta,
                                  "datasets": [list(p) for p in f.datasets], "stored": [list(s) for s in f.stored]}
                                 for f in out]))
    return out


def unreadable(key: str, size: int, exc: BaseException) -> UserError:
    """One sentence for a shot file the inventory cannot read, naming a cut-short file as such."""
    text = " ".join(str(exc).split())
    if size == 0:
        return UserError(f"{key} is an empty (0-byte) file; remove it or upload it again.")
    if "truncated" in text.lower():
        return UserError(f"{key} is truncated ({size} bytes, shorter than its HDF5 metadata says); "
                         "remove it or upload it again.")
    return UserError(f"{key} cannot be read as an HDF5 shot file ({text[:160]}); remove it or replace it.")


def describe(fh: Any, key: str, size: int, shots: list[str]) -> list[ShotFile]:
    """What the inventory records of one open file: per shot (one for single-shot files, every
    shot of a many-shot file) its signals, their payload, and what reading each must touch."""
    from shotbench.hdf5 import storage
    from shotbench.hdf5.shotfile import signal_names

    meta = storage.file_metadata(fh)
    out = []
    for shot in shots:
        names = tuple(signal_names(fh, shot))
        touched = [storage.signal_datasets(fh, shot, n) for n in names]
        stored = {p: b for t in touched for p, b in t.items()}
        out.append(ShotFile(key, size, shot, names, tuple(payload_bytes(fh, shot, n) for n in names), meta,
                            storage.shot_metadata(fh, shot), tuple(tuple(t) for t in touched), tuple(stored.items())))
    return out


def payload_bytes(fh: Any, shot: str, name: str) -> int:
    """In-memory bytes of a signal plus its scales, from metadata only (no data read)."""
    dset = fh[f"shots/{shot}/signals/{name}"]
    total = int(dset.size or 0) * dset.dtype.itemsize
    for dim in dset.dims:
        for scale in dim.values():
            total += int(scale.size or 0) * scale.dtype.itemsize
    return total


def mirror_locally(source: Source, objs: list[Any], s3: Any, dest: Path, say: Callable[[str], None] = print) -> None:
    """Local copies for the `local` backend when the data lives only in S3 (untimed)."""
    import obstore

    from shotbench import diskspace
    from shotbench.backends.obstore import make_store

    missing = [o for o in objs if not (Path(source.local_path(o.key)).exists()
                                       and Path(source.local_path(o.key)).stat().st_size == o.size)]
    diskspace.require(dest, sum(o.size for o in missing), "local copies for the local backend",
                      "free space, pass --local-copies on a bigger disk, or drop the local backend")
    store = make_store(s3, source.bucket)
    for i, o in enumerate(objs, 1):
        path = Path(source.local_path(o.key))
        if path.exists() and path.stat().st_size == o.size:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".part")
        tmp.write_bytes(memoryview(obstore.get(store, o.key).bytes()))
        os.replace(tmp, path)
        if i % 25 == 0 or i == len(objs):
            say(f"  local copies: {i}/{len(objs)}")


# --------------------------------------------------------------------------------------


def summary_table(rows: list[dict[str, Any]]) -> str:
    """Per backend and mode, over ok cases only: median total runtime, ratio to raw-get, GETs, MB."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if row_status(r) != OK:
            continue
        groups.setdefault((r.get("file-family") or "", r["backend"], r["obj-type"]), []).append(r)
    width = max([len(k[0]) for k in groups] + [0])
    fam = f"{'family':<{width}} " if width else ""
    lines = [f"{fam}{'backend':<10} {'mode':<12} {'cases':>5} {'median s':>9} {'x raw-get':>9} {'GETs':>7} {'MB':>8} {'eff':>5}"]

    def med(vals: list[float]) -> float | None:
        vals = [v for v in vals if v == v]
        return statistics.median(vals) if vals else None

    def num(v: Any) -> float:
        try:
            return float(v)
        except (TypeError, ValueError):
            return float("nan")

    for (family, backend, mode), rs in sorted(groups.items()):
        tot = med([num(r["total-runtime"]) for r in rs])
        ratio = med([num(r["total-runtime"]) / num(r["raw-get-runtime"]) for r in rs
                     if num(r.get("raw-get-runtime")) > 0])
        gets = med([num(r.get("gets")) for r in rs])
        mb = med([num(r.get("get-bytes")) / 1e6 for r in rs])
        eff = med([num(r.get("harness-efficiency")) for r in rs])

        def f(v: float | None, fmt: str) -> str:
            return "-" if v is None else format(v, fmt)

        lines.append(
            f"{f'{family:<{width}} ' if width else ''}{backend:<10} {mode:<12} {len(rs):>5} {f(tot, '.3f'):>9} {f(ratio, '.2f'):>9} "
            f"{f(gets, '.0f'):>7} {f(mb, '.1f'):>8} {f(eff, '.2f'):>5}"
        )
    return "\n".join(lines)

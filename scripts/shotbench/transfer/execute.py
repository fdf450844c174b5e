"""Running the transfer matrix: cases in interleaved seeded order, every result verified and
appended to the run folder (shotbench.runs) the moment it exists, so an interrupted run keeps
(and can resume) its rows.
"""

from __future__ import annotations

import gc
import os
import platform
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from shotbench import cputime
from shotbench.cputime import CpuSample
from shotbench.diskspace import DiskFull
from shotbench.errors import UserError
from shotbench.provenance import git_commit, machine_info, utc_iso
from shotbench.redact import scrub
from shotbench.runs import RUN_JSON, RunFolder, interleave
from shotbench.store.s3 import S3Config
from shotbench.transfer import delivery as verify
from shotbench.transfer.cases import FileSpec, Row, ensure_files, size_label
from shotbench.transfer.checks import upload_check
from shotbench.transfer.moretrials import open_rows
from shotbench.transfer.programs import Outcome, Target, Tool, ToolFailed
from shotbench.transfer.results import SELF, THRESHOLD, load_cases
from shotbench.transfer.rows import RUN_KIND

PYTHON_PACKAGES = (
    "boto3",
    "botocore",
    "s3transfer",
    "s3fs",
    "aiobotocore",
    "fsspec",
    "obstore",
    "awscrt",
    "pycurl",
    "numpy",
)


LOOPBACK = "loopback"  # the embedded server reached directly: no added latency


@dataclass(frozen=True)
class Case:
    """One cell of the table before trials: a tool moving one row in one direction, over one network."""

    direction: str
    tool: str
    concurrency: int
    row: Row
    network: str = LOOPBACK

    @property
    def case_id(self) -> str:
        net = "" if self.network == LOOPBACK else f"-{self.network}"
        return f"{self.direction}-{self.tool}-c{self.concurrency}-{self.row.key}{net}"


@dataclass
class TransferPlan:
    """Everything that decides which cases run; stored in run.json so a resume repeats it."""

    profile: str
    rows: list[Row]
    tools: list[str]
    concurrency: list[int]
    trials: int
    seed: int = 0
    note: str = ""
    directions: list[str] = field(default_factory=lambda: ["upload", "download"])
    sweep: list[int] = field(default_factory=list)  # extra concurrencies, on sweep_rows only
    sweep_rows: list[Row] = field(default_factory=list)
    # sync vs async under latency: these tools x concurrencies x rows, over each named network
    latency_networks: list[str] = field(default_factory=list)
    latency_tools: list[str] = field(default_factory=list)
    latency_concurrency: list[int] = field(default_factory=list)
    latency_rows: list[Row] = field(default_factory=list)
    latency_trials: int = 1
    # after the planned trials, rows whose stage threshold is undecided get more, up to this many
    # trials in all (shotbench.transfer.moretrials); at or under `trials`, none are added
    max_trials: int = 0

    def all_rows(self) -> list[Row]:
        return list(dict.fromkeys([*self.rows, *self.sweep_rows, *self.latency_rows]))

    def to_json(self) -> dict:
        d = asdict(self)
        for k in ("rows", "sweep_rows", "latency_rows"):
            d[k] = [{"count": r.count, "size": r.size, "label": r.label} for r in getattr(self, k)]
        return d

    @classmethod
    def from_json(cls, d: dict) -> TransferPlan:
        d = dict(d)
        for k in ("rows", "sweep_rows", "latency_rows"):
            d[k] = [Row(r["count"], r["size"]) for r in d.get(k, [])]
        return cls(**d)


def effective_concurrency(levels: list[int], count: int) -> list[int]:
    """The levels that differ for a row of `count` files: the sync and async forms move one file
    per request, so every level at or above the file count is the same case; the first is kept."""
    out = []
    for c in sorted(levels):
        out.append(c)
        if c >= count:
            break
    return out


def plan_cases(plan: TransferPlan, tools: list[Tool]) -> list[Case]:
    cases = []
    for tool in tools:
        for direction in plan.directions:
            if direction not in tool.directions:
                continue
            for conc in plan.concurrency:
                for row in plan.rows:
                    cases.append(Case(direction, tool.name, conc, row))
            for conc in plan.sweep:
                if conc in plan.concurrency:
                    continue
                for row in plan.sweep_rows:
                    cases.append(Case(direction, tool.name, conc, row))
            if tool.name not in plan.latency_tools:
                continue
            for net in plan.latency_networks:
                for row in plan.latency_rows:
                    for conc in effective_concurrency(plan.latency_concurrency, row.count):
                        case = Case(direction, tool.name, conc, row, net)
                        if case not in cases:
                            cases.append(case)
    return cases


def case_order(cases: list[Case], trials: int, seed: int, latency_trials: int | None = None) -> list[tuple[int, Case]]:
    """(trial, case): each trial runs every case once, in its own seeded shuffle (runs.interleave).

    The per-trial seed `seed * 1000 + trial` is the one this benchmark has always used, so a seed
    gives the same order as in earlier runs. Cases over a latency network (the sync-vs-async
    sweep) run `latency_trials` times, after the main matrix, shuffled among themselves.
    """
    main = [c for c in cases if c.network == LOOPBACK]
    sweep = [c for c in cases if c.network != LOOPBACK]
    order = interleave(main, range(trials), lambda trial: random.Random(seed * 1000 + trial))
    if sweep:
        n = trials if latency_trials is None else latency_trials
        order += interleave(sweep, range(n), lambda trial: random.Random(seed * 1000 + 500 + trial))
    return order


def package_versions() -> dict[str, str | None]:
    """The packages' versions, and the libcurl inside pycurl (stage's small downloads go through it)."""
    from shotbench.store.curlget import libcurl_version
    from shotbench.transfer.programs import _pkg_version

    return {**{p: _pkg_version(p) for p in PYTHON_PACKAGES}, "libcurl": libcurl_version()}


def list_sizes(cfg: S3Config, bucket: str, prefix: str, client=None) -> dict[str, int]:
    """name (relative to prefix) -> size for every object under prefix."""
    client = client or cfg.boto3_client()
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            out[obj["Key"][len(prefix) :]] = obj["Size"]
    return out


def delete_prefix(cfg: S3Config, bucket: str, prefix: str, client=None) -> None:
    client = client or cfg.boto3_client()
    keys = [prefix + k for k in list_sizes(cfg, bucket, prefix, client)]
    for i in range(0, len(keys), 1000):
        client.delete_objects(
            Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[i : i + 1000]], "Quiet": True}
        )


def seed_source(cfg: S3Config, target: Target, files: list[FileSpec]) -> None:
    """The objects download cases read: uploaded once per row (untimed) by `shotbench stage`, so
    each carries the whole-object CRC64NVME a download can be checked against (the checksum S3
    gives any object uploaded without one, and the AWS CLI v2 sends); objects already there with
    the file's size and ETag are kept as they are."""
    from shotbench.store.s3 import parse_location
    from shotbench.store.staging import stage

    stage(files[0].path.parent, parse_location(target.uri()), cfg, jobs=16, progress=False, create_bucket=False)


def check_disk(plan: TransferPlan, folder: Path) -> None:
    """Test files + the server's copies + one download must fit; say so before starting."""
    rows = plan.all_rows()
    largest = max(r.total for r in rows)
    need = sum(r.total for r in rows) * 2 + largest * 2 + (1 << 30)
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free
    if free < need:
        raise UserError(
            f"the transfer matrix needs about {need / 2**30:.0f} GiB of free disk in {folder} but only "
            f"{free / 2**30:.0f} GiB is free; pick smaller rows with --rows (or a smaller --profile) or free some space."
        )


@dataclass
class RunContext:
    """Where the run writes and what it talks to."""

    run_dir: Path
    scratch: Path
    files_root: Path
    cfg: S3Config
    bucket: str
    base_prefix: str  # ends with '/' or is ''
    data_info: dict
    networks: dict[str, S3Config] = field(default_factory=dict)  # the same server over a named network
    server_pids: tuple[int, ...] = ()  # the embedded server's processes (loopback), whose CPU a case is charged

    def cfg_for(self, network: str) -> S3Config:
        return self.cfg if network == LOOPBACK else self.networks[network]


def _case_result(
    case: Case,
    seconds: float | None,
    error: str,
    checks: list[verify.FileCheck],
    cpu: CpuSample | None = None,
    checked: int | None = None,
) -> dict:
    ok = sum(c.ok for c in checks)
    mbps = (case.row.total / 1e6 / seconds) if seconds and not error else None
    cpu = None if error else cpu
    return {
        "direction": case.direction,
        "tool": case.tool,
        "network": case.network,
        "concurrency": case.concurrency,
        "test": case.row.label,
        "file-count": case.row.count,
        "file-size": case.row.size,
        "total-bytes": case.row.total,
        "seconds": f"{seconds:.4f}" if seconds is not None and not error else "",
        "mb-per-s": f"{mbps:.2f}" if mbps else "",
        "client-cpu-s": f"{cpu.client:.4f}" if cpu else "",
        "server-cpu-s": f"{cpu.server:.4f}" if cpu and cpu.server is not None else "",
        "stolen-cpu-s": f"{cpu.stolen:.2f}" if cpu and cpu.stolen is not None else "",
        "files-ok": ok,
        "checksum-checked": checked if checked is not None and not error else "",
        "error": error,
    }


def settle() -> None:
    """Before a timed case (untimed), leave nothing of the run or earlier cases to be paid for
    on the next case's clock.

    Dirty pages, on this side and in the embedded server's folder, are written out now. The
    Python objects that exist now (the harness's, and what earlier tools left: botocore's
    models, clients, caches) are collected once and then frozen, out of the collector's sight:
    otherwise every full collection during a case walks them all, about 80 ms each in a quick
    run, charged to whichever tool happened to allocate enough to set one off (s3fs took one or
    two of them on most 128 x 1 MiB uploads). A case's own garbage is collected as usual."""
    gc.collect()
    gc.freeze()
    os.sync()


@dataclass(frozen=True)
class Timing:
    """What one timed transfer took: wall seconds, and CPU on each side (none when it failed)."""

    seconds: float | None = None
    cpu: CpuSample | None = None


def _timed(
    tool: Tool,
    direction: str,
    files: list[FileSpec],
    local: Path,
    target: Target,
    cfg: S3Config,
    concurrency: int,
    server_pids: tuple[int, ...],
) -> tuple[Timing, Outcome]:
    """One timed transfer, with dirty pages written out first."""
    settle()
    before = cputime.sample(server_pids)
    t0 = time.perf_counter()
    if direction == "upload":
        outcome = tool.upload(files, local, target, cfg, concurrency)
    else:
        outcome = tool.download(files, target, local, cfg, concurrency)
    seconds = time.perf_counter() - t0
    return Timing(seconds, cputime.spent(before, cputime.sample(server_pids))), outcome


def run_case(
    ctx: RunContext,
    tool: Tool,
    case: Case,
    trial: int,
    files: list[FileSpec],
    src_target: Target,
    unavailable: str | None,
) -> tuple[dict, list[dict]]:
    """Run one (case, trial): time the tool, then verify; any failure becomes the error cell."""
    cfg = ctx.cfg_for(case.network)
    if unavailable:
        res = _case_result(case, None, unavailable, [])
        return res, []
    timing = Timing()
    error = ""
    outcome = Outcome()
    pids = ctx.server_pids if case.network == LOOPBACK else ()  # the sweep's own proxies are not counted
    if case.direction == "upload":
        target = Target(ctx.bucket, f"{ctx.base_prefix}up/{ctx.run_dir.name}/{case.case_id}/t{trial}/")
        src = files[0].path.parent
        try:
            timing, outcome = _timed(tool, "upload", files, src, target, cfg, case.concurrency, pids)
        except Exception as exc:  # noqa: BLE001 - any tool failure is a result, not a crash of the run
            error = _one_line(exc, cfg)
        try:
            checks = verify.verify_sizes(files, list_sizes(ctx.cfg, target.bucket, target.prefix))
        except Exception as exc:  # noqa: BLE001 - the store could not even list what was uploaded
            checks, error = [], error or f"verification failed: {_one_line(exc, cfg)}"
        try:
            delete_prefix(ctx.cfg, target.bucket, target.prefix)
        except Exception:  # noqa: BLE001 - leftovers under a per-case prefix do not affect later cases
            pass
    else:
        dest = ctx.scratch / f"{case.case_id}-t{trial}"
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        try:
            timing, outcome = _timed(tool, "download", files, dest, src_target, cfg, case.concurrency, pids)
        except Exception as exc:  # noqa: BLE001 - any tool failure is a result, not a crash of the run
            error = _one_line(exc, cfg)
        try:
            outcome.finish_digests()
            if outcome.digests is not None:
                checks = verify.verify_digests(files, outcome.digests)
            else:
                checks = verify.verify_dir(files, dest)
        finally:
            shutil.rmtree(dest, ignore_errors=True)
    if not error:
        error = verify.summarize(checks)
    per_file = [
        {
            "direction": case.direction,
            "tool": case.tool,
            "concurrency": case.concurrency,
            "file": c.name,
            "size": c.size if c.size is not None else "",
            "seconds": f"{outcome.file_seconds[c.name]:.4f}" if c.name in outcome.file_seconds else "",
            "verified": c.ok,
            "error": c.error,
        }
        for c in checks
    ]
    return _case_result(case, timing.seconds, error, checks, timing.cpu, outcome.checked), per_file


def _one_line(exc: BaseException, cfg: S3Config) -> str:
    text = str(exc) if isinstance(exc, ToolFailed) else f"{type(exc).__name__}: {exc}"
    return scrub(" ".join(text.split()), cfg.secrets())[:400] or type(exc).__name__


def more_trials(
    run_dir: Path,
    plan: TransferPlan,
    tools: dict[str, Tool],
    unavailable: dict[str, str | None],
    run: Callable[[list[tuple[int, Case]], int], None],
    planned: int,
    progress: Callable[[str], None],
) -> dict:
    """After the planned trials of the main matrix: one more trial at a time of the rows whose
    stage threshold is undecided (shotbench.transfer.moretrials), each in its own seeded shuffle,
    until every row is decided or `plan.max_trials` is reached. Returns what run.json records:
    the cap, the trials added (rows and cases each) and why it stopped."""
    record: dict = {"cap": plan.max_trials, "added": [], "stopped": "not asked"}
    if plan.max_trials <= plan.trials or SELF not in tools or unavailable.get(SELF):
        return record
    rows = {r.label: r for r in plan.all_rows()}
    added = 0
    for trial in range(plan.trials, plan.max_trials):
        undecided = open_rows(load_cases(run_dir))
        if not undecided:
            record["stopped"] = "decided"
            return record
        cases = [
            Case(o.direction, t, o.concurrency, rows[o.test])
            for o in undecided
            for t in o.tools
            if t in tools and not unavailable.get(t)
        ]
        block = interleave(cases, [trial], lambda t: random.Random(plan.seed * 1000 + 700 + t))
        progress(
            f"trial {trial + 1} of at most {plan.max_trials}: {len(undecided)} row(s) undecided against "
            f"{THRESHOLD:.2f}×, {len(block)} cases of stage and its contenders"
        )
        added += len(block)
        run(block, planned + added)
        record["added"].append({"trial": trial, "rows": len(undecided), "cases": len(block)})
    record["stopped"] = "trial cap" if open_rows(load_cases(run_dir)) else "decided"
    return record


def run_transfer(
    ctx: RunContext, plan: TransferPlan, tools: list[Tool], progress: Callable[[str], None] = print
) -> Path:
    """Run (or resume) the plan into ctx.run_dir; returns the run folder."""
    folder: RunFolder | None = None
    old: dict = {}
    skip: set = set()
    if (ctx.run_dir / RUN_JSON).exists():  # a resume: keep every case written, drop rows of an unfinished one
        folder = RunFolder(ctx.run_dir, RUN_KIND)
        old = folder.read_meta()
        folder.add_missing_tables()
        skip = folder.repair()
    reasons = {t.name: t.check() for t in tools}
    meta = {
        "run_id": ctx.run_dir.name,
        "started": old.get("started", utc_iso()),
        "finished": None,
        "status": "running",
        "plan": plan.to_json(),
        "tools": {
            t.name: {
                "family": t.family,
                "mode": t.mode,
                "version": None if reasons[t.name] else t.version(),
                "status": reasons[t.name] or "ok",
                "how": t.describe,
                "check": upload_check(t.name),  # what it checks on upload (shotbench.transfer.checks)
            }
            for t in tools
        },
        "versions": {"packages": package_versions()},
        "machine": {**machine_info(), "python": platform.python_version()},
        "git_commit": git_commit(),
        "data": ctx.data_info,
        "load": {"start": old.get("load", {}).get("start") or list(os.getloadavg()), "end": None},
        "notes": [
            "MB/s uses 1 MB = 10^6 bytes; seconds are the tool's wall time, client start-up included, "
            "verification excluded",
            "transfers.csv seconds: per-file duration for thread-pool/asyncio tools, completion time since the "
            "case started for TransferManager and awscrt, empty for command-line tools",
            "uploads are verified by listing object sizes, downloads by size and sha256",
        ],
    }
    if folder is None:
        folder = RunFolder.create(ctx.run_dir, RUN_KIND, meta)
    else:
        folder.write_meta(meta)
    for t in tools:
        if reasons[t.name]:
            progress(f"{t.name}: {reasons[t.name]}")

    order = case_order(plan_cases(plan, tools), plan.trials, plan.seed, plan.latency_trials)
    main = [(trial, case) for trial, case in order if case.network == LOOPBACK]
    sweep = [(trial, case) for trial, case in order if case.network != LOOPBACK]
    by_name = {t.name: t for t in tools}
    files: dict[Row, list[FileSpec]] = {}
    sources: dict[Row, Target] = {}
    for row in plan.all_rows():
        t_row = time.perf_counter()
        files[row] = ensure_files(row, ctx.files_root, plan.seed, rewrite=True)  # one page-cache state per run
        sources[row] = Target(ctx.bucket, f"{ctx.base_prefix}src/{row.key}-s{plan.seed}/")
        if "download" in plan.directions:
            seed_source(ctx.cfg, sources[row], files[row])
        progress(f"ready: {row.label} ({size_label(row.total)}) in {time.perf_counter() - t_row:.1f} s")

    done = 0

    def run(block: list[tuple[int, Case]], total: int) -> None:
        nonlocal done
        for trial, case in block:
            done += 1
            if (case.case_id, trial) in skip:
                continue
            started = utc_iso()
            res, per_file = run_case(
                ctx, by_name[case.tool], case, trial, files[case.row], sources[case.row], reasons[case.tool]
            )
            common = {"run-id": ctx.run_dir.name, "case-id": case.case_id, "trial": trial}
            folder.append_case(
                [{**common, **r} for r in per_file],
                {
                    **common,
                    "order": done - 1,
                    "mode": by_name[case.tool].mode,
                    "started": started,
                    "finished": utc_iso(),
                    **res,
                },
            )
            cell = (
                f"{float(res['seconds']):8.2f} s {res['mb-per-s']:>8} MB/s"
                if res["seconds"]
                else f"error: {res['error'][:90]}"
            )
            net = "" if case.network == LOOPBACK else f" {case.network}"
            progress(
                f"[{done}/{total}] {case.direction:8} {case.tool:22} c={case.concurrency:<3} "
                f"{case.row.label:20}{net} {cell}"
            )

    try:
        run(main, len(order))
        meta["more_trials"] = more_trials(ctx.run_dir, plan, by_name, reasons, run, len(order), progress)
        run(sweep, done + len(sweep))
        meta["status"] = "finished"
    except (KeyboardInterrupt, DiskFull):  # resumable where it stopped
        meta["status"] = "interrupted"
        raise
    except Exception:
        meta["status"] = "failed"  # never left at `running`
        raise
    finally:
        gc.unfreeze()  # the frozen objects are the collector's again once no case is timed
        meta["finished"] = utc_iso()
        meta["load"]["end"] = list(os.getloadavg())
        folder.write_meta(meta)
    return ctx.run_dir

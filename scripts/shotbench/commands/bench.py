"""`shotbench bench`: measure every backend on one workload, in one run, resumably.

Without --data it is self-contained: the embedded S3 server, synthetic shot files made
and staged if missing. Everything that can fail for a user reason (server, data location,
environments) is checked before the run folder exists, so a failed start leaves nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
from dataclasses import dataclass
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING, Any

from shotbench import __version__
from shotbench.analyse import stopping
from shotbench.backends import registry
from shotbench.bench.poolstart import reach_scheduler, scheduler_address
from shotbench.bench.prepare import check_envs, prepare, say
from shotbench.commands.server import WHICH_S3_DATA
from shotbench.diskspace import DiskFull, shorten
from shotbench.errors import UserError, interrupt_exit
from shotbench.paths import runs_dir, state_dir
from shotbench.plan import matrix as planmod
from shotbench.plan import profiles
from shotbench.provenance import git_commit, machine_info, new_run_id, utc_iso
from shotbench.records.schema import RUN_KIND, measured
from shotbench.redact import scrub
from shotbench.runs import RunFolder, kind_of, latest_run, resume_hint

if TYPE_CHECKING:
    pass

REPORTING_PROFILES = ("readers",)  # profiles whose run renders its report when it ends, as `--report`


DEFAULT_PROFILE = "quick"
FLAGS = {"chunk_caches": "--chunk-cache"}  # a setting whose flag is not its name with dashes


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The matrix settings of the command line (None: not given)."""
    return {
        "backends": args.backends,
        "modes": args.modes,
        "workers": args.workers,
        "page_buffers": args.page_buffers,
        "chunk_caches": args.chunk_cache,
        "trials": args.trials,
        "block_caches": args.block_caches,
        "seed": args.seed,
        "signals_files": args.signals_files,
        "signals_names": args.signals_names,
        "shots_files": args.shots_files,
        "shots": args.shots,
        "precision": args.precision,
        "max_trials": args.max_trials,
        "max_minutes": args.max_minutes,
        "margin": args.margin,
        "budget_minutes": args.budget_minutes,
    }


def _config_from_args(args: argparse.Namespace) -> profiles.BenchConfig:
    notes: list[str] = []
    config = Path(args.config) if args.config else None
    cfg = profiles.load(args.profile or DEFAULT_PROFILE, config, _overrides(args), notes)
    for note in notes:
        say(f"note: {note}")
    return cfg


def plan_only(cfg: profiles.BenchConfig) -> list[planmod.Case]:
    """The cases a run of `cfg` would measure, without data, server or environments: the
    planning step `--dry-run` shows and the input fuzz tests drive."""
    matrix = cfg.matrix()
    return planmod.plan_cases(
        matrix,
        cfg.seed,
        {b: registry.get(b).reads_hdf5 for b in cfg.backends},
        {b: registry.get(b).has_block_cache for b in cfg.backends},
    )


def dry_run(args: argparse.Namespace, runs: Path) -> int:
    """`--dry-run`: the checks a run makes before it starts work (the same functions), and the
    plan's size, touching nothing: no server, build, Dask, network or file."""
    if args.resume is None:
        _check_runs_folder(runs)
    st = _settings(args, resume_folder(args.resume, runs) if args.resume is not None else None)
    check_start(st)
    cfg = st.cfg
    cases = plan_only(cfg)
    say(
        f"{len(cases)} cases: backends {' '.join(cfg.backends)}; modes {' '.join(cfg.modes)}; "
        f"workers {' '.join(map(str, cfg.workers))}; {cfg.trials} trial(s); nothing was run."
    )
    return 0


def _check_runs_folder(runs: Path) -> None:
    """What `writable` refuses in the runs folder, without making it: the dry run touches nothing."""
    import os

    from shotbench.diskspace import check_path

    check_path(runs, "runs folder")
    there = next(p for p in (runs.absolute(), *runs.absolute().parents) if p.exists())
    if not there.is_dir() or not os.access(there, os.W_OK | os.X_OK):
        why = "is a file" if not there.is_dir() else "is not writable"
        raise UserError(f"the runs folder {runs} cannot be made there ({there} {why}); give a folder you can write.")


def resume_folder(arg: str, runs: Path) -> Path:
    """The run folder `--resume` names (or the latest), or one sentence when there is none or it is
    another command's run (a transfer run's run.json is not "damaged": it is resumed elsewhere)."""
    found: Path | None = None
    try:
        folder = latest_run(runs, "read") if arg == "latest" else Path(arg)
        if folder is not None and (folder / "run.json").is_file():
            found = folder
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        pass
    if found is not None:
        kind = kind_of(found)
        if kind not in (None, RUN_KIND.name):
            raise UserError(f"{found} is a {kind} run, not a `shotbench bench` run; {resume_hint(found, kind)}.")
        return found
    raise UserError(
        f"no run to resume in {shorten(arg if arg != 'latest' else runs)}; start one with `shotbench bench`."
    )


def _resumed_config(resume_dir: Path, meta: dict[str, Any]) -> profiles.BenchConfig:
    """The settings a run was started with, as its run.json recorded them."""
    try:
        cfg = profiles.BenchConfig(**meta["config"]["bench"])
        profiles.validate(cfg)
    except (TypeError, AttributeError):
        raise UserError(
            f"{resume_dir / 'run.json'} holds settings this version does not know; "
            "start a new run with `shotbench bench`."
        ) from None
    return cfg


def _read_resume_meta(resume_dir: Path) -> dict[str, Any]:
    """run.json of the run to resume, or one sentence if it is unreadable."""
    try:
        meta = RunFolder(resume_dir, RUN_KIND).read_meta()
        meta["config"]["bench"], meta["config"]["data"], meta["config"]["network"]
        return meta
    except (ValueError, KeyError, TypeError, OSError):
        raise UserError(
            f"{resume_dir / 'run.json'} is damaged or incomplete, so the run cannot be resumed; "
            "start a new run with `shotbench bench`."
        ) from None


def run_lock(folder: Path) -> Any:
    """One process per run folder: a second `--resume` of a run in progress is refused."""
    from shotbench.locks import held

    return held(
        folder / ".lock",
        f"run {folder.name} is being resumed by pid {{pid}}; wait for it to finish or stop that process first.",
        f"the run folder {folder} is not writable; fix its permissions or resume a copy.",
    )


def default_tls(asked: bool | None, data: str | None, network: str) -> bool:
    """https unless told otherwise: real S3 is https, and plain http hides what a TLS setup per
    open costs (1.14 makes one per file). Only the embedded server is served here; the profiles
    that inject HTTP errors go through a plain-HTTP proxy, so they stay http unless --tls is given
    (then check_tls says why not)."""
    from shotbench.store.network import NETWORK_PROFILES

    if asked is not None:
        return asked
    if data:
        return False
    profile = NETWORK_PROFILES.get(network)
    return not (profile is not None and profile.http is not None)


def finish_message(rows: list[dict[str, str]], cases_csv: Path) -> tuple[int, str]:
    """How many cases failed and where to look (0 failed: empty message). Unsupported cases
    (a reader that cannot read a file shape) are findings, not failures: never counted here."""
    from shotbench.records.status import is_failure, row_status

    bad = [r for r in rows if is_failure(row_status(r))]
    if not bad:
        return 0, ""
    first = next((r.get("first-error") or r.get("errors") for r in bad if r.get("first-error") or r.get("errors")), "")
    return len(bad), (
        f"{len(bad)} of {len(rows)} cases failed or were partial and are left out of every result "
        f"(first error: {str(first)[:200]}); see the status and first-error columns of {cases_csv}"
    )


def check_bytes(cfg: profiles.BenchConfig, backends: list[str], wl: Any) -> list[Any]:
    """Each backend's bytes against h5py's, one file per family, before the timed cases."""
    from shotbench.bench import bytecheck

    verdicts = bytecheck.check(
        backends, cfg.options, wl.source, wl.s3, bytecheck.samples(wl.files, wl.family_files), say
    )
    if not verdicts:
        say("bytes not checked against h5py: no local copy of the files to compare with")
    for v in verdicts:
        if v.status != "ok":
            say(f"  {v.backend} on {v.family or 'the files'}: {v.status} ({v.reason[:160]})")
    return verdicts


# What a run folder may grow to (a few thousand case rows, their task rows, run.json's plan), on
# top of diskspace.HEADROOM: checked before the work starts, so a full disk is refused up front.
RUN_FOLDER_BYTES = 16 * 2**20


def cmd_bench(args: argparse.Namespace) -> int:
    runs = Path(args.runs_dir) if args.runs_dir else runs_dir()
    if getattr(args, "dry_run", False):
        return dry_run(args, runs)
    from shotbench.diskspace import require, writable

    if args.resume is None:
        writable(runs, "runs folder")
        require(runs, RUN_FOLDER_BYTES, "a run folder", "free space there or pass --runs-dir on another disk")
        return _bench(args, runs, None)
    resume_dir = resume_folder(args.resume, runs)
    require(resume_dir, RUN_FOLDER_BYTES, "finishing this run", "free space there first")
    with run_lock(resume_dir):
        return _bench(args, runs, resume_dir)


@dataclass
class _Settings:
    """What a bench run is asked to do: from the command line, or from the run.json it resumes."""

    cfg: profiles.BenchConfig
    meta: dict[str, Any]
    data_arg: str | None
    network: str
    tls: bool
    scheduler: str | None
    shots_dir: Path | None
    local_copies: Path | None
    anonymous: bool = False  # every backend reads unsigned (public buckets)


def new_run_settings(
    cfg: profiles.BenchConfig, data: str | None, network: str | None, faults: str | None, tls: bool | None,
    anonymous: bool,
) -> tuple[str, bool]:  # fmt: skip
    """The network and TLS of a new run, or one sentence for what a run refuses in them, its
    --faults and --anonymous: shared by the run, `--dry-run` and `shotbench doctor`."""
    from shotbench.store.network import FAULTS, check_network, check_tls

    if network is None:  # a bench profile may model a network (upstream-ec2); never in front of --data
        network = "none" if (data or faults) else profiles.PROFILE_NETWORK.get(cfg.profile, "none")
    else:
        check_network(network)  # before any shot file is made or server started
    tls = default_tls(tls, data, faults or network)
    if faults:
        if faults not in FAULTS:
            raise UserError(f"unknown fault profile {faults!r}; choose one of: {', '.join(FAULTS)}.")
        if network != "none":
            raise UserError("--faults and --network both choose the proxy in front of the server; give one of them.")
        check_tls(faults, tls)
        network = faults
        cfg.verify = True
    if anonymous and not data:
        raise UserError(
            "--anonymous reads a public bucket unsigned, and the embedded server's bucket is not public; "
            "give --data s3://bucket/prefix."
        )
    return network, tls


def check_start(st: _Settings) -> None:
    """What a run refuses before it starts work, with no server, build, Dask or network: the
    scheduler's address (the run then connects), the memory of local workers, --data and its
    companions, the synthetic files' folder and their space. Shared by the run and `--dry-run`."""
    from shotbench.bench.prepare import check_data, check_shots

    if st.scheduler:
        scheduler_address(st.scheduler)  # its form: the run then connects
    else:
        profiles.check_local_workers(st.cfg)
    if st.data_arg is not None:
        check_data(st.cfg, st.data_arg, st.network, st.tls, st.anonymous)
    else:
        check_shots(st.cfg, st.shots_dir)


def _refuse_plan_changes(args: argparse.Namespace, run: Path, cfg: profiles.BenchConfig) -> None:
    """A resume finishes the run as it was planned: matrix flags, --profile or --config that would
    plan it otherwise are refused, not ignored (the same ones again, as when a command is repeated
    with --resume, are not)."""
    overrides = {k: v for k, v in _overrides(args).items() if v is not None}
    config = Path(args.config) if args.config else None
    in_config = {k.replace("-", "_") for k in profiles.read_config(config)} - {"profile"} if config else set()
    if not overrides and config is None and args.profile in (None, cfg.profile):
        return
    asked = profiles.load(args.profile or cfg.profile, config, overrides)
    changed = [k for k in sorted(set(overrides) | in_config) if _setting(asked, k) != _setting(cfg, k)]
    if asked.profile != cfg.profile:
        changed.insert(0, "profile")
    if changed:
        names = [FLAGS.get(k, f"--{k.replace('_', '-')}") if k in overrides or k == "profile" else k for k in changed]
        raise UserError(
            f"a resume finishes run {run.name} as it was planned, and {', '.join(names)} would change its plan; "
            "drop them, or start a new run without --resume."
        )


def _setting(cfg: profiles.BenchConfig, name: str) -> Any:
    """A setting as it plans the run: sizes by what they mean (`off` is 0), a backend's options with its network."""
    value = getattr(cfg, name)
    if name in profiles.SIZE_SETTINGS:
        return [profiles.size_setting(v, name) for v in value]
    return (value, cfg.networks) if name == "options" else value


def _settings(args: argparse.Namespace, resume_dir: Path | None) -> _Settings:
    """The settings of a new run (checked), or those the resumed run was started with."""
    meta: dict[str, Any] = {}
    if resume_dir is not None:
        meta = _read_resume_meta(resume_dir)
        cfg = _resumed_config(resume_dir, meta)
        _refuse_plan_changes(args, resume_dir, cfg)
        data_arg = meta["config"]["data"]
        network = meta["config"]["network"]
        tls = bool(meta["config"].get("tls", False))
        scheduler = meta["config"].get("scheduler") or args.scheduler
        shots_dir = Path(meta["config"]["shots_dir"]) if meta["config"].get("shots_dir") else None
        local_copies = Path(meta["config"]["local_copies"]) if meta["config"].get("local_copies") else None
    else:
        cfg = _config_from_args(args)
        data_arg, scheduler = args.data, args.scheduler
        network, tls = new_run_settings(cfg, data_arg, args.network, args.faults, args.tls, bool(args.anonymous))
        shots_dir = Path(args.shots_dir) if args.shots_dir else None
        local_copies = Path(args.local_copies) if args.local_copies else None
    anonymous = bool(meta["config"].get("anonymous")) if resume_dir is not None else bool(args.anonymous)
    return _Settings(cfg, meta, data_arg, network, tls, scheduler, shots_dir, local_copies, anonymous)


def _selection(cfg: profiles.BenchConfig, wl: Any) -> dict[str, Any]:
    """Which files, signals and shots the plan reads: recorded, and compared on --resume."""
    return {
        "signals_files": [f.key for f in wl.signal_files],
        "signals": planmod.all_signals(wl.signal_files),
        "shots": {
            f"t{t}-w{w}": ",".join(f.key for f in planmod.pick_shots(wl.files, cfg.seed, t, w, cfg.shots_files))
            for t in range(1, cfg.trials + 1)
            for w in cfg.workers
        },
        "files": [f.key for f in wl.files],
    }


def _bench(args: argparse.Namespace, runs: Path, resume_dir: Path | None) -> int:
    from shotbench.bench.driverpool import Drivers
    from shotbench.bench.faultcount import InjectedFaults
    from shotbench.bench.runner import Runner
    from shotbench.records.status import COMPLETE, INTERRUPTED, RUNNING

    st = _settings(args, resume_dir)
    check_start(st)
    cfg, meta, data_arg, network, tls, scheduler = st.cfg, st.meta, st.data_arg, st.network, st.tls, st.scheduler
    shots_dir, local_copies = st.shots_dir, st.local_copies
    if scheduler:
        reach_scheduler(scheduler, "drop --scheduler")

    check_envs(cfg.backends)
    folder: RunFolder | None = None
    with prepare(cfg, data_arg, network, shots_dir, local_copies, tls, st.anonymous) as prep:
        wl = prep.workload
        reads = {b: registry.get(b).reads_hdf5 for b in prep.backends}
        matrix = cfg.matrix()
        matrix.backends = prep.backends
        cases = planmod.plan_cases(matrix, cfg.seed, reads, {b: registry.get(b).has_block_cache for b in prep.backends})
        selection = _selection(cfg, wl)
        if resume_dir is not None:
            folder = RunFolder(resume_dir, RUN_KIND)
            if meta.get("selection", {}).get("files") != selection["files"]:
                raise UserError(
                    f"the data at {prep.data['location']} differs from when run {meta['run_id']} started; start a new run instead of --resume."
                )
            done = folder.repair(measured)
            if folder.set_aside:
                say(
                    f"set aside {len(folder.set_aside)} torn or invalid row(s) of {folder.cases_csv} (line "
                    f"{', '.join(map(str, folder.set_aside))}; copied to {folder.set_aside_csv}); their cases run again"
                )
            run_id = meta["run_id"]
            pending = [c for c in cases if c.case_id not in done]
            if not pending and not (cfg.precision and stopping.groups_to_extend(folder.cases())):
                say(f"run {run_id} is already complete ({len(done)} cases); nothing to resume.")
                return 0
            meta.setdefault("resumed", []).append(utc_iso())
            meta["status"] = RUNNING
            say(f"resuming run {run_id}: {len(done)} of {len(cases)} cases done")
        else:
            run_id = new_run_id()
            meta = _new_meta(run_id, st, prep, cases, selection)
            done = set()
            pending = cases
        log_dir = state_dir() / "logs" / run_id
        status = "not started"
        drivers = Drivers(wl.s3, log_dir, scheduler, cfg.max_live_workers, prep.backends)
        with contextlib.ExitStack() as held:
            try:
                # Start every environment's driver before the folder exists: a broken env fails here.
                for name in prep.backends:
                    drivers.for_backend(registry.get(name))
                if scheduler:  # a user's cluster: each backend's pool is its build, or nothing runs
                    from shotbench.bench import pools

                    meta["cluster"] = pools.verify(drivers, prep.backends, scheduler)
                    say(pools.summary(meta["cluster"]))
                if resume_dir is None:
                    try:
                        folder = RunFolder.create(runs / run_id, RUN_KIND, meta)
                    except PermissionError:
                        raise UserError(
                            f"cannot write the run folder in {runs}; fix its permissions or choose another folder."
                        ) from None
                    held.enter_context(run_lock(folder.path))
                assert folder is not None
                from shotbench.bench.worker import versions as main_versions

                meta["versions"]["packages"] = main_versions()
                from shotbench.bench.checksums import Checksums
                from shotbench.store.network import FAULTS

                runner = Runner(
                    folder,
                    run_id,
                    wl,
                    cfg.seed,
                    cfg.options,
                    drivers,
                    say=say,
                    task_timeout=float(cfg.task_timeout),
                    stop_rule=stopping.Rule(cfg.precision, cfg.max_trials, 60 * cfg.max_minutes),
                    checksums=Checksums(wl.source) if cfg.verify else None,
                    faults=InjectedFaults(prep.fault_stats, meta.get("faults_injected") or {}),
                    late_lines=meta["config"].get("network") in FAULTS,
                )
                _record_backend_versions(meta, drivers, prep.backends)
                folder.write_meta(meta)
                if cfg.readcheck and "readcheck" not in meta:
                    meta["readcheck"] = [v.to_dict() for v in check_bytes(cfg, prep.backends, wl)]
                    folder.write_meta(meta)
                say(f"run {run_id}: {len(pending)} cases -> {folder.path}")
                status = INTERRUPTED
                try:
                    t_cases = monotonic()
                    runner.run(pending, done_before=len(done), total_cases=len(cases))
                    if runner.stop_rule.adaptive:
                        more_rounds(runner, folder, matrix, cfg.seed, reads, prep.backends, meta)
                    elif cfg.budget_minutes > 0:  # stop when answered (bench/rounds.py)
                        from shotbench.bench import rounds

                        block = {b: registry.get(b).has_block_cache for b in prep.backends}
                        budget = rounds.Budget(60 * cfg.budget_minutes, cfg.max_trials or rounds.DEFAULT_CAP)
                        rounds.decide_rounds(runner, folder, matrix, cfg.seed, reads, block, meta, budget, t_cases, say)
                    status = COMPLETE
                except KeyboardInterrupt as exc:
                    raise UserError(
                        f"interrupted; the cases finished so far are kept in {folder.path}; "
                        f"finish the run with `shotbench bench --resume {folder.path}`.",
                        exit_code=interrupt_exit(exc),
                    ) from None
                except DiskFull:
                    raise  # interrupted: the sentence says how much to free and how to resume
                except UserError:
                    status = "failed"
                    raise
                finally:
                    status = _finish_meta(folder, meta, status, runner)
            finally:
                drivers.stop(timeout=20.0 if status == COMPLETE else 2.0)
        if getattr(args, "anatomy", False) and status == COMPLETE:
            from shotbench.anatomy.anatomy_run import after_bench

            after_bench(folder.path, prep.backends, wl, 10, say)
    return _report(args, folder, meta)


def _new_meta(run_id: str, st: _Settings, prep: Any, cases: list[Any], selection: dict[str, Any]) -> dict[str, Any]:
    """run.json of a new run: its settings, machine, versions, data and the whole plan."""
    from shotbench.records.status import RUNNING

    cfg = st.cfg
    return {
        "run_id": run_id,
        "started": utc_iso(),
        "finished": None,
        "status": RUNNING,
        "config": {
            "bench": cfg.to_dict(),
            "profile": cfg.profile,
            "data": st.data_arg,
            "network": st.network,
            "tls": st.tls,
            "scheduler": st.scheduler,
            "anonymous": st.anonymous,
            "shots_dir": str(st.shots_dir) if st.shots_dir else None,
            "local_copies": str(st.local_copies) if st.local_copies else None,
            "backends": prep.backends,
            "backend_options": {
                name: registry.get(name).effective_options(cfg.options.get(name, {})) for name in prep.backends
            },
            "cases": len(cases),
        },
        "seed": cfg.seed,
        "machine": machine_info(),
        "versions": {"python": platform.python_version(), "shotbench": __version__, "packages": {}, "backends": {}},
        "git_commit": git_commit(),
        "data": prep.data,
        "selection": selection,
        "plan": [c.to_dict() for c in cases],
        "doctor": _doctor(st),
    }


def _doctor(st: _Settings) -> dict[str, Any]:
    """`shotbench doctor`'s facts as the run starts (no secret); a probe that fails leaves a note."""
    from shotbench.bench import diagnosis as doctor

    try:
        facts = doctor.facts(st.data_arg, st.cfg.profile, st.network, st.anonymous)
        return {**facts, "problems": doctor.problems(facts)}
    except Exception as exc:  # noqa: BLE001 - the facts are a record, never a reason to stop a run
        return {"error": scrub(f"{type(exc).__name__}: {exc}")[:300]}


def _record_backend_versions(meta: dict[str, Any], drivers: Any, backends: list[str]) -> None:
    """run.json's versions of each backend's environment, as its driver reported them."""
    for name in backends:
        v = drivers.drivers[registry.get(name).env_key()].versions
        meta["versions"]["backends"][name] = {
            "python": v.get("python", ""),
            "hdf5": v.get("hdf5", ""),
            "h5py": v.get("h5py", ""),
            "env": registry.get(name).env_key(),
            "packages": v,
        }


def _finish_meta(folder: RunFolder, meta: dict[str, Any], status: str, runner: Any) -> str:
    """run.json at the end of a run, however it ended: status, failure counts, injected faults."""
    from shotbench.records.status import COMPLETE, UNSUPPORTED, error_count, is_failure, row_status, run_status

    rows = folder.cases()
    if status == COMPLETE:
        status = run_status(row_status(r) for r in rows)
    meta["status"] = status
    meta["errors"] = sum(1 for r in rows if is_failure(row_status(r)))  # failed cases
    meta["unsupported"] = sum(1 for r in rows if row_status(r) == UNSUPPORTED)  # findings, not failures
    meta["failed_tasks"] = sum(error_count(r.get("errors")) for r in rows)
    meta["finished"] = utc_iso()
    injected = runner.faults.record()
    if injected is not None:
        meta["faults_injected"] = injected
    folder.write_meta(meta)
    return status


def _report(args: argparse.Namespace, folder: RunFolder, meta: dict[str, Any]) -> int:
    """What the terminal shows after a run: the summary, break-even, reliability under faults."""
    from shotbench.bench.faultcount import summary_lines as fault_lines
    from shotbench.bench.progress import summary_table
    from shotbench.store.network import FAULTS

    rows = folder.cases()
    say("")
    say(summary_table(rows))
    from shotbench.analyse.breakeven import summary_lines

    for line in summary_lines(folder.details()):
        say(line)
    if meta["config"].get("network") in FAULTS:
        from shotbench.analyse import reliability

        say("")
        baseline = reliability.find_baseline(folder.path)
        against = (
            f"slowdown against fault-free run {baseline.name}"
            if baseline
            else "no fault-free run of the same plan here, so no slowdown: run the same command without --faults"
        )
        say(f"reliability under faults '{meta['config']['network']}' ({against}):")
        say(reliability.render(reliability.table(folder.path, baseline)))
        for line in fault_lines(meta.get("faults_injected"), meta.get("plan", [])):
            say(line)
    args.run_folder = folder.path  # `--report` (cli.py) renders this folder when the run exits 0
    args.report = bool(getattr(args, "report", False)) or meta["config"].get("profile") in REPORTING_PROFILES
    n_bad, message = finish_message(rows, folder.cases_csv)
    from shotbench.analyse import byteverdict

    wrong = byteverdict.failures(byteverdict.from_dicts(meta.get("readcheck") or []))
    if wrong:
        n_bad += len(wrong)
        message = byteverdict.failure_message(wrong) + (f"; also {message}" if message else "")
    say(f"results: {folder.path}")
    if n_bad:
        if args.keep_going:
            say(message)
            return 0
        raise UserError(message + "; pass --keep-going to exit 0 anyway.", exit_code=1)
    return 0


def more_rounds(
    runner: Any,
    folder: RunFolder,
    matrix: planmod.Matrix,
    seed: int,
    reads: dict[str, bool],
    backends: list[str],
    meta: dict[str, Any],
) -> None:
    """Interleaved rounds of the case groups whose interval is still wider than the target, each at
    its next trial, until every group is tight or capped, or the time cap is spent (stopping.py)."""
    import time

    rule, t0 = runner.stop_rule, time.monotonic()
    block = {b: registry.get(b).has_block_cache for b in backends}
    while True:
        want = stopping.groups_to_extend(folder.cases())
        if not want:
            break
        if rule.max_seconds and time.monotonic() - t0 > rule.max_seconds:
            say(
                f"time cap of {rule.max_seconds / 60:.0f} min reached with {len(want)} case groups not yet tight; "
                "they are marked noisy"
            )
            break
        top = max(want.values())
        matrix.trials = top
        round_cases = [
            c
            for c in planmod.plan_cases(matrix, seed, reads, block)
            if want.get(stopping.group_of(c.case_id)) == c.trial
        ]
        say(f"another round: {len(round_cases)} case groups not yet within ±{rule.precision:.0%}")
        meta.setdefault("plan", []).extend(c.to_dict() for c in round_cases)
        folder.write_meta(meta)
        runner.run(round_cases)


def add_matrix_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backends", nargs="+", metavar="NAME", help=f"subset of: {' '.join(registry.names())}")
    p.add_argument("--modes", nargs="+", choices=list(planmod.ALL_MODES))
    p.add_argument("--workers", nargs="+", type=int, metavar="N", help="Dask worker counts, e.g. 1 2 4")
    p.add_argument(
        "--page-buffers",
        nargs="+",
        metavar="BYTES",
        help='e.g. 0 default 268435456 (0 is off on every libhdf5; "default" is the library\'s own, 64 MiB on 2.x ROS3)',
    )
    p.add_argument(
        "--block-caches",
        nargs="+",
        metavar="BYTES",
        help="ros3-2.2 block cache sizes, e.g. off default 268435456 (many blocks on unpaged files; on paged files only the first)",
    )
    p.add_argument("--chunk-cache", nargs="+", type=int, metavar="BYTES", help="HDF5 chunk cache sizes (rdcc_nbytes)")
    p.add_argument("--trials", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--signals-files", type=int, metavar="N", help="files read in signals mode (0 = all)")
    p.add_argument("--signals-names", type=int, metavar="N", help="signal names read in signals mode (0 = all)")
    p.add_argument("--shots", type=int, metavar="N", help="synthetic files to make when no --data is given")
    p.add_argument("--shots-files", type=int, metavar="N", help="files each shots case reads (every signal of each)")
    p.add_argument(
        "--precision",
        type=float,
        metavar="FRACTION",
        help="after --trials rounds, run more interleaved rounds of each case until the 95 %% interval of its "
        "median task time is within ±FRACTION (e.g. 0.05), up to --max-trials",
    )
    p.add_argument("--max-trials", type=int, metavar="N", help="the cap on trials with --precision")
    p.add_argument(
        "--max-minutes", type=float, metavar="M", help="the cap on the extra rounds' wall time with --precision"
    )
    p.add_argument(
        "--budget-minutes",
        type=float,
        metavar="M",
        help="after --trials rounds, more rounds only for (mode, workers) groups with a pair still undecided, while "
        "the run's cases fit M minutes (0: exactly --trials)",
    )
    p.add_argument(
        "--margin", type=float, metavar="FRACTION", help="equivalence margin of the verdicts (default 0.10: ±10 %%)"
    )


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "bench",
        help="run the backends benchmark (embedded S3 server unless --data)",
        description="Read HDF5 shot files with Dask workers through every backend; writes "
        "data/runs/<run-id>/{workers.csv,cases.csv,run.json}. " + WHICH_S3_DATA,
    )
    p.add_argument(
        "--profile",
        choices=list(profiles.BENCH_PROFILES),
        help=f"the named matrix to start from (default {DEFAULT_PROFILE})",
    )
    p.add_argument("--config", metavar="FILE.toml", help="TOML file overriding the profile")
    p.add_argument(
        "--data",
        metavar="s3://bucket/prefix",
        help="real S3 (or any endpoint via AWS_ENDPOINT_URL_S3) or a local folder",
    )
    p.add_argument(
        "--network",
        default=None,
        help="latency emulation in front of the embedded server, e.g. s3-same-region, upstream-ec2 "
        "(default: none, or the one the profile models)",
    )
    p.add_argument(
        "--tls",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve the embedded server over https with a private CA that every backend trusts "
        "(the default; TLS handshakes are measured, as on S3); --no-tls (or --http): plain http",
    )
    p.add_argument("--http", dest="tls", action="store_false", help=argparse.SUPPRESS)
    p.add_argument(
        "--anonymous",
        action="store_true",
        help="every backend reads unsigned, whatever credentials are around (open data in a public bucket; "
        "needs --data)",
    )
    p.add_argument(
        "--anatomy",
        action="store_true",
        help="after the cases, write anatomy.json (see `shotbench anatomy`) into the run folder",
    )
    p.add_argument(
        "--faults",
        metavar="PROFILE",
        help="inject faults in front of the embedded server and check every byte read: "
        "flaky-5pc, throttled, stalls-2pc (toxiproxy) or slowdown-5pc, http-flaky-5pc "
        "(HTTP errors and cut bodies from a fault-injecting proxy; http-0pc: that proxy, no faults)",
    )
    p.add_argument(
        "--scheduler", metavar="tcp://host:8786", help="use an existing Dask cluster instead of LocalClusters"
    )
    p.add_argument(
        "--resume", nargs="?", const="latest", metavar="RUN_DIR", help="finish an interrupted run (default: the latest)"
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="render the run's report when it ends without failures (always with --profile readers)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="check the settings and print how many cases the run would measure; run nothing",
    )
    p.add_argument(
        "--keep-going",
        action="store_true",
        help="exit 0 even when cases failed (they are still left out of every result)",
    )
    p.add_argument("--runs-dir", help=argparse.SUPPRESS)
    p.add_argument("--shots-dir", help="where synthetic shot files live (default data/shots)")
    p.add_argument("--local-copies", metavar="DIR", help="local copies of the S3 objects for the local backend")
    add_matrix_args(p)
    p.set_defaults(func=cmd_bench)

"""`shotbench bench`: measure every backend on one workload, in one run, resumably.

Without --data it is self-contained: the embedded S3 server, synthetic shot files made
and staged if missing. Everything that can fail for a user reason (server, data location,
environments) is checked before the run folder exists, so a failed start leaves nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import sys
from pathlib import Path
from typing import Any

from shotbench import __version__
from shotbench.read.plan import matrix as planmod
from shotbench.read.plan import profiles
from shotbench.read.analyse import stopping
from shotbench.backends import registry
from shotbench.errors import UserError
from shotbench.paths import runs_dir, state_dir
from shotbench.provenance import git_commit, machine_info, new_run_id, utc_iso
from shotbench.read.schema import RUN_KIND, measured
from shotbench.runs import RunFolder, latest_run
from shotbench.read.run.prepare import check_envs, prepare, say

def _config_from_args(args: argparse.Namespace) -> profiles.BenchConfig:
    overrides = {
        "backends": args.backends, "modes": args.modes, "workers": args.workers,
        "page_buffers": args.page_buffers, "chunk_caches": args.chunk_cache, "trials": args.trials,
        "block_caches": args.block_caches,
        "seed": args.seed, "signals_files": args.signals_files, "signals_names": args.signals_names,
        "shots": args.shots, "precision": args.precision, "max_trials": args.max_trials,
        "max_minutes": args.max_minutes,
    }
    return profiles.load(args.profile, Path(args.config) if args.config else None, overrides)


def _read_resume_meta(resume_dir: Path) -> dict[str, Any]:
    """run.json of the run to resume, or one sentence if it is unreadable."""
    try:
        meta = RunFolder(resume_dir, RUN_KIND).read_meta()
        meta["config"]["bench"], meta["config"]["data"], meta["config"]["network"]  # noqa: B018 - keys it needs
        return meta
    except (ValueError, KeyError, TypeError, OSError):
        raise UserError(f"{resume_dir / 'run.json'} is damaged or incomplete, so the run cannot be resumed; "
                        "start a new run with `shotbench bench`.") from None


def run_lock(folder: Path) -> Any:
    """One process per run folder: a second `--resume` of a run in progress is refused."""
    from shotbench.locks import held

    return held(folder / ".lock",
                f"run {folder.name} is being resumed by pid {{pid}}; wait for it to finish or stop that process first.",
                f"the run folder {folder} is not writable; fix its permissions or resume a copy.")


def check_scheduler(address: str) -> None:
    """A Dask scheduler that does not accept a connection within seconds is refused up front."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host or not port:
        raise UserError(f"--scheduler {address} is not an address like tcp://host:8786; fix it.")
    try:
        with socket.create_connection((host, port), timeout=5):
            pass
    except OSError as exc:
        raise UserError(f"no Dask scheduler answers at {address} ({exc.strerror or exc}); start it or drop --scheduler.") from None


def finish_message(rows: list[dict[str, str]], cases_csv: Path) -> tuple[int, str]:
    """How many cases failed and where to look (0 failed: empty message)."""
    from shotbench.read.status import OK, row_status

    bad = [r for r in rows if row_status(r) != OK]
    if not bad:
        return 0, ""
    first = next((r.get("first-error") or r.get("errors") for r in bad if r.get("first-error") or r.get("errors")), "")
    return len(bad), (f"{len(bad)} of {len(rows)} cases failed or were partial and are left out of every result "
                      f"(first error: {str(first)[:200]}); see the status and first-error columns of {cases_csv}")


def cmd_bench(args: argparse.Namespace) -> int:
    runs = Path(args.runs_dir) if args.runs_dir else runs_dir()
    if args.resume is None:
        from shotbench.diskspace import writable

        writable(runs, "runs folder")
        return _bench(args, runs, None)
    resume_dir = latest_run(runs, "read") if args.resume == "latest" else Path(args.resume)
    if resume_dir is None or not (resume_dir / "run.json").exists():
        raise UserError(f"no run to resume in {args.resume if args.resume != 'latest' else runs}; start one with `shotbench bench`.")
    with run_lock(resume_dir):
        return _bench(args, runs, resume_dir)


def _bench(args: argparse.Namespace, runs: Path, resume_dir: Path | None) -> int:
    from shotbench.read.run.runner import Drivers, Runner, summary_table
    from shotbench.read.run.faultcount import InjectedFaults, summary_lines as fault_lines
    from shotbench.store.network import FAULTS, check_tls
    from shotbench.read.status import COMPLETE, INTERRUPTED, OK, RUNNING, error_count, row_status, run_status

    if resume_dir is not None:
        meta = _read_resume_meta(resume_dir)
        try:
            cfg = profiles.BenchConfig(**meta["config"]["bench"])
            profiles.validate(cfg)
        except TypeError:
            raise UserError(f"{resume_dir / 'run.json'} holds settings this version does not know; "
                            "start a new run with `shotbench bench`.") from None
        data_arg = meta["config"]["data"]
        network = meta["config"]["network"]
        tls = bool(meta["config"].get("tls", False))
        scheduler = meta["config"].get("scheduler") or args.scheduler
        shots_dir = Path(meta["config"]["shots_dir"]) if meta["config"].get("shots_dir") else None
        local_copies = Path(meta["config"]["local_copies"]) if meta["config"].get("local_copies") else None
    else:
        cfg = _config_from_args(args)
        data_arg, network, scheduler = args.data, args.network, args.scheduler
        tls = bool(args.tls)
        if args.faults:
            if args.faults not in FAULTS:
                raise UserError(f"unknown fault profile {args.faults!r}; choose one of: {', '.join(FAULTS)}.")
            if network != "none":
                raise UserError("--faults and --network both choose the proxy in front of the server; give one of them.")
            check_tls(args.faults, tls)
            network = args.faults
            cfg.verify = True
        shots_dir = Path(args.shots_dir) if args.shots_dir else None
        local_copies = Path(args.local_copies) if args.local_copies else None
    if scheduler:
        check_scheduler(scheduler)
    else:
        profiles.check_local_workers(cfg)

    check_envs(cfg.backends)
    folder: RunFolder | None = None
    with prepare(cfg, data_arg, network, shots_dir, local_copies, tls) as prep:
        wl = prep.workload
        reads = {b: registry.get(b).reads_hdf5 for b in prep.backends}
        matrix = cfg.matrix()
        matrix.backends = prep.backends
        cases = planmod.plan_cases(matrix, cfg.seed, reads, {b: registry.get(b).has_block_cache for b in prep.backends})
        selection = {
            "signals_files": [f.key for f in wl.signal_files],
            "signals": planmod.all_signals(wl.signal_files),
            "shots": {f"t{t}-w{w}": planmod.pick_shot(wl.files, cfg.seed, t, w).key
                      for t in range(1, cfg.trials + 1) for w in cfg.workers},
            "files": [f.key for f in wl.files],
        }
        if resume_dir is not None:
            folder = RunFolder(resume_dir, RUN_KIND)
            if meta.get("selection", {}).get("files") != selection["files"]:
                raise UserError(f"the data at {prep.data['location']} differs from when run {meta['run_id']} started; start a new run instead of --resume.")
            done = folder.repair(measured)
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
            meta = {
                "run_id": run_id, "started": utc_iso(), "finished": None, "status": RUNNING,
                "config": {"bench": cfg.to_dict(), "profile": cfg.profile, "data": data_arg,
                           "network": network, "tls": tls, "scheduler": scheduler,
                           "shots_dir": str(shots_dir) if shots_dir else None,
                           "local_copies": str(local_copies) if local_copies else None,
                           "backends": prep.backends, "cases": len(cases)},
                "seed": cfg.seed, "machine": machine_info(),
                "versions": {"python": platform.python_version(), "shotbench": __version__, "packages": {}, "backends": {}},
                "git_commit": git_commit(), "data": prep.data, "selection": selection,
                "plan": [c.to_dict() for c in cases],
            }
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
                if resume_dir is None:
                    try:
                        folder = RunFolder.create(runs / run_id, RUN_KIND, meta)
                    except PermissionError:
                        raise UserError(f"cannot write the run folder in {runs}; fix its permissions or choose another folder.") from None
                    held.enter_context(run_lock(folder.path))
                assert folder is not None
                from shotbench.read.run.worker import versions as main_versions

                meta["versions"]["packages"] = main_versions()
                from shotbench.read.run.checksums import Checksums

                runner = Runner(folder, run_id, wl, cfg.seed, cfg.options, drivers, say=say,
                                task_timeout=float(cfg.task_timeout),
                                stop_rule=stopping.Rule(cfg.precision, cfg.max_trials, 60 * cfg.max_minutes),
                                checksums=Checksums(wl.source) if cfg.verify else None,
                                faults=InjectedFaults(prep.fault_stats, meta.get("faults_injected") or {}))
                for name in prep.backends:
                    v = drivers.drivers[registry.get(name).env_key()].versions
                    meta["versions"]["backends"][name] = {"python": v.get("python", ""), "hdf5": v.get("hdf5", ""),
                                                          "h5py": v.get("h5py", ""), "env": registry.get(name).env_key(),
                                                          "packages": v}
                folder.write_meta(meta)
                say(f"run {run_id}: {len(pending)} cases -> {folder.path}")
                status = INTERRUPTED
                try:
                    runner.run(pending, done_before=len(done), total_cases=len(cases))
                    if runner.stop_rule.adaptive:
                        more_rounds(runner, folder, matrix, cfg.seed, reads, prep.backends, meta)
                    status = COMPLETE
                except KeyboardInterrupt:
                    raise UserError(f"interrupted; the cases finished so far are kept in {folder.path}; "
                                    f"finish the run with `shotbench bench --resume {folder.path}`.",
                                    exit_code=130) from None
                except UserError:
                    status = "failed"
                    raise
                finally:
                    rows = folder.cases()
                    if status == COMPLETE:
                        status = run_status(row_status(r) for r in rows)
                    meta["status"] = status
                    meta["errors"] = sum(1 for r in rows if row_status(r) != OK)  # cases that are not measurements
                    meta["failed_tasks"] = sum(error_count(r.get("errors")) for r in rows)
                    meta["finished"] = utc_iso()
                    injected = runner.faults.record()
                    if injected is not None:
                        meta["faults_injected"] = injected
                    folder.write_meta(meta)
            finally:
                drivers.stop(timeout=20.0 if status == COMPLETE else 2.0)
        if getattr(args, "anatomy", False) and status == COMPLETE:
            from shotbench.anatomy.cli import after_bench

            after_bench(folder.path, prep.backends, wl, 10, say)
    rows = folder.cases()
    say("")
    say(summary_table(rows))
    from shotbench.read.analyse.breakeven import summary_lines

    for line in summary_lines(folder.details()):
        say(line)
    if meta["config"].get("network") in FAULTS:
        from shotbench.read.analyse import reliability

        say("")
        baseline = reliability.find_baseline(folder.path)
        against = (f"slowdown against fault-free run {baseline.name}" if baseline else
                   "no fault-free run of the same plan here, so no slowdown: run the same command without --faults")
        say(f"reliability under faults '{meta['config']['network']}' ({against}):")
        say(reliability.render(reliability.table(folder.path, baseline)))
        for line in fault_lines(meta.get("faults_injected"), meta.get("plan", [])):
            say(line)
    n_bad, message = finish_message(rows, folder.cases_csv)
    say(f"results: {folder.path}")
    if n_bad:
        if args.keep_going:
            say(message)
            return 0
        raise UserError(message + "; pass --keep-going to exit 0 anyway.", exit_code=1)
    return 0


def more_rounds(runner: Any, folder: RunFolder, matrix: planmod.Matrix, seed: int, reads: dict[str, bool],
                backends: list[str], meta: dict[str, Any]) -> None:
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
            say(f"time cap of {rule.max_seconds / 60:.0f} min reached with {len(want)} case groups not yet tight; "
                "they are marked noisy")
            break
        top = max(want.values())
        matrix.trials = top
        round_cases = [c for c in planmod.plan_cases(matrix, seed, reads, block)
                       if want.get(stopping.group_of(c.case_id)) == c.trial]
        say(f"another round: {len(round_cases)} case groups not yet within ±{rule.precision:.0%}")
        meta.setdefault("plan", []).extend(c.to_dict() for c in round_cases)
        folder.write_meta(meta)
        runner.run(round_cases)


def add_matrix_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backends", nargs="+", metavar="NAME", help=f"subset of: {' '.join(registry.names())}")
    p.add_argument("--modes", nargs="+", choices=list(planmod.ALL_MODES))
    p.add_argument("--workers", nargs="+", type=int, metavar="N", help="Dask worker counts, e.g. 1 2 4")
    p.add_argument("--page-buffers", nargs="+", metavar="BYTES",
                   help='e.g. 0 default 268435456 (0 is off on every libhdf5; "default" is the library\'s own, 64 MiB on 2.x ROS3)')
    p.add_argument("--block-caches", nargs="+", metavar="BYTES",
                   help='ros3-2.2 block cache sizes, e.g. off default 268435456 (many blocks on unpaged files; on paged files only the first)')
    p.add_argument("--chunk-cache", nargs="+", type=int, metavar="BYTES", help="HDF5 chunk cache sizes (rdcc_nbytes)")
    p.add_argument("--trials", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--signals-files", type=int, metavar="N", help="files read in signals mode (0 = all)")
    p.add_argument("--signals-names", type=int, metavar="N", help="signal names read in signals mode (0 = all)")
    p.add_argument("--shots", type=int, metavar="N", help="synthetic files to make when no --data is given")
    p.add_argument("--precision", type=float, metavar="FRACTION",
                   help="after --trials rounds, run more interleaved rounds of each case until the 95 %% interval of its "
                        "median task time is within ±FRACTION (e.g. 0.05), up to --max-trials")
    p.add_argument("--max-trials", type=int, metavar="N", help="the cap on trials with --precision")
    p.add_argument("--max-minutes", type=float, metavar="M", help="the cap on the extra rounds' wall time with --precision")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "bench", help="run the backends benchmark (embedded S3 server unless --data)",
        description="Read HDF5 shot files with Dask workers through every backend; writes "
                    "data/runs/<run-id>/{workers.csv,cases.csv,run.json}.",
    )
    p.add_argument("--profile", default="quick", choices=list(profiles.BENCH_PROFILES))
    p.add_argument("--config", metavar="FILE.toml", help="TOML file overriding the profile")
    p.add_argument("--data", metavar="s3://bucket/prefix", help="real S3 (or any endpoint via AWS_ENDPOINT_URL_S3) or a local folder")
    p.add_argument("--network", default="none", help="latency emulation in front of the embedded server, e.g. s3-same-region")
    p.add_argument("--tls", action="store_true", help="serve the embedded server over https (a private CA; TLS handshakes are measured)")
    p.add_argument("--anatomy", action="store_true", help="after the cases, write anatomy.json (see `shotbench anatomy`) into the run folder")
    p.add_argument("--faults", metavar="PROFILE",
                   help="inject faults in front of the embedded server and check every byte read: "
                        "flaky-5pc, throttled, stalls-2pc (toxiproxy) or slowdown-5pc, http-flaky-5pc "
                        "(HTTP errors and cut bodies from a fault-injecting proxy; http-0pc: that proxy, no faults)")
    p.add_argument("--scheduler", metavar="tcp://host:8786", help="use an existing Dask cluster instead of LocalClusters")
    p.add_argument("--resume", nargs="?", const="latest", metavar="RUN_DIR", help="finish an interrupted run (default: the latest)")
    p.add_argument("--keep-going", action="store_true",
                   help="exit 0 even when cases failed (they are still left out of every result)")
    p.add_argument("--runs-dir", help=argparse.SUPPRESS)
    p.add_argument("--shots-dir", help="where synthetic shot files live (default data/shots)")
    p.add_argument("--local-copies", metavar="DIR", help="local copies of the S3 objects for the local backend")
    add_matrix_args(p)
    p.set_defaults(func=cmd_bench)


if __name__ == "__main__":
    from shotbench.cli import main

    sys.exit(main(["bench", *sys.argv[1:]]))



"""`shotbench transfer`: upload/download benchmark of S3 transfer tools, tool against tool."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from shotbench.commands.server import WHICH_S3_DATA
from shotbench.errors import UserError, refuse_repeats
from shotbench.paths import cache_dir, transfer_runs_dir
from shotbench.transfer import cores
from shotbench.transfer.cases import TRANSFER_PROFILES, get_profile, parse_rows
from shotbench.transfer.programs import DEFAULT_TOOLS, TOOL_CLASSES
from shotbench.transfer.serverstore import AUTO, CHOICES, Placement

BUCKET = "shotbench-transfer"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "transfer",
        help="Upload/download benchmark: aws s3 sync, s5cmd, boto3, s3fs, obstore, awscrt, shotbench stage",
        description="Move a file count x file size matrix in and out of S3 with each tool, verify every "
        "file, and write data/transfer/<run-id>/{cases,transfers}.csv and run.json. " + WHICH_S3_DATA,
    )
    p.add_argument(
        "--profile",
        default="quick",
        choices=sorted(TRANSFER_PROFILES),
        help="matrix size: quick (default, ~15 min on 2 quiet cores), medium (1 GiB rows, sweep), full (seed matrix)",
    )
    p.add_argument(
        "--data",
        metavar="s3://bucket/prefix",
        help="use this S3 location instead of a private embedded server of the run's own",
    )
    p.add_argument(
        "--rows",
        help="replace every row of the profile (main matrix, concurrency and latency sweeps), e.g. 1000x1MiB,10x100MiB",
    )
    p.add_argument("--tools", help=f"comma-separated subset of: {', '.join(TOOL_CLASSES)}")
    p.add_argument("--concurrency", help="comma-separated thread/worker counts to sweep, e.g. 4,16,64")
    p.add_argument("--trials", type=int, help="repeats of every case (interleaved)")
    p.add_argument(
        "--max-trials",
        type=int,
        metavar="N",
        help="then more trials of stage and its contenders on the rows whose stage threshold is undecided, "
        "up to N in all (default: the profile's, 20 for quick; with --trials, none unless given)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed for the file contents and the case order")
    p.add_argument("--direction", choices=["both", "upload", "download"], default="both")
    p.add_argument(
        "--networks",
        metavar="NAMES",
        help="comma-separated networks for the sync-vs-async sweep, from: loopback, s3-same-region, "
        "s3-cross-region (default: the profile's); 'none' skips the sweep",
    )
    p.add_argument(
        "--check",
        type=Path,
        metavar="RUN_DIR",
        help="check a finished run (or 'latest') against the stage threshold: print pass/fail per row, "
        "exit 1 when a row fails",
    )
    p.add_argument(
        "--server-storage",
        choices=CHOICES,
        default=AUTO,
        help="where the embedded server keeps its objects: memory (/dev/shm), disk (the cache), or auto "
        "(default): memory when they fit, away from the disk that holds the files it sends",
    )
    p.add_argument(
        "--server-cpus",
        choices=cores.CHOICES,
        default=cores.AUTO,
        help="the embedded server's CPUs: split (half for it, half for the tools, as against S3, whose CPU is "
        "not the client's), shared (every CPU for both), or auto (default): split where there are 2 or more",
    )
    p.add_argument("--out", type=Path, help="parent folder of the run folder (default data/transfer)")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR", help="finish an interrupted run (same plan)")
    p.add_argument("--aws-bin", help="use this `aws` executable instead of the cached awscli install")
    p.add_argument("--s5cmd-bin", help="use this `s5cmd` executable instead of the cached build")
    p.add_argument(
        "--install-only",
        action="store_true",
        help="install the command-line tools (awscli venv, s5cmd build) into the cache and exit",
    )
    p.set_defaults(func=main)


def _ints(text: str, what: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise UserError(f"--{what} takes positive whole numbers separated by commas, like 4,16.")
    return values


def build_plan(args: argparse.Namespace):
    from shotbench.transfer.execute import TransferPlan

    prof = get_profile(args.profile)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()] if args.tools else list(DEFAULT_TOOLS)
    if not tools:  # `--tools ,` named none: it only stopped at the credentials check
        raise UserError(f"--tools is empty; give at least one tool from: {', '.join(TOOL_CLASSES)}.")
    refuse_repeats(tools, "--tools")  # a tool twice would time every one of its cases twice under one id
    if args.rows:
        parse_rows(args.rows)  # a malformed row is its own sentence first
        refuse_repeats([t.strip() for t in args.rows.split(",") if t.strip()], "--rows", lambda t: parse_rows(t)[0])
    if args.concurrency:
        refuse_repeats([str(c) for c in _ints(args.concurrency, "concurrency")], "--concurrency")
    if args.trials is not None and args.trials < 1:
        raise UserError("--trials must be at least 1.")
    if args.data and args.server_storage != AUTO:
        raise UserError("--server-storage places the embedded server's objects; drop it with --data.")
    if args.data and args.server_cpus != cores.AUTO:
        raise UserError("--server-cpus places the embedded server's processes; drop it with --data.")
    trials = args.trials or prof.trials
    if args.max_trials is not None and args.max_trials < trials:
        raise UserError(
            f"--max-trials must be at least the trials of every case ({trials}); give --max-trials {trials} for none added."
        )
    max_trials = args.max_trials if args.max_trials is not None else (prof.max_trials if args.trials is None else 0)
    networks = list(prof.latency_networks)
    if args.networks is not None:
        networks = [n.strip() for n in args.networks.split(",") if n.strip() and n.strip() != "none"]
        allowed = ("loopback", "s3-same-region", "s3-cross-region")
        bad = [n for n in networks if n not in allowed]
        if bad:
            raise UserError(
                f"unknown network {bad[0]!r} for --networks; use loopback, s3-same-region, s3-cross-region or none."
            )
        if networks and args.data:
            raise UserError(
                "--networks adds latency in front of the embedded server; drop --data or pass --networks none."
            )
    elif args.data:
        networks = []
    return TransferPlan(
        profile=prof.name,
        rows=list(parse_rows(args.rows) if args.rows else prof.rows),
        tools=tools,
        concurrency=_ints(args.concurrency, "concurrency") if args.concurrency else list(prof.concurrency),
        trials=trials,
        seed=args.seed,
        note=prof.note if not (args.rows or args.concurrency) else "custom rows/concurrency",
        directions=["upload", "download"] if args.direction == "both" else [args.direction],
        # an explicit --concurrency or --rows replaces the profile's partial sweep
        sweep=[] if (args.concurrency or args.rows) else list(prof.sweep),
        sweep_rows=[] if (args.concurrency or args.rows) else list(prof.sweep_rows),
        latency_networks=networks,
        latency_tools=[t for t in prof.latency_tools if t in tools],
        latency_concurrency=list(prof.latency_concurrency),
        # --rows replaces every row of the profile, the latency sweep's too (it kept 1 x 256 MiB)
        latency_rows=list(parse_rows(args.rows)) if args.rows else list(prof.latency_rows),
        latency_trials=prof.latency_trials,
        max_trials=max_trials,
    )


def _check_bucket(cfg, loc) -> None:
    """A missing bucket or refused credentials is one sentence before any file is generated."""
    from botocore.exceptions import ClientError

    from shotbench.store.s3 import explain

    try:
        cfg.question_client().head_bucket(Bucket=loc.bucket)
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in ("404", "NoSuchBucket"):
            raise UserError(
                f"the bucket {loc.bucket} does not exist at {cfg.public()['endpoint']}; "
                "create it or point --data at an existing bucket."
            ) from None
        if code in ("403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            raise UserError(
                f"the credentials (access key {cfg.public()['access_key']}) are not allowed to use "
                f"bucket {loc.bucket}; check AWS_PROFILE / AWS_ACCESS_KEY_ID or the bucket policy."
            ) from None
        raise explain(exc, loc, cfg) from None
    except Exception as exc:  # noqa: BLE001 - explain() turns any client error into one sentence
        raise explain(exc, loc, cfg) from None


@contextlib.contextmanager
def latency_endpoints(
    state: Path, upstream_port: int, cfg, names: list[str], cpus: tuple[int, ...] = ()
) -> Iterator[dict]:
    """network name -> S3Config reaching the same server through toxiproxy with that profile; the
    proxies, which stand for the network, run on `cpus` (the server's) when given."""
    import dataclasses

    from shotbench.processes import terminate
    from shotbench.store.network import NETWORK_PROFILES, start_proxy

    started = []
    out = {}
    try:
        for name in names:
            if name == "loopback":
                continue
            folder = state / f"net-{name}"
            folder.mkdir(parents=True, exist_ok=True)
            profile = NETWORK_PROFILES.get(name)
            if profile is None:
                raise UserError(f"'{name}' is not a latency profile; use s3-same-region or s3-cross-region.")
            proxy = start_proxy(folder, upstream_port, profile, private=True)
            started.append(proxy.pid)
            if cpus:
                cores.pin(proxy.pid, cpus)
            out[name] = dataclasses.replace(cfg, endpoint_url=f"http://127.0.0.1:{proxy.listen_port}")
        yield out
    finally:
        for pid in started:
            terminate(pid, "toxiproxy")


@contextlib.contextmanager
def s3_target(
    data: str | None, placement: Placement | None = None, cpus: cores.CpuLayout | None = None
) -> Iterator[tuple]:
    """(S3Config, bucket, base prefix, data info): the user's S3, or a private embedded server
    whose state (and uploaded bytes) are removed afterwards, kept where `placement` says
    (shotbench.transfer.serverstore; the cache's disk without one), and on the CPUs `cpus` gives
    it, with this process on the others for the block (shotbench.transfer.cores)."""
    from shotbench.store.embedded import resolve_s3config
    from shotbench.store.s3 import parse_location

    if data:
        loc = parse_location(data)
        if loc.kind != "s3":
            raise UserError(f"--data must be an s3://bucket/prefix location, not {data}.")
        cfg = resolve_s3config()  # the S3 `ls` would list it from
        if not cfg.access_key:
            raise UserError(
                "no AWS credentials found for --data; set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE."
            )
        _check_bucket(cfg, loc)
        base = loc.prefix + "shotbench-transfer/"
        yield cfg, loc.bucket, base, {"location": f"s3://{loc.bucket}/{base}", "embedded": False, **cfg.public()}
        return
    from shotbench.gobuild import VERSITYGW_VERSION
    from shotbench.redact import mask
    from shotbench.store.embedded import embedded_server, status
    from shotbench.transfer.serverstore import sweep_stale

    parent = placement.parent if placement else disk_server_folder()
    parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(parent, lambda d: status(d) is not None)
    state = Path(tempfile.mkdtemp(prefix="state-", dir=parent))
    try:
        with embedded_server(state) as info:
            cfg = info.s3config()
            cfg.boto3_client().create_bucket(Bucket=BUCKET)
            server = {
                "endpoint_url": info.endpoint_url,
                "region": info.region,
                "access_key": mask(info.access_key),
                "network": info.network,
                "versitygw": VERSITYGW_VERSION,
                "upstream_port": info.upstream_port or info.port,
                "state": str(state),
                "pids": list(info.pids()),
                **(placement.public() if placement else {}),
                **(cpus.public() if cpus else {}),
            }
            with cores.apart(cpus, info.pids()):
                yield (
                    cfg,
                    BUCKET,
                    "",
                    {"location": f"s3://{BUCKET}/", "embedded": True, **cfg.public(), "server": server},
                )
    finally:
        shutil.rmtree(state, ignore_errors=True)


def disk_server_folder() -> Path:
    """Where the embedded server's folders go on the disk: the build cache's."""
    return cache_dir() / "transfer" / "server"


def install_only(args: argparse.Namespace) -> int:
    """Install/build every command-line tool now, so the first benchmark run times no installs."""
    from shotbench.transfer.programs import CliTool, make_tools

    failed = 0
    for tool in make_tools(list(DEFAULT_TOOLS)):
        reason = tool.check()
        where = getattr(tool, "_resolved", None) if isinstance(tool, CliTool) else None
        print(f"{tool.name:24} {reason or 'ok'}" + (f"  ({where})" if where else ""))
        failed += bool(reason)
    return 1 if failed else 0


def main(args: argparse.Namespace) -> int:
    from shotbench.provenance import new_run_id
    from shotbench.runs import read_meta
    from shotbench.transfer.execute import RunContext, TransferPlan, check_disk, run_transfer
    from shotbench.transfer.plansummary import describe
    from shotbench.transfer.programs import make_tools
    from shotbench.transfer.results import terminal_summary, threshold_text
    from shotbench.transfer.runfolder import refuse_other_kind

    t0 = time.monotonic()
    if args.install_only:
        return install_only(args)
    if args.check:
        return check_run(args.check)
    if args.resume:
        run_dir = args.resume.resolve()
        refuse_other_kind(run_dir, "--resume")  # a bench run's plan is not damaged, only not ours
        meta_path = run_dir / "run.json"
        if not meta_path.exists():
            raise UserError(f"{run_dir} has no run.json; pass a data/transfer/<run-id> folder to --resume.")
        try:
            plan = TransferPlan.from_json(read_meta(run_dir)["plan"])
        except (ValueError, KeyError, TypeError):
            raise UserError(
                f"{meta_path} is damaged or incomplete, so the run cannot be resumed; "
                "start a new run with `shotbench transfer`."
            ) from None
    else:
        plan = build_plan(args)
        from shotbench.diskspace import require, writable

        writable(args.out or transfer_runs_dir(), "output folder")
        # the run folder's tables and run.json (the test files are checked by check_disk below)
        require(
            args.out or transfer_runs_dir(),
            16 * 2**20,
            "a transfer run folder",
            "free space there or pass --out on another disk",
        )
        run_dir = (args.out or transfer_runs_dir()) / new_run_id()
    binaries = {
        k: v for k, v in {"aws-s3-sync": args.aws_bin, "aws-s3-cp": args.aws_bin, "s5cmd": args.s5cmd_bin}.items() if v
    }
    tools = make_tools(plan.tools, binaries)
    files_root = cache_dir() / "transfer" / "files"
    check_disk(plan, files_root)
    placement = cpus = None
    if not args.data:
        from shotbench.transfer.serverstore import place, server_bytes

        placement = place(args.server_storage, server_bytes(plan.all_rows()), disk_server_folder())
        cpus = cores.layout(args.server_cpus, os.sched_getaffinity(0))
    with s3_target(args.data, placement, cpus) as (cfg, bucket, prefix, info):
        print(
            f"shotbench transfer: profile {plan.profile}, {len(tools)} tools, {describe(plan, tools)}, "
            f"{info['location']} -> {run_dir}",
            file=sys.stderr,
        )
        scratch = Path(tempfile.mkdtemp(prefix="scratch-", dir=cache_dir() / "transfer"))
        server = info.get("server") or {}
        nets = plan.latency_networks if plan.latency_tools else []
        try:
            with latency_endpoints(
                Path(server.get("state") or scratch),
                int(server.get("upstream_port") or 0),
                cfg,
                nets if server else [],
                cpus.server if cpus else (),
            ) as networks:
                public = {k: v for k, v in info.items() if k != "server"}
                if server:
                    public["server"] = {k: v for k, v in server.items() if k not in ("state", "upstream_port", "pids")}
                pids = tuple(server.get("pids") or ())
                ctx = RunContext(run_dir, scratch, files_root, cfg, bucket, prefix, public, networks, pids)
                run_transfer(ctx, plan, tools, progress=lambda m: print(m, file=sys.stderr, flush=True))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    print(terminal_summary(run_dir))
    print(threshold_text(run_dir))
    if args.data:
        print(
            f"\nThe download sources stay under {info['location']}src/ for the next run; "
            f"remove them with `aws s3 rm --recursive {info['location']}`."
        )
    print(
        f"\nrun folder: {run_dir}  (wall time {time.monotonic() - t0:.0f} s; "
        "render with `shotbench report --latest-transfer`)"
    )
    return 0


def check_run(run_dir: Path) -> int:
    """`--check RUN_DIR|latest`: the stage threshold on a finished run; 1 when a row fails it."""
    from shotbench.runs import latest_run
    from shotbench.transfer.results import load_cases, stage_checks, threshold_text
    from shotbench.transfer.runfolder import check_run_folder

    if str(run_dir) == "latest":
        found = latest_run(transfer_runs_dir(), "transfer")
        if found is None:
            raise UserError("there is no transfer run to check yet; run `make bench-transfer` first.")
        run_dir = found
    check_run_folder(run_dir, "--check")
    print(threshold_text(run_dir))
    checks = stage_checks(load_cases(run_dir))
    return 0 if checks and all(c.passed for c in checks) else 1

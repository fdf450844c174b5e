"""Setting up what a run reads, before any run folder exists: the embedded server (or the user's
location), synthetic shot files made and staged when missing, pre-flight checks, the inventory
of shot files and their families, and the environments' interpreters.

Shared by `shotbench bench` and `shotbench bench-harness`; everything here that can fail for a
user's reason fails with one sentence, so a failed start leaves nothing behind.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shotbench.backends import registry
from shotbench.backends.base import Source
from shotbench.errors import UserError
from shotbench.paths import cache_dir, data_dir, state_dir
from shotbench.plan import matrix as planmod
from shotbench.plan import profiles

if TYPE_CHECKING:
    from shotbench.store.s3 import Location

EMBEDDED_BUCKET = "shotbench"
EMBEDDED_PREFIX = "shots/"


def say(text: str) -> None:
    print(text, flush=True)


@dataclass
class Prepared:
    workload: Any  # runner.Workload
    data: dict[str, Any]
    backends: list[str]
    fault_stats: Path | None = None  # HTTP fault profiles: the fault proxy's counts (store/faultproxy.py)


def refuse_signed_only(backends: list[str]) -> None:
    """One sentence for a backend that cannot read unsigned, before anything starts."""
    cannot = [b for b in backends if not registry.get(b).reads_unsigned]
    if cannot:
        raise UserError(
            f"{', '.join(cannot)} cannot read unsigned, so --anonymous cannot run {'it' if len(cannot) == 1 else 'them'}; "
            "leave it out with --backends or run without --anonymous."
        )


def check_data(cfg: profiles.BenchConfig, data: str, network: str, tls: bool, anonymous: bool) -> Location:
    """The location of --data, or one sentence for what a run refuses in it and its companions before
    any work: a network or TLS meant for the embedded server, a location that cannot be parsed, a
    local folder that is not there (an S3 prefix is listed by the run itself). Shared by the run and
    `bench --dry-run`, so the dry run refuses what the run would."""
    from shotbench.store.s3 import check_local_folder, parse_location

    if network != "none":
        raise UserError("--network emulates latency in front of the embedded server only; drop --network or --data.")
    if any(b in cfg.networks for b in cfg.backends):
        raise UserError(
            "a backend's network option emulates a network in front of the embedded server only; "
            "drop it from [options] or drop --data."
        )
    if tls:
        raise UserError(
            "--tls serves the embedded server over https; drop --tls or --data (set AWS_CA_BUNDLE for your own endpoint's CA)."
        )
    loc = parse_location(data)
    if anonymous:
        refuse_signed_only(cfg.backends)
    if loc.path is not None:
        check_local_folder(loc.path)
    return loc


def check_shots(cfg: profiles.BenchConfig, shots_dir: Path | None) -> Path:
    """The folder of the synthetic shot files a run without --data makes (or keeps), or one sentence
    when it is a file or its disk cannot hold them, before any file is made: an absurd `shots` is
    refused here, by the setting's name. Shared by the run and `bench --dry-run`."""
    from shotbench.diskspace import check_path, require

    folder = Path(shots_dir or data_dir() / ("layouts" if cfg.families else "shots"))
    check_path(folder, "shots folder")
    if folder.exists() and not folder.is_dir():
        raise UserError(f"the shot files' folder {folder} is a file; give a folder with --shots-dir.")
    if cfg.families:
        return folder  # make_families checks the space of its estimate
    have = sum(f.stat().st_size for f in folder.glob("*.h5") if f.is_file()) if folder.is_dir() else 0
    require(
        folder,
        max(0, cfg.shots * cfg.file_size - have),
        f"making {cfg.shots} synthetic shot files of {cfg.file_size:,} bytes",
        "give fewer shots (--shots, or shots in the config), a smaller file_size, or another --shots-dir",
    )
    return folder


@contextlib.contextmanager
def prepare(
    cfg: profiles.BenchConfig,
    data: str | None,
    network: str,
    shots_dir: Path | None,
    local_copies: Path | None,
    tls: bool = False,
    anonymous: bool = False,
) -> Iterator[Prepared]:
    """Server (if embedded), files, staging, pre-flight, inventory; yields the workload."""
    from shotbench.bench.inventory import Workload, inventory, mirror_locally
    from shotbench.bench.keycheck import unsupported_keys
    from shotbench.store.embedded import resolve_s3config
    from shotbench.store.s3 import S3Config, parse_location, preflight

    backends = list(cfg.backends)
    with contextlib.ExitStack() as stack:
        access_log: Path | None = None
        fault_stats: Path | None = None
        s3: S3Config | None
        made: set[str] | None = None  # the files a `layouts` run made (its keys below the prefix)
        paths: dict[str, tuple[str, str]] = {}  # backend -> (network, endpoint) of its own path
        if data is None:
            from shotbench.hdf5.synthesis import make_dataset
            from shotbench.store.embedded import embedded_server, network_paths
            from shotbench.store.staging import stage

            stack.enter_context(
                server_lock(state_dir() / ("bench-server-tls" if tls else "bench-server"))
            )  # before touching its files
            shots_dir = check_shots(cfg, shots_dir)
            if cfg.families:
                made = make_families(cfg, shots_dir)
            else:
                say(f"synthetic shot files: {cfg.shots} in {shots_dir} (made if missing)")
                # exactly these files are read: the bucket may still hold others (another run's count or size)
                made = {
                    p.name
                    for p in make_dataset(
                        shots_dir,
                        shots=cfg.shots,
                        signals=cfg.signals,
                        file_size=cfg.file_size,
                        page_size=cfg.page_size,
                        seed=0,
                    )
                }
            info = stack.enter_context(
                embedded_server(state_dir() / ("bench-server-tls" if tls else "bench-server"), network=network, tls=tls)
            )
            say(f"embedded S3 server: {info.endpoint_url} (network: {network})")
            own = {b: cfg.networks[b] for b in backends if b in cfg.networks}
            endpoints = stack.enter_context(network_paths(info, own.values()))
            paths = {b: (net, endpoints[net]) for b, net in own.items()}
            for b, (net, url) in paths.items():
                say(f"  {b}: its own path to the server, {url} (network: {net})")
            s3 = info.s3config()
            loc = parse_location(f"s3://{EMBEDDED_BUCKET}/{'layouts/' if cfg.families else EMBEDDED_PREFIX}")
            stage(shots_dir, loc, s3, jobs=8, progress=False, create_bucket=True)
            access_log = Path(info.access_log)
            fault_stats = info.fault_stats
            local_dir = str(shots_dir)
        else:
            loc = check_data(cfg, data, network, tls, anonymous)
            # the user's AWS settings, else a running `shotbench server start` server, as `stage` finds it;
            # unsigned reads take the endpoint alone
            s3 = resolve_s3config(quiet=True, anonymous=anonymous) if loc.kind == "s3" else None
            local_dir = str(local_copies) if local_copies else ""
        objs = preflight(loc, s3)
        if data is None and made is not None:  # files of other sizes or counts may linger in the bucket
            objs = [o for o in objs if o.key[len(loc.prefix) :] in made]
        if loc.kind == "local":
            source = Source("local", local_dir=str(loc.path))
            dropped = [b for b in backends if registry.get(b).needs_s3]
            if dropped:
                say(f"data is a local folder: skipping S3 backends {', '.join(dropped)}")
            backends = [b for b in backends if b not in dropped]
            if not backends:
                raise UserError(
                    "a local folder only supports the local and raw-get backends; add them with --backends local raw-get."
                )
        else:
            if not local_dir and "local" in backends:
                local_dir = str(cache_dir() / "mirror" / loc.bucket / loc.prefix)
            source = Source("s3", bucket=loc.bucket, prefix=loc.prefix, local_dir=local_dir)
            if "local" in backends and data is not None:
                mirror_locally(source, objs, s3, Path(local_dir), say=say)
        files = inventory(source, objs, s3, say=say)
        tls_records = path_records(s3, loc.bucket, objs[0].key) if s3 is not None and objs else None
        unsupported = unsupported_keys(backends, source, s3, files, cfg.options)
        for name, why in unsupported.items():
            say(f"{name}: unsupported for this data, left out of this run (unsupported is not failed): {why}")
        backends = [b for b in backends if b not in unsupported]
        if not backends:
            raise UserError(
                "no selected backend can open the keys at this location; add a backend that can, "
                "e.g. --backends obstore, or rename the objects."
            )
        signal_files = planmod.sample_signals(
            planmod.sample_files(files, cfg.signals_files, cfg.seed), cfg.signals_names, cfg.seed
        )
        workload = Workload(source, files, signal_files, s3, access_log, loc.bucket if loc.kind == "s3" else None,
                            network=network, paths={b: p for b, p in paths.items() if b in backends})  # fmt: skip
        if cfg.families:
            workload.families = cfg.family_shapes()
            workload.family_files = split_families(files, workload.families, cfg)
        record = {
            "location": loc.uri(),
            "embedded": data is None,
            "network": network,
            # what each backend's requests went through: the run's network, or its own
            "paths": {b: workload.path_of(b)[0] for b in backends},
            "files": len(files),
            "bytes": sum(f.size for f in files),
            "signals": len(planmod.all_signals(files)),
            "local_copies": local_dir,
            **({"endpoint": s3.public()["endpoint"], "region": s3.region} if s3 is not None else {}),
            **({"unsupported": unsupported} if unsupported else {}),
            **({"tls_records": tls_records} if tls_records is not None else {}),
        }
        yield Prepared(workload, record, backends, fault_stats)


def path_records(s3: Any, bucket: str, key: str) -> dict[str, Any] | None:
    """The TLS records this run's server sends, counted on one GET of the first MiB of a shot file
    (`store/tlsrecords.py`): a client with a cost per record reads slower from a server that sends
    small ones. None over http; the reason, not a failure, when the count cannot be made."""
    from botocore.exceptions import BotoCoreError

    from shotbench.redact import scrub
    from shotbench.store import tlsrecords

    if not (s3.endpoint_url or "https:").startswith("https:"):
        return None
    url = ""
    try:
        url = s3.boto3_client().generate_presigned_url(
            "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=300
        )
        found = tlsrecords.measure(url, s3.ca_bundle)
    except (OSError, ValueError, BotoCoreError) as exc:
        # the signature lives in the URL's query: never in a message
        why = scrub(f"{type(exc).__name__}: {exc}", [*s3.secrets(), url.partition("?")[2]])[:200]
        say(f"TLS records of the path: not counted ({why})")
        return {"error": why}
    say(
        f"TLS records of the path: {found.median_bytes} bytes each on the wire (median of {found.records}, {found.version})"
    )
    return asdict(found)


def make_families(cfg: profiles.BenchConfig, root: Path) -> set[str]:
    """Each file family of a `layouts` run in its own folder under `root` (kept if already made);
    returns the files' paths relative to `root`, the keys this run reads below its prefix."""
    from shotbench.hdf5.synthesis import check_space, estimate_bytes, make_dataset

    shapes = cfg.family_shapes()
    need = sum(estimate_bytes(f.shots, f.signals, f.file_size, f.page_size, f.layout) for f in shapes.values())
    check_space(root, need)
    say(f"file families in {root} (made if missing, up to {need / 1e9:.1f} GB): {', '.join(shapes)}")
    made: set[str] = set()
    for fam in shapes.values():
        paths = make_dataset(root / fam.name, shots=fam.shots, signals=fam.signals, file_size=fam.file_size,
                             page_size=fam.page_size, paging=fam.paging, seed=0, layout=fam.layout,
                             libver=fam.libver)  # fmt: skip
        made.update(p.relative_to(root).as_posix() for p in paths)
    return made


def family_of(key: str) -> str:
    """A family's files live in a folder named after it (the key's last folder)."""
    parts = key.replace("\\", "/").split("/")
    return parts[-2] if len(parts) > 1 else ""


def split_families(
    files: list[Any], shapes: dict[str, Any], cfg: profiles.BenchConfig
) -> dict[str, tuple[list[Any], list[Any]]]:
    """Per family: its files, and what `signals` mode reads (a seeded sample; every shot of a many-shot file)."""
    out = {}
    for name, fam in shapes.items():
        mine = [f for f in files if family_of(f.key) == name]
        if not mine:
            raise UserError(f"no files of family {name} at the data location; remove it from families or make it.")
        sig = (
            mine
            if fam.many_shot
            else planmod.sample_signals(
                planmod.sample_files(mine, cfg.signals_files, cfg.seed), cfg.signals_names, cfg.seed
            )
        )
        out[name] = (mine, sig)
    return out


def server_lock(state: Path) -> Any:
    """One run at a time on bench's embedded server: another run would stop it at its end
    and mix its requests into this run's counts."""
    from shotbench.locks import held

    return held(
        state / "users.lock",
        "the embedded S3 server is in use by another run (pid {pid}); wait for it to finish, "
        "or pass --data to read from another location.",
        f"the state folder {state} is not writable; fix its permissions.",
    )


def check_envs(backends: list[str]) -> None:
    """Each backend's interpreter exists (ROS3 builds: `make envs`)."""
    for name in backends:
        python = registry.get(name).python()
        if not Path(python).exists():
            raise UserError(f"the Python of backend {name} ({python}) does not exist; run `make envs`.")

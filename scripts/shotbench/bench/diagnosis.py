"""What a run will use, on one screen, before anything starts (`shotbench doctor`, `make doctor`).

An EC2 user's run depends on things no command showed: which endpoint and region botocore
settled on and why, where the credentials come from and when they expire, what the instance
is, which builds are there, and how long the default matrix takes. `facts` gathers them (no
secret: the key is masked, the secret and token never read out of the set); `problems` turns
each thing that would make the run fail into one sentence with its fix; `render` is the
screen. A new run's run.json keeps the same facts under "doctor".

Every probe is bounded: a TCP connect of 3 s to the endpoint, 0.3 s per metadata request, and the
run's own listing of DATA and read of its first file's signature, 2 x 10 s at most when silent.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shotbench.backends import registry
from shotbench.errors import UserError
from shotbench.plan import profiles
from shotbench.provenance import imds_base, imds_get
from shotbench.store.network import check_network
from shotbench.store.s3 import DEFAULT_REGION, S3Config

if TYPE_CHECKING:
    from shotbench.store.embedded import ServerInfo

SECONDS_PER_CASE_GUESS = 8.0  # without an earlier run to go by (the quick profile on a laptop: 5-10 s)


def _endpoint() -> tuple[str, str]:
    for var in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        if os.environ.get(var):
            return os.environ[var], var
    return "AWS S3", "none set: AWS itself"


def _region(on_ec2_region: str) -> tuple[str, str]:
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(var):
            return os.environ[var], var
    try:
        import botocore.session

        found = botocore.session.Session().get_config_variable("region")
    except Exception:  # noqa: BLE001 - a broken profile: reported as the default below
        found = None
    if found:
        return str(found), f"profile {os.environ.get('AWS_PROFILE', 'default')}"
    return "us-east-1", "default (nothing set)"


def _instance() -> dict[str, Any]:
    base = imds_base()
    itype = imds_get("meta-data/instance-type") if base else ""
    return {
        "on_ec2": bool(itype),
        "metadata_endpoint": base or "disabled (AWS_EC2_METADATA_DISABLED)",
        "instance_type": itype,
        "region": imds_get("meta-data/placement/region") if itype else "",
        "cores": os.cpu_count(),
    }


def _role_expiry() -> str:
    """The instance role's current set's `Expiration`, as the metadata service serves it."""
    role = imds_get("meta-data/iam/security-credentials/")
    if not role:
        return ""
    try:
        return str(json.loads(imds_get(f"meta-data/iam/security-credentials/{role.splitlines()[0]}"))["Expiration"])
    except (ValueError, KeyError):
        return ""


def _credentials(anonymous: bool, embedded: bool, cfg: S3Config | None = None) -> dict[str, Any]:
    """`cfg`: the settings already resolved for DATA, so the AWS chain is not asked twice."""
    if anonymous:
        return {"source": "anonymous", "access_key": None, "expires": "", "refreshes": False}
    if embedded:
        return {"source": "embedded server's own key pair", "access_key": None, "expires": "", "refreshes": False}
    from shotbench.store.credentials import CredentialSource

    creds = CredentialSource(cfg or S3Config.from_env()).current()
    out: dict[str, Any] = dict(creds.public()) if creds is not None else {"source": "none"}
    out.pop("fetched", None)
    if out.get("source") == "iam-role":
        out["expires"] = _role_expiry() or out.get("expires", "")
    out["refreshes"] = out.get("source") not in ("env", "shared-credentials-file", "config-file", "none", "given")
    out["session_token"] = bool(creds and creds.session_token)
    return out


def _builds(backends: list[str]) -> dict[str, str]:
    from shotbench.builds.environments import env_dir

    out: dict[str, str] = {}
    for name in backends:
        env = registry.get(name).env
        if env is None:
            out[name] = "main environment"
        else:
            out[name] = "built" if (env_dir(env) / "bin" / "python").exists() else "missing"
    return out


def _estimate(cases: int, runs: Path, profile: str) -> tuple[float, str]:
    """Seconds for `cases`, at the pace of the latest finished run of the same profile, else a guess."""
    from shotbench.runs import run_folders

    for folder in reversed(run_folders(runs, "read")):
        try:
            meta = json.loads((folder / "run.json").read_text())
            t0 = dt.datetime.fromisoformat(meta["started"])
            t1 = dt.datetime.fromisoformat(meta["finished"])
            n = int(meta["config"]["cases"])
            if meta["config"].get("profile") != profile or meta.get("status") != "complete":
                continue
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if n > 0 and t1 > t0:
            return cases * (t1 - t0).total_seconds() / n, f"at the pace of {folder.name}"
    return cases * SECONDS_PER_CASE_GUESS, f"a guess of {SECONDS_PER_CASE_GUESS:.0f} s a case (no earlier run)"


def facts(data: str | None, profile: str = "quick", network: str | None = None, anonymous: bool = False,
          runs: Path | None = None, cfg: profiles.BenchConfig | None = None) -> dict[str, Any]:  # fmt: skip
    """Everything the screen shows, as data (run.json's "doctor"); never a secret. `cfg`: the run's
    settings (a --config, --trials), else the profile's."""
    from shotbench.paths import data_dir

    cfg = cfg or profiles.load(profile)
    cases = len(planmod_cases(cfg))
    seconds, basis = _estimate(cases, runs or data_dir() / "runs", profile)
    instance = _instance()
    s3, server = _resolved(data, anonymous)
    if not data:
        endpoint, endpoint_from = "embedded server (started by the run)", "no DATA given"
        region, region_from = DEFAULT_REGION, "embedded server"
    elif server is not None:
        endpoint, endpoint_from = server.endpoint_url, "the running embedded server: no AWS endpoint or key is set"
        region, region_from = server.region, "embedded server"
    else:
        endpoint, endpoint_from = _endpoint()
        region, region_from = _region(instance["region"])
    return {
        "data": data or EMBEDDED_DATA,
        "endpoint": endpoint,
        "endpoint_from": endpoint_from,
        "region": region,
        "region_from": region_from,
        "credentials": _credentials(anonymous, embedded=not data or server is not None, cfg=s3),
        "instance": instance,
        "builds": _builds(cfg.backends),
        "network": network or profiles.PROFILE_NETWORK.get(profile, "none"),
        "plan": {
            "profile": profile,
            "backends": cfg.backends,
            "modes": cfg.modes,
            "workers": cfg.workers,
            "trials": cfg.trials,
            "cases": cases,
            "seconds": round(seconds),
            "basis": basis,
        },  # fmt: skip
    }


def _resolved(data: str | None, anonymous: bool) -> tuple[S3Config | None, ServerInfo | None]:
    """The settings an s3:// DATA would be read with, and the running embedded server they lead to
    (None for the environment's S3), chosen as `ls`, `stage` and `bench` choose them (`resolve_s3`);
    (None, None) for no DATA, a local one, or no S3 at all (the credentials check names that)."""
    if not data or not data.strip().startswith("s3://"):
        return None, None
    from shotbench.store.embedded import resolve_s3

    try:
        return resolve_s3(anonymous=anonymous)
    except UserError:
        return None, None


def planmod_cases(cfg: profiles.BenchConfig) -> list[Any]:
    from shotbench.plan import matrix as planmod

    return planmod.plan_cases(
        cfg.matrix(),
        cfg.seed,
        {b: registry.get(b).reads_hdf5 for b in cfg.backends},
        {b: registry.get(b).has_block_cache for b in cfg.backends},
    )


EMBEDDED_DATA = "embedded server + synthetic shot files"  # the data when no DATA is given


def _refusal(check: Callable[[], object]) -> str | None:
    """The one sentence a check refuses with, or None when it passes."""
    try:
        check()
    except UserError as exc:
        return str(exc)
    return None


def _check_data(data: str) -> None:
    """What `bench` refuses in DATA before it starts: a location it cannot parse, or a local folder
    that is missing or is a file (an S3 prefix is listed by the run itself)."""
    from shotbench.store.s3 import check_local_folder, parse_location

    loc = parse_location(data)
    if loc.path is not None:
        check_local_folder(loc.path)


def _check_listing(data: str, anonymous: bool) -> None:
    """What the run's first step refuses: a folder or prefix with no shot file, or one whose
    listing or first bytes the endpoint does not give (a silent server, a missing bucket, refused
    credentials), each bounded as the run bounds it: seconds, not minutes."""
    from shotbench.store.embedded import resolve_s3config
    from shotbench.store.s3 import parse_location, preflight

    loc = parse_location(data)
    preflight(loc, resolve_s3config(quiet=True, anonymous=anonymous) if loc.kind == "s3" else None)


def _check_endpoint(endpoint: str) -> None:
    from shotbench.store.s3 import check_reachable

    check_reachable(S3Config(endpoint_url=endpoint))


def problems(f: dict[str, Any], access: list[str] | None = None) -> list[str]:
    """Each thing that would spoil the run: one sentence, naming the fix (from the facts alone;
    `access`: `access_problems(f)`, when the caller has it already)."""
    out = list(access) if access is not None else access_problems(f)
    creds, inst, plan = f["credentials"], f["instance"], f["plan"]
    if creds.get("expires") and not creds.get("refreshes"):
        try:
            left = dt.datetime.fromisoformat(creds["expires"].replace("Z", "+00:00")) - dt.datetime.now(dt.UTC)
        except ValueError:
            left = None
        if left is not None and left.total_seconds() < plan["seconds"]:
            out.append(f"the credentials from {creds['source']} expire at {creds['expires']}, before the run would end "
                       "and with nothing to renew them; use an instance role or a profile that refreshes, or renew them first.")  # fmt: skip
    if inst["on_ec2"] and inst["region"] and f["region"] != inst["region"] and f["region_from"].startswith("default"):
        out.append(f"no region is set, so {f['region']} is used, but this instance is in {inst['region']}; "
                   f"set AWS_REGION={inst['region']} if the bucket is there.")  # fmt: skip
    missing = sorted({b for b, state in f["builds"].items() if state == "missing"})
    if missing:
        out.append(
            f"the environments of {', '.join(missing)} are not built; run `make envs` (about 15 minutes the first time)."
        )
    return out


def access_problems(f: dict[str, Any]) -> list[str]:
    """The location, the network, the endpoint and the credentials."""
    out: list[str] = []
    if f["data"] != EMBEDDED_DATA and (why := _refusal(lambda: _check_data(f["data"]))):
        out.append(why)
    if why := _refusal(lambda: check_network(f["network"])):
        out.append(why)
    if f["endpoint"].startswith("http") and (why := _refusal(lambda: _check_endpoint(f["endpoint"]))):
        out.append(why)
    if f["data"].startswith("s3://") and f["credentials"]["source"] == "none":
        fixes = ["attach an instance role", "set AWS_PROFILE or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
                 "read a public bucket with ANONYMOUS=1"]  # fmt: skip
        if not f["endpoint"].startswith("http"):  # no endpoint set either: a running embedded server would be read
            fixes.append("start the embedded server with `shotbench server start`")
        out.append(f"no AWS credentials were found; {', '.join(fixes[:-1])}, or {fixes[-1]}.")
    return out


def folder_problems() -> list[str]:
    """The build cache and the state folder, which every run writes (SHOTBENCH_CACHE, SHOTBENCH_STATE)."""
    from shotbench.paths import cache_dir, state_dir

    return [why for check in (cache_dir, state_dir) if (why := _refusal(check))]


def listing_problem(f: dict[str, Any], access: list[str] | None = None) -> str | None:
    """What the run's first step would refuse in DATA (no shot file there, a silent endpoint, a
    missing bucket, refused credentials), asked of the endpoint itself; None when it would pass,
    and when DATA is the embedded server's or a cause is already among `problems`' first ones."""
    if f["data"] == EMBEDDED_DATA or (access if access is not None else access_problems(f)):
        return None
    return _refusal(lambda: _check_listing(f["data"], f["credentials"]["source"] == "anonymous"))


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def render(f: dict[str, Any], found: list[str]) -> str:
    """The screen: a line a fact, then the problems (or that there are none)."""
    c, i, p = f["credentials"], f["instance"], f["plan"]
    key = f", key {c['access_key']}" if c.get("access_key") else ""
    token = " + session token" if c.get("session_token") else ""
    until = f", expires {c['expires']}" if c.get("expires") else ""
    renew = " (fetched again for every case)" if c.get("refreshes") else ""
    where = f"EC2 {i['instance_type']} in {i['region']}" if i["on_ec2"] else "not EC2 (no metadata service)"
    lines = [
        "shotbench doctor: what `make bench-ros3` would use",
        f"  data        {f['data']}",
        f"  endpoint    {f['endpoint']}  (from {f['endpoint_from']})",
        f"  region      {f['region']}  (from {f['region_from']})",
        f"  credentials {c['source']}{key}{token}{until}{renew}",
        f"  instance    {where}; {i['cores']} cores; metadata service {i['metadata_endpoint']}",
        "  builds      " + ", ".join(f"{b} {s}" for b, s in f["builds"].items()),
        f"  network     {f['network']}",
        f"  plan        profile {p['profile']}: {p['cases']} cases ({len(p['backends'])} backends x "
        f"{'/'.join(p['modes'])} x {'/'.join(map(str, p['workers']))} workers x {p['trials']} trial(s)), "
        f"about {_duration(p['seconds'])} ({p['basis']})",
    ]
    lines += [f"  problem: {s}" for s in found] or ["  no problems found"]
    return "\n".join(lines)

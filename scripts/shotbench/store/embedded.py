"""The embedded S3 server: a real versitygw process on 127.0.0.1, one per state directory.

Users without a bucket get a real S3 endpoint (strict SigV4, real HTTP, real ETags) that the
benchmark reads exactly as it would read AWS. The state directory holds everything about
the instance: `server.json` (pid, ports; no secrets), `credentials.json` and `env.sh`
(mode 0600), the bucket data under `data/`, the access log and the server's own log.
Credentials are random per state directory, kept across restarts so that an `env.sh`
someone sourced keeps working and buckets keep their owner.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import socket
import string
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from shotbench.diskspace import atomic_write
from shotbench.errors import UserError
from shotbench.locks import exclusive
from shotbench.paths import state_dir
from shotbench.processes import daemon, free_port, pid_alive, terminate
from shotbench.redact import mask
from shotbench.store import network
from shotbench.store import tls as _tls
from shotbench.store.faultproxy import MODULE as FAULT_PROXY_MODULE
from shotbench.store.s3 import DEFAULT_REGION, S3Config

HEALTH_PATH = "/health"
IO_BUFFER_SIZE = 65536  # the 1 MiB default costs ~2.5x CPU per small ranged GET
STATSD_MODULE = "shotbench.store.statsd"
START_TIMEOUT = 15.0


@dataclass
class ServerInfo:
    """A running embedded server: where it listens and how to sign requests for it."""

    endpoint_url: str
    region: str
    access_key: str
    secret_key: str = field(repr=False)
    pid: int
    root: Path
    access_log: Path
    port: int
    network: str = "none"
    upstream_port: int = 0  # versitygw's own port; differs from `port` behind toxiproxy
    proxy_pid: int | None = None
    proxy_api_port: int | None = None
    state: Path | None = None
    ca_bundle: str | None = None  # https: the private CA clients must trust
    fault_stats: Path | None = None  # HTTP fault profiles: the proxy's count of injected faults
    helper_pids: tuple[int, ...] = ()  # the byte counter and the fault proxy, when running

    def pids(self) -> tuple[int, ...]:
        """Every process that serves a request: versitygw, the byte counter, the proxies in front."""
        return tuple(p for p in (self.pid, self.proxy_pid, *self.helper_pids) if p)

    def s3config(self) -> S3Config:
        return S3Config(
            endpoint_url=self.endpoint_url,
            region=self.region,
            access_key=self.access_key,
            secret_key=self.secret_key,
            ca_bundle=self.ca_bundle,
        )

    def public(self) -> dict[str, str | int | None]:
        """What may be printed or recorded: no secret, access key masked."""
        return {
            "endpoint": self.endpoint_url,
            "region": self.region,
            "access_key": mask(self.access_key),
            "pid": self.pid,
            "network": self.network,
            "root": str(self.root),
            "access_log": str(self.access_log),
        }


def _state(state: Path | None) -> Path:
    path = Path(state) if state is not None else state_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path


def credentials_file(state: Path | None = None) -> Path:
    return _state(state) / "credentials.json"


def env_file(state: Path | None = None) -> Path:
    return _state(state) / "env.sh"


def _write_private(path: Path, text: str) -> None:
    """Create the file 0600 from the start: a secret must never be world-readable, even briefly."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _read_credentials(state: Path) -> tuple[str, str] | None:
    try:
        data = json.loads(credentials_file(state).read_text())
        return data["access_key"], data["secret_key"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _credentials(state: Path) -> tuple[str, str]:
    """This state directory's credentials, made on first use."""
    existing = _read_credentials(state)
    if existing:
        return existing
    path = credentials_file(state)
    alphabet = string.ascii_uppercase + string.digits
    access = "SB" + "".join(secrets.choice(alphabet) for _ in range(18))
    secret = secrets.token_urlsafe(30)[:40]
    _write_private(path, json.dumps({"access_key": access, "secret_key": secret}) + "\n")
    return access, secret


_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via an HTTP proxy


def _healthy(port: int, timeout: float = 1.0, ca: str | None = None) -> bool:
    if ca:
        import ssl

        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca))
        )
        url = f"https://127.0.0.1:{port}{HEALTH_PATH}"
    else:
        opener, url = _LOCAL, f"http://127.0.0.1:{port}{HEALTH_PATH}"
    try:
        with opener.open(url, timeout=timeout) as resp:
            return resp.status == 200
    except OSError:
        return False


_RECORD_KEYS = ("pid", "port", "upstream_port", "endpoint_url", "region", "root", "access_log")


def _read_state(state: Path) -> dict | None:
    """server.json, or None when it is missing, unreadable or not one `start` wrote (a stale record)."""
    path = state / "server.json"
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) and all(k in rec for k in _RECORD_KEYS) else None


def status(state: Path | None = None) -> ServerInfo | None:
    """The running server of this state directory, or None (stale records are ignored)."""
    st = _state(state)
    rec = _read_state(st)
    if not rec or not pid_alive(rec["pid"], "versitygw"):
        return None
    if not _healthy(rec["upstream_port"], ca=rec.get("tls_ca")):
        return None
    if rec.get("proxy_pid") and not pid_alive(rec["proxy_pid"], "toxiproxy"):
        return None
    if rec.get("fault_proxy_pid") and not pid_alive(rec["fault_proxy_pid"], FAULT_PROXY_MODULE):
        return None
    creds = _read_credentials(st)
    if creds is None:
        return None
    access, secret = creds
    return ServerInfo(
        endpoint_url=rec["endpoint_url"],
        region=rec["region"],
        access_key=access,
        secret_key=secret,
        pid=rec["pid"],
        root=Path(rec["root"]),
        access_log=Path(rec["access_log"]),
        port=rec["port"],
        network=rec.get("network", "none"),
        upstream_port=rec["upstream_port"],
        proxy_pid=rec.get("proxy_pid"),
        proxy_api_port=rec.get("proxy_api_port"),
        state=st,
        ca_bundle=rec.get("tls_ca"),
        fault_stats=Path(rec["fault_stats"]) if rec.get("fault_stats") else None,
        helper_pids=tuple(rec[k] for k in ("counter_pid", "fault_proxy_pid") if rec.get(k)),
    )


def _launch_byte_counter(st: Path, private: bool) -> tuple[subprocess.Popen, int]:
    """The StatsD receiver that writes GET byte counts into the access log (see store/statsd.py)."""
    port = free_port(socket.SOCK_DGRAM)
    proc = daemon(
        [sys.executable, "-m", STATSD_MODULE, "--port", str(port), "--out", str(st / "access.log")], None, private
    )
    return proc, port


def _launch(
    binary: Path,
    st: Path,
    port: int,
    access: str,
    secret: str,
    private: bool,
    statsd_port: int,
    tls: _tls.TlsFiles | None = None,
) -> subprocess.Popen:
    root = st / "data"
    root.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    for var in ("ROOT_ACCESS_KEY_ID", "ROOT_ACCESS_KEY", "ROOT_SECRET_ACCESS_KEY", "ROOT_SECRET_KEY"):
        env.pop(var, None)
    # Secrets go through the environment, never argv (argv is world-readable in /proc).
    env["ROOT_ACCESS_KEY_ID"] = access
    env["ROOT_SECRET_ACCESS_KEY"] = secret
    access_log = st / "access.log"
    if not access_log.exists():  # it names the access key of every request: keep it private
        os.close(os.open(access_log, os.O_WRONLY | os.O_CREAT, 0o600))
    cmd = [
        str(binary),
        "--port",
        f"127.0.0.1:{port}",
        "--region",
        DEFAULT_REGION,
        "--keep-alive",
        "--quiet",
        "--health",
        HEALTH_PATH,
        "--access-log",
        str(access_log),
        "--metrics-service-name",
        "shotbench",
        "--metrics-statsd-servers",
        f"127.0.0.1:{statsd_port}",
        *(["--cert", str(tls.cert), "--key", str(tls.key)] if tls else []),
        "posix",
        "--io-buffer-size",
        str(IO_BUFFER_SIZE),
        str(root),
    ]
    return daemon(cmd, st / "versitygw.log", private, env)


def _log_since(st: Path, offset: int) -> str:
    """What versitygw wrote to its log after `offset`: this start's lines, not an earlier start's
    (the log is appended to, so an old bind error must not name the cause of a new one)."""
    try:
        with open(st / "versitygw.log", "rb") as fh:
            fh.seek(offset)
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


def _log_size(st: Path) -> int:
    try:
        return (st / "versitygw.log").stat().st_size
    except OSError:
        return 0


def _lowest_user_port() -> int:
    """The lowest port a user without CAP_NET_BIND_SERVICE may listen on (Linux's sysctl; 1024 elsewhere)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_unprivileged_port_start").read_text())
    except (OSError, ValueError):
        return 1024


def _bind_refusal(said: str, port: int) -> UserError | None:
    """The sentence for a port versitygw could not listen on, from what it said, or None."""
    if "bind: permission denied" in said:
        low = _lowest_user_port()
        if port < low:
            return UserError(
                f"this user may not listen on port {port} (bind: permission denied: ports below {low} need root "
                f"or CAP_NET_BIND_SERVICE); give --port {low} or above, or leave it out for a free one."
            )
        return UserError(
            f"this user may not listen on port {port} (bind: permission denied); give another --port, or leave "
            "it out for a free one."
        )
    if "address already in use" in said:
        return UserError(
            f"port {port} is already in use by another program; give another --port, or leave it out for a free one."
        )
    return None


def _wait_healthy(proc: subprocess.Popen, port: int, st: Path, ca: str | None = None, offset: int = 0) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = _log_since(st, offset).strip().splitlines()[-3:]
            raise UserError(
                f"the embedded S3 server exited at start ({' '.join(tail)[-300:]}); see {st / 'versitygw.log'} "
                "and retry `shotbench server start`."
            )
        if _healthy(port, timeout=0.5, ca=ca):
            return
        time.sleep(0.05)
    terminate(proc.pid, "versitygw")
    raise UserError(f"the embedded S3 server did not answer within {START_TIMEOUT:.0f} s; see {st / 'versitygw.log'}.")


def start(
    state: Path | None = None, port: int = 0, network: str = "none", private: bool = False, tls: bool = False
) -> ServerInfo:
    """Start the server (idempotent: a healthy running one is returned as it is).

    `private=True` ties the processes to the calling thread's life (Linux parent-death
    signal), for tests and benchmark runs that must not leave servers behind. `tls=True`
    serves https with a certificate from the state folder's private CA (`store.tls`).
    """
    network_profile = _network.check_network(network)
    _network.check_tls(network, tls)
    st = _state(state)
    with exclusive(st / ".lock"):  # one start/stop at a time per state directory
        return _start_locked(st, port, network, network_profile, private, tls)


def _start_locked(
    st: Path, port: int, network: str, network_profile: _network.Profile | None, private: bool, tls: bool = False
) -> ServerInfo:
    from shotbench import gobuild as tools

    running = status(st)
    if running:
        if running.network != network:
            raise UserError(
                f"the embedded server is already running with network '{running.network}'; "
                f"stop it with `shotbench server stop` to start it with '{network}'."
            )
        if bool(running.ca_bundle) != tls:
            raise UserError(
                f"the embedded server is already running over {'https' if running.ca_bundle else 'http'}; "
                "stop it with `shotbench server stop` to start it the other way."
            )
        if port and port != running.port:
            raise UserError(
                f"the embedded server is already running on port {running.port}; stop it with "
                f"`shotbench server stop` to start it on {port}."
            )
        return running
    _cleanup_stale(st)
    binary = tools.versitygw()
    access, secret = _credentials(st)
    tls_files = _tls.ensure(st) if tls else None
    ca = str(tls_files.ca) if tls_files else None
    scheme = "https" if tls else "http"
    counter, statsd_port = _launch_byte_counter(st, private)
    proc = None
    try:
        for _attempt in range(3):  # a free port can be taken between probe and bind
            upstream = port or free_port()
            offset = _log_size(st)
            proc = _launch(binary, st, upstream, access, secret, private, statsd_port, tls_files)
            try:
                _wait_healthy(proc, upstream, st, ca, offset)
                break
            except UserError:
                said = _log_since(st, offset)
                if port and (refusal := _bind_refusal(said, port)):
                    raise refusal from None
                if port or "address already in use" not in said:
                    raise
    except BaseException:
        terminate(counter.pid, STATSD_MODULE)
        raise
    assert proc is not None
    rec: dict = {
        "pid": proc.pid,
        "upstream_port": upstream,
        "port": upstream,
        "endpoint_url": f"{scheme}://127.0.0.1:{upstream}",
        "region": DEFAULT_REGION,
        "root": str(st / "data"),
        "access_log": str(st / "access.log"),
        "network": network,
        "binary": str(binary),
        "counter_pid": counter.pid,
        "tls_ca": ca,
    }
    if network_profile is not None:
        try:
            rec.update(_start_proxies(st, upstream, network_profile, private, scheme))
        except BaseException:
            terminate(proc.pid, "versitygw")
            terminate(counter.pid, STATSD_MODULE)
            raise
    atomic_write(st / "server.json", json.dumps(rec, indent=1) + "\n")  # never half a record to `status`
    atomic_write(st / "versitygw.pid", f"{proc.pid}\n")
    info = status(st)
    if info is None:
        raise UserError(f"the embedded S3 server stopped right after starting; see {st / 'versitygw.log'}.")
    _write_env_file(info)
    return info


_network = network  # the module; `start()` has a parameter with the same name


def _start_proxies(st: Path, upstream: int, profile: network.Profile, private: bool, scheme: str) -> dict[str, Any]:
    """client -> toxiproxy (the network) -> fault proxy (the server's HTTP errors) -> versitygw;
    either is left out when the profile has nothing for it. The record's fields for server.json."""
    from shotbench.store import faultproxy

    rec: dict[str, Any] = {}
    front = upstream
    if profile.http is not None:
        fp = faultproxy.start(st, upstream, profile.http, private=private)
        front = fp.port
        rec.update(fault_proxy_pid=fp.pid, fault_stats=str(fp.stats))
    if _network.toxics(profile):
        try:
            proxy = _network.start_proxy(st, front, profile, private=private)
        except BaseException:
            if "fault_proxy_pid" in rec:
                terminate(rec["fault_proxy_pid"], FAULT_PROXY_MODULE)
            raise
        front = proxy.listen_port
        rec.update(proxy_pid=proxy.pid, proxy_api_port=proxy.api_port)
    rec.update(port=front, endpoint_url=f"{scheme}://127.0.0.1:{front}")
    return rec


@contextlib.contextmanager
def network_paths(info: ServerInfo, names: Iterable[str]) -> Iterator[dict[str, str]]:
    """The running server's endpoint through each named network profile, for the block: profile
    -> endpoint URL. Each profile other than the server's own gets proxies of its own in front of
    the server itself (not in front of its --network), so a backend given that path is the same
    reader through another network, measured in the same rounds as the rest; "none" is the
    server with nothing in between."""
    assert info.state is not None
    scheme = urlsplit(info.endpoint_url).scheme
    started: list[tuple[int, str]] = []
    out: dict[str, str] = {}
    try:
        for name in sorted(set(names)):
            profile = _network.check_network(name)
            _network.check_tls(name, bool(info.ca_bundle))
            if name == info.network:
                out[name] = info.endpoint_url
            elif profile is None:
                out[name] = f"{scheme}://127.0.0.1:{info.upstream_port}"
            else:
                st = info.state / "paths" / name
                st.mkdir(parents=True, exist_ok=True)
                rec = _start_proxies(st, info.upstream_port, profile, True, scheme)
                for key, what in (("proxy_pid", "toxiproxy"), ("fault_proxy_pid", FAULT_PROXY_MODULE)):
                    if key in rec:
                        started.append((rec[key], what))
                out[name] = rec["endpoint_url"]
        yield out
    finally:
        for pid, what in started:
            terminate(pid, what)


def _write_env_file(info: ServerInfo) -> None:
    lines = [
        "# Settings for the embedded S3 server; load them with: source " + str(env_file(info.state)),
        *(f"export {k}={shlex.quote(v)}" for k, v in sorted(info.s3config().env_vars().items())),
    ]
    _write_private(env_file(info.state), "\n".join(lines) + "\n")


def _cleanup_stale(st: Path) -> None:
    rec = _read_state(st)
    if rec:
        terminate(rec["pid"], "versitygw")
        if rec.get("proxy_pid"):
            terminate(rec["proxy_pid"], "toxiproxy")
        if rec.get("fault_proxy_pid"):
            terminate(rec["fault_proxy_pid"], FAULT_PROXY_MODULE)
        if rec.get("counter_pid"):
            terminate(rec["counter_pid"], STATSD_MODULE)
    for name in ("server.json", "versitygw.pid"):
        with contextlib.suppress(FileNotFoundError):
            (st / name).unlink()


def stop(state: Path | None = None) -> bool:
    """Stop the server of this state directory; True if one was running. Data is kept."""
    st = _state(state)
    with exclusive(st / ".lock"):  # one start/stop at a time per state directory
        rec = _read_state(st)
        was_running = bool(rec and pid_alive(rec["pid"], "versitygw"))
        _cleanup_stale(st)
        with contextlib.suppress(FileNotFoundError):
            env_file(st).unlink()
    return was_running


@contextlib.contextmanager
def embedded_server(state: Path, network: str = "none", tls: bool = False) -> Iterator[ServerInfo]:
    """A private server for the duration of a block (tests, one benchmark run)."""
    info = start(state, network=network, private=True, tls=tls)
    try:
        yield info
    finally:
        stop(state)


def resolve_s3config(
    embedded: bool = False, state: Path | None = None, quiet: bool = False, anonymous: bool = False
) -> S3Config:
    """Which S3 to use when the user named no endpoint on the command line: every command that
    takes an s3:// location asks this, so one URL means one place to all of them.

    1. `embedded=True`: the embedded server (started if it is not running).
    2. `anonymous=True`: unsigned reads of a public bucket, at the environment's endpoint (AWS
       when none is set); the embedded server's buckets are not public.
    3. Otherwise, AWS settings from the environment (AWS_ENDPOINT_URL[_S3], AWS_ACCESS_KEY_ID,
       AWS_PROFILE, instance roles) win: they are what the user configured.
    4. Otherwise a running embedded server.
    """
    return resolve_s3(embedded, state, quiet, anonymous)[0]


def resolve_s3(
    embedded: bool = False, state: Path | None = None, quiet: bool = False, anonymous: bool = False
) -> tuple[S3Config, ServerInfo | None]:
    """`resolve_s3config`'s settings, and the embedded server they lead to when they do (None for
    the environment's S3), for a command that says where its requests go (`shotbench doctor`)."""
    if embedded:
        running = status(state)
        if running is None:
            running = start(state)
            if not quiet:
                print(f"shotbench: started the embedded S3 server at {running.endpoint_url}", file=sys.stderr)
        return running.s3config(), running
    if anonymous:
        return S3Config.from_env(anonymous=True), None
    cfg = S3Config.from_env()
    if cfg.endpoint_url or cfg.access_key:
        return cfg, None
    running = status(state)
    if running is not None:
        return running.s3config(), running
    raise UserError(
        "no S3 endpoint or credentials are configured; start the embedded server with `shotbench server start`, "
        "or set AWS_ENDPOINT_URL_S3 and AWS credentials for another S3 service."
    )

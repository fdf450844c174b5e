"""A real HSDS (The HDF Group's HDF5 REST service) beside the embedded S3 server, started and stopped
the way versitygw is (`shotbench.store.embedded`).

HSDS runs from `.envs/hsds`: one service node and one data node (the smallest it runs with), started
here as `hsds-node` processes rather than through the `hsds` launcher, whose fixed 10 s start limit
a busy machine misses (each node imports aiohttp, botocore and numpy), speaking over Unix sockets in a short folder under /tmp, so it opens no TCP
port at all and only this machine's processes reach it. It stores its domains in the S3 bucket the
benchmark reads (each request names the bucket); linked datasets (`hsload --link`) leave the chunks
in the original HDF5 objects, which its data node fetches by range. The admin password goes into the
state folder (`password.txt`, 0600) and the S3 credentials into the nodes' environment only: never
argv, data/ or the logs. The service node leads a process group the data node joins, so
`stop` ends both together; started with `private=True`, they also end with the process that
started them.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shotbench.errors import UserError
from shotbench.locks import exclusive
from shotbench.processes import die_with_parent, pid_alive, reap_group
from shotbench.store.s3 import DEFAULT_REGION, S3Config

ADMIN = "admin"
START_TIMEOUT = 120.0  # each node imports aiohttp, botocore and numpy: 15 s each on a busy machine
STOP_TIMEOUT = 10.0
DEFAULT_BUCKET = "shotbench-hsds"  # the nodes insist on one; every request names its own


@dataclass(frozen=True)
class HsdsInfo:
    """How a client reaches the running service (the password stays in the state folder)."""

    endpoint: str  # http+unix://… (the service node's socket)
    pid: int  # the service node, leader of the process group of both HSDS processes
    state: str

    def password(self) -> str:
        return (Path(self.state) / "password.txt").read_text().split(":", 1)[1].strip()

    def client_env(self) -> dict[str, str]:
        """The variables h5pyd reads: endpoint, user and password."""
        return {"HS_ENDPOINT": self.endpoint, "HS_USERNAME": ADMIN, "HS_PASSWORD": self.password()}


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)


def _socket_url(folder: str, name: str) -> str:
    return "http+unix://" + (folder.rstrip("/") + "/").replace("/", "%2F") + name


def _read(state: Path) -> HsdsInfo | None:
    try:
        rec = json.loads((state / "hsds.json").read_text())
        info = HsdsInfo(rec["endpoint"], int(rec["pid"]), str(state))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return info if pid_alive(info.pid, "hsds") else None


def status(state: Path) -> HsdsInfo | None:
    """The running service of this state folder, or None."""
    return _read(Path(state))


def start(state: Path, s3: S3Config, python: Path, private: bool = False) -> HsdsInfo:
    """Start HSDS for `s3` (idempotent: a running one is returned as it is)."""
    st = Path(state)
    st.mkdir(parents=True, exist_ok=True)
    with exclusive(st / ".hsds.lock"):
        running = _read(st)
        if running is not None:
            return running
        return _start_locked(st, s3, python, private)


def _start_locked(st: Path, s3: S3Config, python: Path, private: bool) -> HsdsInfo:
    if not s3.endpoint_url:
        raise UserError("HSDS is run only beside the embedded S3 server; drop the hsds backend for this location.")
    password = secrets.token_urlsafe(24)
    _write_private(st / "password.txt", f"{ADMIN}:{password}\n")
    config = st / "config"
    config.mkdir(exist_ok=True)
    # Loopback only, the admin is the only user, nothing public; small caches (two cores shared).
    _write_private(
        config / "override.yml",
        "\n".join(
            [
                "allow_noauth: false",
                "default_public: false",
                f"admin_user: {ADMIN}",
                f"aws_region: {s3.region or DEFAULT_REGION}",
                "chunk_mem_cache_size: 64m",
                "metadata_mem_cache_size: 32m",
                "log_level: WARN",
                "",
            ]
        ),
    )
    sock = tempfile.mkdtemp(prefix="sb-hsds-", dir="/tmp")  # socket paths must stay under 63 characters
    env = dict(os.environ)
    for var in list(env):
        if var.startswith(("AWS_", "HS_", "BUCKET_NAME")):
            env.pop(var)
    env.update(
        {
            "AWS_S3_GATEWAY": s3.endpoint_url,
            "AWS_REGION": s3.region or DEFAULT_REGION,
            "AWS_ACCESS_KEY_ID": s3.access_key or "",
            "AWS_SECRET_ACCESS_KEY": s3.secret_key or "",
            "BUCKET_NAME": DEFAULT_BUCKET,
            "LOG_LEVEL": "WARN",
            "PYTHONUNBUFFERED": "1",
        }
    )
    if s3.ca_bundle:
        env["AWS_CA_BUNDLE"] = s3.ca_bundle
    env.pop("PYTHONPATH", None)
    node = Path(python).parent / "hsds-node"
    sn_url, dn_url = _socket_url(sock, "sn_1.sock"), _socket_url(sock, "dn_1.sock")
    common = [
        "--standalone",
        f"--dn_urls={dn_url}",
        f"--hsds_endpoint={sn_url}",
        "--use_socket",
        f"--config_dir={config}",
        "--log_level=WARN",
    ]
    sn_args = [str(python), str(node), "--node_type=sn", "--log_prefix=sn ", f"--admin_user={ADMIN}"]
    sn_args += [f"--password_file={st / 'password.txt'}", f"--sn_url={sn_url}", "--logfile=sn1.log", *common]
    dn_args = [str(python), str(node), "--node_type=dn", "--log_prefix=dn1 ", f"--dn_urls={dn_url}"]
    dn_args += ["--node_number=0", "--logfile=dn1.log", *common]
    out = open(st / "hsds.out", "ab")
    try:
        # The service node leads a new process group; the data node joins it, so one killpg ends both.
        sn = subprocess.Popen(
            sn_args,
            env=env,
            cwd=st,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            process_group=0,  # a group of its own in this session (a new session would bar the data node)
            preexec_fn=die_with_parent() if private else None,
        )
        dn = subprocess.Popen(
            dn_args,
            env=env,
            cwd=st,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            process_group=sn.pid,
            preexec_fn=die_with_parent() if private else None,
        )
    finally:
        out.close()
    info = HsdsInfo(sn_url, sn.pid, str(st))
    (st / "hsds.json").write_text(json.dumps({"endpoint": sn_url, "pid": sn.pid, "socket_dir": sock}))
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if sn.poll() is not None or dn.poll() is not None:
            tail = (st / "hsds.out").read_text(errors="replace").strip().splitlines()[-3:]
            _cleanup(st)
            raise UserError(f"HSDS exited at start ({' '.join(tail)[-300:]}); see {st / 'hsds.out'}.")
        if _ready(Path(sock) / "sn_1.sock"):
            return info
        time.sleep(0.25)
    _cleanup(st)
    raise UserError(f"HSDS did not become ready within {START_TIMEOUT:.0f} s; see {st / 'hsds.out'}.")


def _ready(path: Path) -> bool:
    """The service node answers `GET /about` with 200 and reports itself ready (its data node joined)."""
    import socket

    if not path.exists():
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2.0)
            s.connect(str(path))
            s.sendall(b"GET /about HTTP/1.0\r\nHost: localhost\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
    except OSError:
        return False
    head, _, body = data.partition(b"\r\n\r\n")
    return head.startswith(b"HTTP/1.") and b" 200 " in head.split(b"\r\n", 1)[0] and b'"READY"' in body


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _cleanup(st: Path) -> None:
    """End the whole process group (service node, data node), then the socket folder and the record."""
    try:
        rec: dict[str, Any] = json.loads((st / "hsds.json").read_text())
    except (OSError, ValueError):
        return
    pid = int(rec.get("pid", 0))
    if pid and pid_alive(pid, "hsds"):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        while time.monotonic() < deadline and _group_alive(pid):
            reap_group(pid)  # the data node too, not only the leader: else the group looks alive until the SIGKILL
            time.sleep(0.1)
        if _group_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        reap_group(pid)
    sock = rec.get("socket_dir")
    if sock and str(sock).startswith("/tmp/sb-hsds-"):
        for p in Path(sock).glob("*"):
            with contextlib.suppress(OSError):
                p.unlink()
        with contextlib.suppress(OSError):
            Path(sock).rmdir()
    with contextlib.suppress(FileNotFoundError):
        (st / "hsds.json").unlink()


def stop(state: Path) -> bool:
    """Stop the service of this state folder; True if one was running. Its S3 objects are kept."""
    st = Path(state)
    if not st.exists():
        return False
    with exclusive(st / ".hsds.lock"):
        was = _read(st) is not None
        _cleanup(st)
    return was


@contextlib.contextmanager
def hsds_server(state: Path, s3: S3Config, python: Path) -> Iterator[HsdsInfo]:
    """A private service for the duration of a block (tests, one benchmark run)."""
    info = start(state, s3, python, private=True)
    try:
        yield info
    finally:
        stop(state)

"""An instance role on this machine: an IMDSv2 emulator whose credentials rotate, and a gate in
front of the embedded server that accepts only the sets still valid.

On EC2 the metadata service hands out the role's credentials (key, secret, session token,
expiry) and replaces them while the old set still works; a set that has expired is refused by
S3. This module rehearses that here, with short periods, so a run outlives several sets:

- the metadata service (`/latest/api/token`, `/latest/meta-data/iam/security-credentials/<role>`,
  `instance-type`, `placement/region`, the identity document), IMDSv2 only (a GET without the
  session token gets 401, as with `HttpTokens=required`);
- every `period` seconds a new set; the one it replaces is revoked `grace` seconds later, and
  `Expiration` says exactly that (issued + period + grace);
- the gate, an S3 endpoint that refuses a request signed with a set that is unknown or revoked
  (403 `ExpiredToken` / `InvalidAccessKeyId`), checks its SigV4 signature with the set's own
  secret (403 `SignatureDoesNotMatch`), and forwards the rest to the embedded server re-signed
  with the server's own key. Requests without a signature pass through unchanged (a
  public-read bucket).

Why a gate and not versitygw's own users: versitygw 1.8.0 refuses any request that carries a
session token unless its IAM is the separate STS-backed service (`auth.ResolveDerivedKey`), and
instance-role credentials always carry one.

Clients find the metadata service through `AWS_EC2_METADATA_SERVICE_ENDPOINT` (botocore's
`ec2_metadata_service_endpoint`, also read by aws-c-auth's IMDS client); the gate is the
`AWS_ENDPOINT_URL_S3` of a run. Run as `python -m shotbench.store.imds` (see `main`); loopback only.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import http.client
import json
import secrets
import signal
import string
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

from shotbench.errors import UserError

ROLE = "shotbench-role"
INSTANCE_TYPE = "c6in.xlarge"  # what the emulated instance says it is (doctor prints it)
INSTANCE_CORES = 4
TOKEN_HEADER = "x-aws-ec2-metadata-token"
STATE_FILE = "imds.json"
START_TIMEOUT = 10.0
CHUNK = 1 << 16
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
                        "upgrade", "expect", "host", "authorization", "x-amz-security-token", "x-amz-date",
                        "x-amz-content-sha256", "content-length"})  # fmt: skip


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RoleSet:
    """One set of role credentials and its life: issued, replaced (then revoked `grace` later)."""

    access_key: str
    secret_key: str = field(repr=False)
    token: str = field(repr=False)
    issued: float
    expires: float
    replaced: float | None = None


def new_set(period: float, grace: float, now: float | None = None) -> RoleSet:
    now = time.time() if now is None else now
    alphabet = string.ascii_uppercase + string.digits
    return RoleSet(
        "ASIA" + "".join(secrets.choice(alphabet) for _ in range(16)),
        secrets.token_urlsafe(30)[:40],
        secrets.token_urlsafe(96),
        now,
        now + period + grace,
    )


class Role:
    """The role's sets: the current one, and those replaced but not yet revoked."""

    def __init__(self, period: float, grace: float) -> None:
        self.period, self.grace = period, grace
        self.lock = threading.Lock()
        self.sets: list[RoleSet] = [new_set(period, grace)]
        self.issued: list[RoleSet] = list(self.sets)  # every set ever handed out (in memory only)
        self.revoked: list[str] = []  # access keys, in order
        self.refused: list[tuple[str, str]] = []  # (access key, why) of requests the gate refused
        self.used: set[str] = set()  # access keys of the sets the gate let through

    def current(self) -> RoleSet:
        with self.lock:
            return self.sets[-1]

    def rotate(self, now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self.lock:
            self.sets[-1].replaced = now
            self.sets.append(new_set(self.period, self.grace, now))
            self.issued.append(self.sets[-1])
            live = [s for s in self.sets if s.replaced is None or now < s.replaced + self.grace]
            self.revoked += [s.access_key for s in self.sets if s not in live]
            self.sets = live

    def tick(self) -> None:
        """Rotate when the period is up; drop sets whose grace has passed."""
        now = time.time()
        if now >= self.current().issued + self.period:
            self.rotate(now)
        else:
            with self.lock:
                gone = [s for s in self.sets if s.replaced is not None and now >= s.replaced + self.grace]
                self.revoked += [s.access_key for s in gone]
                self.sets = [s for s in self.sets if s not in gone]

    def find(self, access_key: str) -> RoleSet | None:
        with self.lock:
            return next((s for s in self.sets if s.access_key == access_key), None)

    def status(self) -> dict[str, Any]:
        """What may be written down: counts and masked keys, never a secret or token."""
        with self.lock:
            return {
                "rotations": len(self.revoked) + len(self.sets) - 1,
                "revoked": len(self.revoked),
                "live": [s.access_key[:4] + "…" for s in self.sets],
                "refused": [[k[:4] + "…", why] for k, why in self.refused],
                "sets_used": len(self.used),
            }


# ----------------------------------------------------------------------------- SigV4 check


def _canonical_query(query: str) -> str:
    pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "X-Amz-Signature"]
    return "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in sorted(pairs))


def signature_ok(method: str, raw_path: str, headers: dict[str, str], secret: str) -> bool:
    """The request's SigV4 signature (header or query form), recomputed with `secret`."""
    parts = urlsplit(raw_path)
    q = dict(parse_qsl(parts.query, keep_blank_values=True))
    if "X-Amz-Signature" in q:
        cred, signed, date, given = (
            q["X-Amz-Credential"],
            q["X-Amz-SignedHeaders"],
            q["X-Amz-Date"],
            q["X-Amz-Signature"],
        )
        payload = "UNSIGNED-PAYLOAD"
    else:
        auth = headers.get("authorization", "")
        fields = dict(p.strip().split("=", 1) for p in auth.split(" ", 1)[1].split(",") if "=" in p)
        cred, signed, given = fields["Credential"], fields["SignedHeaders"], fields["Signature"]
        date = headers.get("x-amz-date", "")
        payload = headers.get("x-amz-content-sha256", "UNSIGNED-PAYLOAD")
    _, day, region, service, _ = cred.split("/")
    canon_headers = "".join(f"{h}:{' '.join(headers.get(h, '').split())}\n" for h in signed.split(";"))
    canonical = "\n".join([method, parts.path or "/", _canonical_query(parts.query), canon_headers, signed, payload])
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret).encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.compare_digest(hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest(), given)


def _presented(raw_path: str, headers: dict[str, str]) -> tuple[str, str] | None:
    """(access key, session token) a request was signed with, or None if unsigned."""
    q = dict(parse_qsl(urlsplit(raw_path).query, keep_blank_values=True))
    if "X-Amz-Credential" in q:
        return q["X-Amz-Credential"].split("/")[0], q.get("X-Amz-Security-Token", "")
    auth = headers.get("authorization", "")
    if "Credential=" not in auth:
        return None
    return auth.split("Credential=", 1)[1].split("/", 1)[0], headers.get("x-amz-security-token", "")


# ----------------------------------------------------------------------------- servers


def _imds_handler(role: Role, region: str) -> type[BaseHTTPRequestHandler]:
    tokens: set[str] = set()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # as the gate's (below): no delayed-ACK wait per answer

        def log_message(self, *args: Any) -> None:  # quiet: a run asks once per case
            pass

        def _send(self, status: int, body: str, ctype: str = "text/plain") -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_PUT(self) -> None:
            if self.path != "/latest/api/token" or not self.headers.get("x-aws-ec2-metadata-token-ttl-seconds"):
                self._send(400, "Bad Request")
                return
            tok = secrets.token_urlsafe(32)
            tokens.add(tok)
            self._send(200, tok)

        def do_GET(self) -> None:
            if self.headers.get(TOKEN_HEADER) not in tokens:
                self._send(401, "Unauthorized")
                return
            path = self.path.rstrip("/")
            creds = "/latest/meta-data/iam/security-credentials"
            if path == creds:
                self._send(200, ROLE)
            elif path == f"{creds}/{ROLE}":
                s = role.current()
                body = {"Code": "Success", "LastUpdated": _iso(s.issued), "Type": "AWS-HMAC",
                        "AccessKeyId": s.access_key, "SecretAccessKey": s.secret_key, "Token": s.token,
                        "Expiration": _iso(s.expires)}  # fmt: skip
                self._send(200, json.dumps(body), "application/json")
            elif path == "/latest/meta-data/instance-type":
                self._send(200, INSTANCE_TYPE)
            elif path == "/latest/meta-data/placement/region":
                self._send(200, region)
            elif path == "/latest/dynamic/instance-identity/document":
                doc = {"instanceType": INSTANCE_TYPE, "region": region, "instanceId": "i-0rehearsal0000000"}
                self._send(200, json.dumps(doc), "application/json")
            else:
                self._send(404, "Not Found")

    return Handler


def _error(code: str, message: str) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message></Error>'
    ).encode()


def _gate_handler(role: Role, upstream: tuple[str, int], root: tuple[str, str], region: str) -> type:
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    root_creds = Credentials(*root)

    class Gate(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # TCP_NODELAY: the reply goes out as headers, then body. With Nagle on, the body waits for
        # the client's delayed ACK of the headers, 40 ms a request on Linux: an obstore signals
        # case made 38 s of what takes 1 s direct.
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:
            pass

        def _refuse(self, key: str, code: str, message: str) -> None:
            with role.lock:
                role.refused.append((key, f"{code} {self.command} {self.path[:80]} at {_iso(time.time())}"))
            body = _error(code, message)
            self.send_response(403)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("x-amz-request-id", secrets.token_hex(8))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _handle(self) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            length = int(headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            who = _presented(self.path, headers)
            out = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            path = self.path
            if who is not None:
                key, token = who
                live = role.find(key)
                if live is None:
                    code = "ExpiredToken" if key in role.revoked else "InvalidAccessKeyId"
                    self._refuse(key, code, "The provided token has expired." if code == "ExpiredToken"
                                 else "The AWS access key Id you provided does not exist in our records.")  # fmt: skip
                    return
                if token != live.token:
                    self._refuse(key, "InvalidToken", "The provided token is malformed or otherwise invalid.")
                    return
                if not signature_ok(self.command, self.path, headers, live.secret_key):
                    self._refuse(key, "SignatureDoesNotMatch", "The request signature we calculated does not match.")
                    return
                with role.lock:
                    role.used.add(key)
                parts = urlsplit(self.path)
                query = "&".join(
                    f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
                    for k, v in parse_qsl(parts.query, keep_blank_values=True)
                    if not k.startswith("X-Amz-")
                )
                path = parts.path + (f"?{query}" if query else "")
                req = AWSRequest(
                    self.command,
                    f"http://{upstream[0]}:{upstream[1]}{path}",
                    headers={**out, "x-amz-content-sha256": "UNSIGNED-PAYLOAD"} if not body else out,
                    data=body,
                )
                S3SigV4Auth(root_creds, "s3", region).add_auth(req)
                out = {k: v for k, v in req.headers.items()}
            conn = self._upstream()
            try:
                conn.request(self.command, path, body=body or None, headers=out)
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException):  # a kept-alive connection the server closed
                conn.close()
                conn.request(self.command, path, body=body or None, headers=out)
                resp = conn.getresponse()
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in ("connection", "keep-alive", "transfer-encoding"):
                    self.send_header(k, v)
            self.end_headers()
            try:
                while chunk := resp.read(CHUNK):
                    if self.command != "HEAD":
                        self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):  # the client hung up mid-body, as S3 clients do
                self.close_connection = True
                conn.close()

        def _upstream(self) -> http.client.HTTPConnection:
            """One kept-alive connection to the server per client connection (a thread each)."""
            conn = getattr(self, "_conn", None)
            if conn is None:
                conn = self._conn = http.client.HTTPConnection(*upstream, timeout=60)
            return conn

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _handle

    return Gate


@dataclass
class Emulator:
    """The running pair: where the metadata service and the gate listen."""

    role: Role
    imds: ThreadingHTTPServer
    gate: ThreadingHTTPServer
    threads: list[threading.Thread]
    stop_event: threading.Event

    @property
    def imds_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.imds.server_address[1]}"

    @property
    def gate_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.gate.server_address[1]}"

    def env(self) -> dict[str, str]:
        """What a shell on the emulated instance has: the metadata endpoint and the S3 endpoint."""
        return {
            "AWS_EC2_METADATA_SERVICE_ENDPOINT": self.imds_endpoint,
            "AWS_EC2_METADATA_DISABLED": "false",  # the emulator is the metadata service to ask
            "AWS_ENDPOINT_URL_S3": self.gate_endpoint,
        }

    def close(self) -> None:
        self.stop_event.set()
        for srv in (self.imds, self.gate):
            srv.shutdown()
            srv.server_close()
        for t in self.threads:
            t.join(timeout=5)


def serve(server_endpoint: str, root: tuple[str, str], region: str, period: float, grace: float) -> Emulator:
    """Start the metadata service, the gate and the rotation, in threads of this process."""
    up = urlsplit(server_endpoint)
    if up.scheme != "http" or not up.hostname:
        raise UserError(f"the instance-role rehearsal fronts a plain-http server, not {server_endpoint}; "
                        "start the embedded server without --tls (`shotbench server start`).")  # fmt: skip
    role = Role(period, grace)
    imds = ThreadingHTTPServer(("127.0.0.1", 0), _imds_handler(role, region))
    gate = ThreadingHTTPServer(("127.0.0.1", 0), _gate_handler(role, (up.hostname, up.port or 80), root, region))
    imds.daemon_threads = gate.daemon_threads = True
    stop = threading.Event()

    def rotate() -> None:
        while not stop.wait(0.5):
            role.tick()

    threads = [threading.Thread(target=srv.serve_forever, daemon=True) for srv in (imds, gate)]
    threads.append(threading.Thread(target=rotate, daemon=True))
    for t in threads:
        t.start()
    return Emulator(role, imds, gate, threads, stop)


def emulate(state: Path | None, period: float, grace: float) -> int:
    """Front the running embedded server until interrupted; print the two `export` lines a shell
    needs, and keep `<state>/imds.json` (no secrets) up to date."""
    from shotbench.paths import state_dir
    from shotbench.store import embedded as server

    info = server.status(state)
    if info is None:
        raise UserError("no embedded server is running; start one with `shotbench server start`.")
    emu = serve(info.endpoint_url, (info.access_key, info.secret_key), info.region, period, grace)
    for k, v in emu.env().items():
        print(f"export {k}={v}", flush=True)
    out = (state or state_dir()) / STATE_FILE
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    while not done.wait(1.0):
        out.write_text(json.dumps({**emu.env(), **emu.role.status()}) + "\n")
    emu.close()
    return 0

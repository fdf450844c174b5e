"""HTTP-level faults on purpose: a fault-injecting reverse proxy in front of the embedded server.

toxiproxy breaks connections; a real S3 also answers `503 SlowDown` under load, `500
InternalError` now and then, and a response can end before its Content-Length. This proxy
answers a seeded share of requests with those and forwards everything else as it came: the
request headers the client sent, Host included (SigV4 signs it), and bodies streamed in pieces,
never held whole. What it injected, per kind, goes to a JSON file the run reads between cases.

The decision is a pure function of (seed, method, path, query, Range, how many times that same
request came before), so a run repeats its faults whatever the order of concurrent requests,
and a retry of a faulted request gets a fresh decision, as it would from S3.

Run as `python -m shotbench.store.faultproxy` (see `start`); plain HTTP only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from shotbench.childargs import parse_or_exit
from shotbench.diskspace import atomic_write
from shotbench.errors import UserError
from shotbench.processes import daemon, free_port, terminate
from shotbench.units import MiB

MODULE = "shotbench.store.faultproxy"
STATS_FILE = "faultproxy.json"
START_TIMEOUT = 10.0
CHUNK = MiB  # bytes read from the server per piece of a streamed body

# kind -> (HTTP status, S3 error code, S3 message): the answers real S3 gives.
ERRORS: dict[str, tuple[int, str, str]] = {
    "slowdown": (503, "SlowDown", "Please reduce your request rate."),
    "internal": (500, "InternalError", "We encountered an internal error. Please try again."),
}
TRUNCATED = "truncated"  # the server's response, cut after half its declared Content-Length
KINDS = (*ERRORS, TRUNCATED)
# GETs the proxy answered itself with an error: they never reach the server, so its access log
# misses them; the reliability table adds them back to count the GETs on the wire.
ANSWERED_GETS = "answered-gets"
LABELS = {"slowdown": "503 SlowDown", "internal": "500 InternalError", TRUNCATED: "truncated"}
# Not forwarded: they describe one hop (the proxy re-frames bodies itself).
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "expect"}
)


@dataclass(frozen=True)
class HttpFaults:
    """A share of requests per fault kind; `methods` limits which requests may be hit (empty: any,
    as S3's SlowDown can hit any request)."""

    rates: tuple[tuple[str, float], ...]  # (kind, share of requests), kinds from KINDS
    methods: tuple[str, ...] = ()
    seed: int = 1

    def __post_init__(self) -> None:
        unknown = [k for k, _ in self.rates if k not in KINDS]
        total = sum(r for _, r in self.rates)
        if unknown or total > 1 or any(r < 0 for _, r in self.rates):
            raise ValueError(f"fault rates must be kinds of {KINDS} with shares summing to at most 1: {self.rates}")

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> HttpFaults:
        d = json.loads(text)
        return cls(tuple((k, float(r)) for k, r in d["rates"]), tuple(d.get("methods", ())), int(d.get("seed", 1)))


def request_key(method: str, raw_path: str, range_header: str) -> str:
    """What makes two requests the same request: presigned-URL query parameters (dates,
    signatures) are left out so that a repeated request is recognised."""
    path, _, query = raw_path.partition("?")
    params = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if not k.lower().startswith("x-amz-")]
    return f"{method.upper()} {path}?{urlencode(sorted(params))} {range_header}"


def draw(seed: int, key: str, occurrence: int) -> float:
    """A uniform number in [0, 1) fixed by seed, request and occurrence."""
    digest = hashlib.sha256(f"{seed}\0{key}\0{occurrence}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def choose(faults: HttpFaults, u: float) -> str | None:
    """The kind whose slice of [0, 1) holds `u` (raising one rate only adds faults), or None."""
    edge = 0.0
    for kind, rate in faults.rates:
        edge += rate
        if u < edge:
            return kind
    return None


@dataclass
class Decider:
    """Per-request decisions of one proxy process; counts what it injected."""

    faults: HttpFaults
    seen: Counter[bytes] = field(default_factory=Counter)  # times each request came before
    requests: int = 0
    injected: Counter[str] = field(default_factory=Counter)
    answered_gets: int = 0

    def decide(self, method: str, raw_path: str, range_header: str) -> str | None:
        self.requests += 1
        if self.faults.methods and method.upper() not in self.faults.methods:
            return None
        key = request_key(method, raw_path, range_header)
        short = hashlib.blake2b(key.encode(), digest_size=8).digest()  # a long run's memory stays small
        n = self.seen[short]
        self.seen[short] += 1
        return choose(self.faults, draw(self.faults.seed, key, n))

    def stats(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "injected": {k: self.injected[k] for k in KINDS},
            ANSWERED_GETS: self.answered_gets,
            "seed": self.faults.seed,
            "pid": os.getpid(),
        }


def error_body(code: str, message: str, resource: str, request_id: str) -> bytes:
    """The XML error document S3 sends with an error status."""
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
        f"<Resource>{resource}</Resource><RequestId>{request_id}</RequestId></Error>"
    ).encode()


def write_stats(path: Path, stats: dict[str, Any]) -> None:
    atomic_write(path, json.dumps(stats) + "\n")


def read_stats(path: Path) -> dict[str, int]:
    """Faults injected so far, per kind (zeros if the file is not there yet)."""
    try:
        injected = json.loads(path.read_text()).get("injected", {})
    except (OSError, ValueError):
        injected = {}
    return {k: int(injected.get(k, 0)) for k in KINDS}


def read_counts(path: Path) -> dict[str, int]:
    """`read_stats` plus the GETs the proxy answered itself (`ANSWERED_GETS`)."""
    try:
        answered = int(json.loads(path.read_text()).get(ANSWERED_GETS, 0))
    except (OSError, ValueError, TypeError):
        answered = 0
    return {**read_stats(path), ANSWERED_GETS: answered}


def describe(counts: dict[str, int]) -> str:
    """`37 × 503 SlowDown, 12 truncated`; `none` when nothing was injected."""
    parts = [
        f"{n} truncated" if k == TRUNCATED else f"{n} × {LABELS[k]}" for k, n in counts.items() if n and k in KINDS
    ]
    return ", ".join(parts) or "none"


def _forwarded(raw_headers: Any) -> list[tuple[str, str]]:
    """Headers as received, minus the hop-by-hop ones; names and values unchanged."""
    out = []
    for name, value in raw_headers:
        n, v = name.decode("latin-1"), value.decode("latin-1")
        if n.lower() not in HOP_BY_HOP:
            out.append((n, v))
    return out


def _make_app(decider: Decider, upstream: str, stats_path: Path) -> Any:
    import aiohttp
    from aiohttp import web
    from multidict import CIMultiDict
    from yarl import URL

    session: aiohttp.ClientSession | None = None

    def injected(kind: str, method: str) -> None:
        decider.injected[kind] += 1
        decider.answered_gets += int(kind in ERRORS and method == "GET")
        write_stats(stats_path, decider.stats())  # before the answer leaves: a case never misses its own

    async def handle(request: web.Request) -> web.StreamResponse:
        kind = decider.decide(request.method, request.raw_path, request.headers.get("Range", ""))
        if kind in ERRORS:
            status, code, message = ERRORS[kind]
            request_id = hashlib.sha256(f"{decider.requests}{request.raw_path}".encode()).hexdigest()[:16].upper()
            body = error_body(code, message, request.path, request_id)
            injected(kind, request.method)
            head = request.method == "HEAD"
            return web.Response(
                status=status,
                body=None if head else body,
                headers={
                    "Content-Type": "application/xml",
                    "x-amz-request-id": request_id,
                    **({"Content-Length": str(len(body))} if head else {}),
                },
            )
        try:
            return await forward(request, kind)
        except (TimeoutError, aiohttp.ClientError, OSError):
            # The server is gone (or the client): the client's connection ends without an
            # answer, as it would without the proxy, never with an HTTP error the health check
            # between cases would take for a live server.
            if request.transport is not None:
                request.transport.abort()
            raise asyncio.CancelledError from None

    async def forward(request: web.Request, kind: str | None) -> web.StreamResponse:
        assert session is not None
        async with session.request(
            request.method,
            URL(upstream + request.raw_path, encoded=True),
            headers=_forwarded(request.raw_headers),
            data=request.content if request.body_exists else None,
            allow_redirects=False,
            skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent", "Content-Type"),
        ) as up:
            resp = web.StreamResponse(
                status=up.status, reason=up.reason, headers=CIMultiDict(_forwarded(up.raw_headers))
            )
            length = up.content_length
            cut = (
                length // 2
                if kind == TRUNCATED and request.method != "HEAD" and up.status in (200, 206) and length and length > 1
                else None
            )
            await resp.prepare(request)
            sent = 0
            while request.method != "HEAD":
                piece = await up.content.readany()
                if not piece:
                    break
                if cut is not None and sent + len(piece) >= cut:
                    await resp.write(piece[: cut - sent])
                    injected(TRUNCATED, request.method)
                    resp.force_close()  # the connection ends here, short of the declared length
                    return resp
                await resp.write(piece)
                sent += len(piece)
            await resp.write_eof()
            return resp

    async def on_startup(_app: web.Application) -> None:
        nonlocal session
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=None),
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            read_bufsize=CHUNK,
            trust_env=False,
        )

    async def on_cleanup(_app: web.Application) -> None:
        if session is not None:
            await session.close()

    app = web.Application(client_max_size=1 << 40)
    app.router.add_route("*", "/{tail:.*}", handle)
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app


async def serve(port: int, upstream_port: int, faults: HttpFaults, stats_path: Path) -> None:
    """Serve until SIGTERM or SIGINT; the stats file is written once listening, on each
    injected fault, every second while requests come, and at the end."""
    from aiohttp import web

    decider = Decider(faults)
    runner = web.AppRunner(
        _make_app(decider, f"http://127.0.0.1:{upstream_port}", stats_path), access_log=None, handle_signals=False
    )
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, reuse_address=True).start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    write_stats(stats_path, decider.stats())
    written = decider.requests
    try:
        while not stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)
            if decider.requests != written:
                write_stats(stats_path, decider.stats())
                written = decider.requests
    finally:
        write_stats(stats_path, decider.stats())
        await runner.cleanup()


@dataclass(frozen=True)
class FaultProxyInfo:
    pid: int
    port: int
    stats: Path


def start(state: Path, upstream_port: int, faults: HttpFaults, private: bool = False) -> FaultProxyInfo:
    """The proxy as its own process in front of 127.0.0.1:upstream_port, once it listens."""
    stats = state / STATS_FILE
    with contextlib.suppress(FileNotFoundError):
        stats.unlink()
    port = free_port()
    cmd = [sys.executable, "-m", MODULE, "--port", str(port), "--upstream-port", str(upstream_port)]
    proc = daemon([*cmd, "--stats", str(stats), "--faults", faults.to_json()], state / "faultproxy.log", private)
    deadline = time.monotonic() + START_TIMEOUT
    while not stats.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            terminate(proc.pid, MODULE)
            raise UserError(f"the fault-injecting proxy did not start; see {state / 'faultproxy.log'} and retry.")
        time.sleep(0.05)
    return FaultProxyInfo(proc.pid, port, stats)


@dataclass(frozen=True)
class ProxyArgs:
    """How `start` launches the proxy process."""

    port: int
    upstream_port: int
    stats: str  # JSON file: requests seen, faults injected per kind
    faults: str  # HttpFaults as JSON


def main(argv: list[str] | None = None) -> int:
    args = parse_or_exit(ProxyArgs, argv, MODULE)
    asyncio.run(serve(args.port, args.upstream_port, HttpFaults.from_json(args.faults), Path(args.stats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Named network profiles: toxiproxy between the client and the embedded server.

A loopback server answers in well under a millisecond, which hides exactly what differs
between ROS3 builds on real S3: how many round trips they make. Adding S3-like first-byte
latency (and, cross-region, a per-connection bandwidth cap) brings that back. The kernel
here has no `tc netem`, so the delay is added by a user-space TCP proxy instead.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from shotbench.errors import UserError
from shotbench.processes import daemon, free_port, terminate
from shotbench.store.faultproxy import HttpFaults

UPSTREAM_STREAM_KBPS = 90_000
"""One S3 GET stream from EC2 in the bucket's region moves about 90 MB/s (toxiproxy's unit, as
the other profiles use it). No aggregate cap is added: toxiproxy is per connection, and on this
machine the proxy and its cores saturate well below the instance's 10 Gbit/s NIC."""


@dataclass(frozen=True)
class Profile:
    """Delay added to every server-to-client chunk, with uniform jitter, and an optional rate cap."""

    latency_ms: int
    jitter_ms: int
    bandwidth_kbps: int | None = None  # KiB/s per connection (toxiproxy's unit)
    description: str = ""
    faults: tuple[
        tuple[str, float, tuple[tuple[str, int], ...]], ...
    ] = ()  # (toxic type, share of connections, attributes)
    http: HttpFaults | None = None  # HTTP-level faults, answered by store/faultproxy.py in front of the server


NETWORK_PROFILES: dict[str, Profile | None] = {
    "none": None,
    "s3-same-region": Profile(20, 5, None, "~20 ms first byte, like S3 from EC2 in the bucket's region"),
    "s3-cross-region": Profile(70, 15, 40_000, "~70 ms first byte and ~40 MB/s per connection, like another region"),
    # Latency alone (no bandwidth cap), for the direction ablation's latency knob.
    "latency-70ms": Profile(70, 15, None, "~70 ms first byte, no bandwidth cap (the latency of s3-cross-region alone)"),
    # A fixed delay and nothing else: the added time per response is the same in every round, so
    # two of them on two backends' paths differ by a known amount (docs/guides/decisions.md, a slowed
    # twin). 20 ms is same-region S3's first byte without its jitter.
    "latency-20ms": Profile(20, 0, None, "20 ms added to every response, no jitter, no bandwidth cap"),
    "latency-50ms": Profile(50, 0, None, "50 ms added to every response, no jitter, no bandwidth cap"),
    # Bandwidth alone (no added latency), for the direction ablation's bandwidth knob: one S3
    # stream in-region (~90 MB/s) and the cross-region cap (~40 MB/s).
    "bandwidth-90": Profile(0, 0, UPSTREAM_STREAM_KBPS, "~90 MB/s per connection, no added latency"),
    "bandwidth-40": Profile(0, 0, 40_000, "~40 MB/s per connection, no added latency"),
    # The upstream study's conditions: an m5.4xlarge reading S3 in its own region. The bench profile
    # of the same name adds its page buffer (264 MB) and its worker counts scaled to this machine.
    "upstream-ec2": Profile(
        15,
        5,
        UPSTREAM_STREAM_KBPS,
        "~15 ms first byte and ~90 MB/s per connection, like one S3 stream from EC2 in-region",
    ),
}
# Faults on purpose (`bench --faults NAME`): connection-level toxics at a share of connections.
# reset_peer: the connection is reset after `timeout` ms; limit_data: closed after `bytes`;
# slicer: responses cut into small, delayed pieces; timeout: data stops (a stall) for `timeout` ms.
FAULTS: dict[str, Profile] = {
    "flaky-5pc": Profile(
        0,
        0,
        None,
        "5 % of connections reset mid-response, 5 % cut after 1 MB",
        (
            ("reset_peer", 0.05, (("timeout", 50),)),
            ("limit_data", 0.05, (("bytes", 1_000_000),)),
        ),
    ),
    "throttled": Profile(
        20,
        5,
        20_000,
        "~20 ms latency, ~20 MB/s per connection, responses in 1 KiB slices",
        (("slicer", 1.0, (("average_size", 1024), ("size_variation", 512), ("delay", 50))),),
    ),
    "stalls-2pc": Profile(
        0, 0, None, "2 % of connections stop moving data for 120 s", (("timeout", 0.02, (("timeout", 120_000),)),)
    ),
    # HTTP-level: the fault-injecting proxy answers a seeded share of requests (any method: S3's
    # SlowDown can hit any request) as S3 does under trouble; truncated: a GET's body ends at half
    # its Content-Length.
    "http-0pc": Profile(
        0,
        0,
        None,
        "the fault proxy injecting nothing: the fault-free baseline of the HTTP profiles (same proxy hop)",
        http=HttpFaults(()),
    ),
    "slowdown-5pc": Profile(
        0,
        0,
        None,
        "5 % of requests answered 503 SlowDown (S3's XML error body)",
        http=HttpFaults((("slowdown", 0.05),)),
    ),
    "http-flaky-5pc": Profile(
        0,
        0,
        None,
        "5 % of requests fail: 2 % 503 SlowDown, 1 % 500 InternalError, "
        "2 % of GET bodies cut at half their Content-Length",
        http=HttpFaults((("slowdown", 0.02), ("internal", 0.01), ("truncated", 0.02))),
    ),
    # `make bench-chaos`: every kind at once; stalls of 15 s so that the quick matrix ends in minutes
    "chaos-5pc": Profile(
        0,
        0,
        None,
        "5 % of connections reset, 5 % stalled 15 s, 5 % of requests answered 503 SlowDown",
        (
            ("reset_peer", 0.05, (("timeout", 50),)),
            ("timeout", 0.05, (("timeout", 15_000),)),
        ),
        http=HttpFaults((("slowdown", 0.05),)),
    ),
}
NETWORK_PROFILES.update(FAULTS)
SEED = 1  # toxiproxy's jitter is pseudo-random; a fixed seed repeats the same delays


def check_network(name: str) -> Profile | None:
    """The profile of this name (None for `none`), or one sentence naming the choices."""
    if name not in NETWORK_PROFILES:
        raise UserError(f"unknown network profile '{name}'; choose one of: {', '.join(NETWORK_PROFILES)}.")
    return NETWORK_PROFILES[name]


def check_tls(name: str, tls: bool) -> None:
    """The fault-injecting proxy speaks plain HTTP only."""
    profile = NETWORK_PROFILES.get(name)
    if tls and profile is not None and profile.http is not None:
        raise UserError(f"'{name}' injects HTTP errors through a plain-HTTP proxy; drop --tls to use it.")


@dataclass(frozen=True)
class ProxyInfo:
    pid: int
    api_port: int
    listen_port: int


def _api(port: int, path: str, body: dict | None = None, method: str | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=data,
        method=method or ("POST" if data else "GET"),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=3) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else {}


def toxics(profile: Profile) -> list[dict]:
    """The toxiproxy toxics that make up a profile (downstream: responses are delayed)."""
    out = (
        [
            {
                "name": "latency",
                "type": "latency",
                "stream": "downstream",
                "toxicity": 1.0,
                "attributes": {"latency": profile.latency_ms, "jitter": profile.jitter_ms},
            }
        ]
        if profile.latency_ms or profile.jitter_ms
        else []
    )
    if profile.bandwidth_kbps:
        out.append(
            {
                "name": "bandwidth",
                "type": "bandwidth",
                "stream": "downstream",
                "toxicity": 1.0,
                "attributes": {"rate": profile.bandwidth_kbps},
            }
        )
    for kind, share, attributes in profile.faults:
        out.append(
            {"name": kind, "type": kind, "stream": "downstream", "toxicity": share, "attributes": dict(attributes)}
        )
    return out


def start_proxy(state: Path, upstream_port: int, profile: Profile, private: bool = False) -> ProxyInfo:
    """Run toxiproxy with one proxy `s3` in front of 127.0.0.1:upstream_port and the profile's toxics."""
    from shotbench import gobuild as tools

    binary = tools.toxiproxy_server()
    api_port, listen_port = free_port(), free_port()
    config = state / "toxiproxy.json"
    config.write_text(
        json.dumps(
            [
                {
                    "name": "s3",
                    "listen": f"127.0.0.1:{listen_port}",
                    "upstream": f"127.0.0.1:{upstream_port}",
                    "enabled": True,
                }
            ]
        )
    )
    proc = daemon(
        [str(binary), "-host", "127.0.0.1", "-port", str(api_port), "-config", str(config), "-seed", str(SEED)],
        state / "toxiproxy.log",
        private,
        {**os.environ, "LOG_LEVEL": "warn"},
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            if "s3" in _api(api_port, "/proxies"):
                break
        except (OSError, urllib.error.URLError, ValueError):
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            terminate(proc.pid, "toxiproxy")
            raise UserError(f"toxiproxy did not start; see {state / 'toxiproxy.log'} and retry.")
        time.sleep(0.05)
    for toxic in toxics(profile):
        _api(api_port, "/proxies/s3/toxics", toxic)
    return ProxyInfo(pid=proc.pid, api_port=api_port, listen_port=listen_port)

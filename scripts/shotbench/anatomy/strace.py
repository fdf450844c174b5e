"""Phases of an open from an strace log: CA bundle loads, connect, HEAD, first GET, the rest.

The probe (`shotbench.anatomy.probe`) marks phase boundaries with failed stats of
/.shotbench-mark/<label>; `strace -f -ttt -T -yy -s 16` gives every call a time, its
duration and, for descriptors, the file or TCP peer. Strace slows every system call, so
these are shares and counts of one traced run; the clean timings come from an untraced run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TRACE = "openat,newfstatat,connect,sendto,recvfrom,sendmsg,recvmsg,read,write,close"
_LINE = re.compile(r"^(?P<pid>\d+)\s+(?P<ts>\d+\.\d+)\s+(?P<call>\w+)\((?P<args>.*)$")
_MARK = re.compile(r'"/\.shotbench-mark/(?P<label>[^"]+)"')
_CA = re.compile(r"(/etc/ssl/|/etc/pki/|\.crt\b|\.pem\b)")


@dataclass(frozen=True)
class Call:
    ts: float
    call: str
    args: str

    def result(self) -> int | None:
        m = re.search(r"\)\s+=\s+(-?\d+)", self.args)
        return int(m.group(1)) if m else None


def parse(text: str) -> list[Call]:
    """Calls in time order (an interrupted call counts at its start; its resumption is dropped)."""
    out = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and "resumed>" not in line:
            out.append(Call(float(m["ts"]), m["call"], m["args"]))
    out.sort(key=lambda c: c.ts)
    return out


def segments(calls: list[Call]) -> dict[str, tuple[float, float]]:
    """label -> (start, end): from a mark to the next mark."""
    marks = [(c.ts, m["label"]) for c in calls if (m := _MARK.search(c.args))]
    return {label: (ts, marks[i + 1][0] if i + 1 < len(marks) else ts) for i, (ts, label) in enumerate(marks)}


def _peer_port(args: str) -> int | None:
    m = re.search(r"<TCP(?:v6)?:\[[^\]]*->[^\]]*:(\d+)\]>", args) or re.search(r"htons\((\d+)\)", args)
    return int(m.group(1)) if m else None


def open_phases(calls: list[Call], start: float, end: float, port: int) -> dict[str, Any]:
    """Milliseconds of one open by phase (None where the phase did not happen in it)."""
    inside = [c for c in calls if start <= c.ts < end]
    ca_ms, ca_loads, opened = 0.0, 0, {}
    for c in inside:
        if (
            c.call == "openat"
            and "O_DIRECTORY" not in c.args
            and _CA.search(c.args.split(",", 2)[1] if "," in c.args else "")
        ):
            fd = c.result()
            if fd is not None and fd >= 0:
                opened[fd] = c.ts
                ca_loads += 1
        elif c.call == "close":
            m = re.match(r"(\d+)<([^>]*)>", c.args)
            if m and int(m.group(1)) in opened and _CA.search(m.group(2)):
                ca_ms += (c.ts - opened.pop(int(m.group(1)))) * 1000
    net = [c for c in inside if _peer_port(c.args) == port]
    connect = next((c.ts for c in net if c.call == "connect"), None)
    sends = [c for c in net if c.call in ("sendto", "sendmsg", "write") and (c.result() or 0) > 0]
    recvs = [c for c in net if c.call in ("recvfrom", "recvmsg", "read") and (c.result() or 0) > 0]

    def first_recv_after(ts: float) -> float | None:
        return next((r.ts for r in recvs if r.ts >= ts), None)

    def ms(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else round((b - a) * 1000, 3)

    head = next((s for s in sends if '"HEAD ' in s.args), None)
    get = next((s for s in sends if '"GET ' in s.args), None)
    first_sent = sends[0].ts if sends else None
    get_end = None
    if get is not None:
        later = [s.ts for s in sends if s.ts > get.ts]
        stop = later[0] if later else end
        done = [r.ts for r in recvs if get.ts <= r.ts < stop]
        get_end = done[-1] if done else None
    last_net = max((c.ts for c in net), default=None)
    return {
        "total_ms": ms(start, end),
        "ca_bundle_ms": round(ca_ms, 3),
        "ca_bundle_loads": ca_loads,
        "before_connect_ms": ms(start, connect if connect is not None else first_sent),
        "connect_ms": ms(connect, first_sent),
        "head_ms": ms(head.ts if head else None, first_recv_after(head.ts) if head else None),
        "first_get_ms": ms(get.ts if get else None, get_end),
        "after_last_request_ms": ms(last_net, end),
        "requests": len([s for s in sends if re.search(r'"(GET|HEAD) ', s.args)]),
    }


def phases(log: Path, port: int, opens: int) -> list[dict[str, Any]]:
    """Per open (index order): phases of the open itself ('open-i' to 'read-i')."""
    calls = parse(log.read_text(errors="replace"))
    seg = segments(calls)
    out = []
    for i in range(opens):
        a, b = seg.get(f"open-{i}", (None, None)), seg.get(f"read-{i}", (None, None))
        if a[0] is None or b[0] is None:
            break
        out.append(open_phases(calls, a[0], b[0], port))
    return out

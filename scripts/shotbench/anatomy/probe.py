"""Runs inside a backend's environment: open one object N times and time each phase.

`python -m shotbench.anatomy.probe --backend ros3-2.0 --bucket B --key K --size N --opens 10`
prints one JSON object. Before each phase it stats a path under /.shotbench-mark/ that does
not exist: under strace those failed calls split the system-call log by phase.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from shotbench.childargs import parse_or_exit

MARK_DIR = "/.shotbench-mark"


def mark(label: str) -> None:
    """A no-op system call that names a phase boundary in an strace log."""
    try:
        os.stat(f"{MARK_DIR}/{label}")
    except OSError:
        pass


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def probe(backend_name: str, bucket: str, key: str, size: int, opens: int) -> dict[str, Any]:
    """Cold and warm opens of one object, then one open reused across every signal."""
    perf = time.perf_counter
    mark("setup")
    t0 = perf()
    from shotbench.backends import registry
    from shotbench.backends.base import ReadSettings, Source, s3_from_environ

    backend = registry.get(backend_name)(Source("s3", bucket=bucket), ReadSettings())
    backend.setup(s3_from_environ())
    from shotbench.hdf5.shotfile import read_signal, shot_ids, signal_names

    setup_ms = _ms(perf() - t0)
    meter = backend.meter
    meter.drain()
    rows: list[dict[str, Any]] = []
    names: list[str] = []
    shot = ""
    for i in range(opens):
        mark(f"open-{i}")
        o0 = perf()
        fh = backend.open(key, size)
        o1 = perf()
        mark(f"read-{i}")
        if not names:
            shot = shot_ids(fh)[0]
            names = list(signal_names(fh, shot))
        read_signal(fh, shot, names[i % len(names)])
        r1 = perf()
        mark(f"close-{i}")
        meter.before_close()
        a1 = perf()
        fh.close()
        c1 = perf()
        counts = meter.drain()
        rows.append(
            {
                "open_ms": _ms(o1 - o0),
                "first_read_ms": _ms(r1 - o1),
                "close_ms": _ms(c1 - a1),
                "account_ms": _ms(a1 - r1),
                "gets": counts.gets,
                "heads": counts.heads,
                "bytes": counts.bytes,
            }
        )
    mark("reuse")
    u0 = perf()
    with backend.open(key, size) as fh:
        for name in names:
            read_signal(fh, shot, name)
        meter.before_close()
    reuse_ms = _ms(perf() - u0)
    reuse = meter.drain()
    mark("end")
    return {
        "backend": backend_name,
        "setup_ms": setup_ms,
        "opens": rows,
        "signals": len(names),
        "reuse": {"ms": reuse_ms, "gets": reuse.gets, "heads": reuse.heads, "bytes": reuse.bytes},
        "meter": getattr(meter, "method", ""),
        "pid": os.getpid(),
    }


@dataclass(frozen=True)
class ProbeArgs:
    """What `shotbench anatomy` asks of one probe process."""

    backend: str
    bucket: str
    key: str
    size: int
    opens: int = 10


def main(argv: list[str] | None = None) -> int:
    args = parse_or_exit(ProbeArgs, argv, "python -m shotbench.anatomy.probe")
    out = probe(args.backend, args.bucket, args.key, args.size, args.opens)
    print(json.dumps(out), file=sys.__stdout__, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

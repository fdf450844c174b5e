"""Pre-flight: can each backend open an object whose key has this shape?

An S3 key with spaces or non-ASCII characters must be URI-encoded in the request. libhdf5 2.0's
ROS3 does not encode it (2.2 does), so on such keys every one of its tasks failed after minutes of
retries. Before the run, when a key needs encoding, each S3 backend that reads HDF5 opens that one
object in its own environment (`backends/readcheck.py`, bounded). A backend that fails where another
opens the same object cannot open keys of this shape: it is *unsupported for this data*, with the
reason, and left out of the run (unsupported is not failed). When every backend fails, the object
itself is at fault and the cases will say so. Plain keys need no check and cost nothing.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shotbench.backends import registry
from shotbench.backends.base import Source
from shotbench.backends.launch import readcheck_command
from shotbench.plan.matrix import ShotFile

# characters a key may hold without URI-encoding (RFC 3986 unreserved, plus the path separator)
PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/")
PROBE_TIMEOUT = 60.0  # seconds for all backends together (environments start in parallel)


@dataclass(frozen=True)
class Verdict:
    """What one backend did with the probe object: `error` is empty when it opened it."""

    backend: str
    error: str


def describe_encoded(key: str) -> str:
    """The characters of `key` that need URI-encoding, named as they are ('%', a space,
    non-ASCII), so the reason a backend is left out names the real cause."""
    odd = list(dict.fromkeys(c for c in key if c not in PLAIN))
    named = ["a space" if c == " " else f"non-ASCII {c!r}" if not c.isascii() else repr(c) for c in odd[:5]]
    more = f" and {len(odd) - 5} more" if len(odd) > 5 else ""
    return f"{'the character' if len(odd) == 1 else 'the characters'} {', '.join(named)}{more}"


def needs_encoding(key: str) -> bool:
    return any(c not in PLAIN for c in key)


def probe_file(files: list[ShotFile]) -> ShotFile | None:
    """The first file whose key needs URI-encoding, or None when every key is plain."""
    return next((f for f in sorted(files, key=lambda f: f.key) if needs_encoding(f.key)), None)


def open_one(
    backends: list[str],
    source: Source,
    s3: Any,
    f: ShotFile,
    options: dict[str, dict[str, Any]],
    timeout: float = PROBE_TIMEOUT,
) -> list[Verdict]:
    """Each backend opens `f` and reads its first signal, all at once, within `timeout`."""
    request = {
        "source": source.to_dict(),
        "scales": False,
        "files": [{"key": f.key, "size": f.size, "shot": f.shot, "signals": list(f.signals[:1])}],
    }
    procs: dict[str, subprocess.Popen[str]] = {}
    with tempfile.TemporaryDirectory(prefix="shotbench-keycheck-") as scratch:
        for name in backends:
            cmd, env = readcheck_command([name], s3, Path(scratch))
            ask = Path(scratch) / f"{name}.json"
            ask.write_text(json.dumps({**request, "backend": name, "options": options.get(name, {})}))
            with open(ask) as stdin:
                procs[name] = subprocess.Popen(
                    cmd,
                    stdin=stdin,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=env,
                    start_new_session=True,
                )
        deadline = time.monotonic() + timeout
        out = []
        for name, proc in procs.items():
            try:
                stdout, stderr = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                out.append(Verdict(name, f"did not open it within {timeout:.0f} s"))
                continue
            out.append(Verdict(name, _error(stdout, stderr, proc.returncode)))
    return out


def _error(stdout: str, stderr: str, rc: int) -> str:
    """'' when every cell of readcheck's answer is a digest, else the first error."""
    try:
        cells = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else {}
    except (ValueError, IndexError):
        cells = {}
    if rc != 0 or not cells:
        last = (stderr.strip().splitlines() or [f"exit status {rc}"])[-1]
        return " ".join(last.split())[:300]
    bad = [v for v in cells.values() if len(v) != 64 or not all(c in "0123456789abcdef" for c in v)]
    return " ".join(bad[0].split())[:300] if bad else ""


def unsupported_keys(
    backends: list[str], source: Source, s3: Any, files: list[ShotFile], options: dict[str, dict[str, Any]]
) -> dict[str, str]:
    """{backend: reason} for the S3 backends that cannot open this data's keys (see module doc)."""
    f = probe_file(files)
    if f is None or source.kind != "s3":
        return {}
    names = [b for b in backends if registry.get(b).needs_s3 and registry.get(b).reads_hdf5]
    verdicts = open_one(names, source, s3, f, options)
    if not any(v.error == "" for v in verdicts):
        return {}  # nobody opens it: the object, not the key, is at fault; the cases say so
    return {
        v.backend: f"it cannot open keys like {f.key!r} ({describe_encoded(f.key)}, which the request "
        f"must URI-encode) that other backends open: {v.error}"
        for v in verdicts
        if v.error
    }

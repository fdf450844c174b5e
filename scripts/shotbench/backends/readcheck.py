"""Does a reader return exactly h5py's bytes? One digest per signal (its data and its scales).

`python -m shotbench.backends.readcheck` runs in the reader's own environment, reads a JSON request
on stdin ({"backend", "source", "options", "files": [{"key", "size", "shot", "signals"}],
optional "scales": false to digest signal data only)
and prints {"<key>/<signal>": "<sha256>" or "unsupported: …" / error text}. The tests
compare these digests with the ones h5py computes from the same files on local disk.

A request may instead name several backends of one environment, {"backends": [{"backend",
"options"}, …], "source", "files"}: it prints {"<backend>": {digests} or {"": error text}}, so a
run checks every backend of an environment in one process (`shotbench.bench.bytecheck`).
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any


def digest(arrays: list[Any]) -> str:
    """sha256 over each array's dtype and raw bytes, in order.

    The shape is left out on purpose: h5coro hands back a scalar dataset as a one-element
    array (same bytes, shape (1,) for h5py's ())."""
    h = hashlib.sha256()
    for a in arrays:
        h.update(f"{a.dtype.str}:{a.nbytes}:".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def check(backend: Any, files: list[dict[str, Any]], scales: bool = True) -> dict[str, str]:
    """Digest per `<key>/<signal>`; `scales=False` digests the signal's own data only."""
    from shotbench.backends.readers import h5py_arrays
    from shotbench.backends.unsupported import error_cell, translate

    arrays = getattr(backend, "arrays", None) or h5py_arrays
    reader = getattr(backend, "reader", "") or backend.name
    out: dict[str, str] = {}
    for f in files:
        try:
            backend.build_index(f["key"], int(f["size"]))
            fh = backend.open(f["key"], int(f["size"]))
        except Exception as exc:  # noqa: BLE001 - reported per signal
            for name in f["signals"]:
                out[f"{f['key']}/{name}"] = error_cell(f["key"], translate(reader, exc))
            continue
        with fh:
            for name in f["signals"]:
                try:
                    out[f"{f['key']}/{name}"] = digest(arrays(fh, f["shot"], name, scales))
                except Exception as exc:  # noqa: BLE001 - a reader's failure on one signal is that signal's result
                    out[f"{f['key']}/{name}"] = error_cell(f["key"], translate(reader, exc))
    return out


def main() -> int:
    from shotbench.backends import registry
    from shotbench.backends.base import ReadSettings, Source, s3_from_environ

    req = json.loads(sys.stdin.read())
    scales = bool(req.get("scales", True))
    if "backends" not in req:
        backend = registry.get(req["backend"])(Source(**req["source"]), ReadSettings(options=req.get("options") or {}))
        backend.setup(s3_from_environ())
        print(json.dumps(check(backend, req["files"], scales)))
        return 0
    out: dict[str, dict[str, str]] = {}
    for item in req["backends"]:
        try:
            backend = registry.get(item["backend"])(
                Source(**req["source"]), ReadSettings(options=item.get("options") or {})
            )
            backend.setup(s3_from_environ())
            out[item["backend"]] = check(backend, req["files"], scales)
        except Exception as exc:  # noqa: BLE001 - one backend that cannot start does not hide the others
            out[item["backend"]] = {"": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

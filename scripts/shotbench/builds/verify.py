"""Prove a build end to end: read a shot file through ROS3 and compare it with the local copy.

Run inside a build's environment, `python -m shotbench.builds.verify --bucket B --key K
--local FILE`, with the S3 settings in the standard AWS_* variables (see `ros3.ros3_env`).
Prints one JSON object; exit 0 when every dataset (signals and dimension scales) came back
byte for byte, 1 on a mismatch, 2 when opening failed (the JSON then carries the sentence).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from shotbench.childargs import parse_or_exit
from shotbench.errors import UserError


def _datasets(f) -> list[str]:
    import h5py

    names: list[str] = []
    f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
    return sorted(names)


def compare(remote, local) -> dict:
    """Every dataset of `local` read in full from `remote` and compared byte for byte."""
    from shotbench.hdf5 import shotfile

    mismatches: list[str] = []
    names = _datasets(local)
    if _datasets(remote) != names:
        mismatches.append("dataset list differs")
    payload = 0
    scales = 0
    for name in names:
        a, b = remote[name], local[name]
        if a.is_scale:
            scales += 1
        data_a, data_b = a[()], b[()]
        if a.dtype != b.dtype or a.shape != b.shape or data_a.tobytes() != data_b.tobytes():
            mismatches.append(name)
        payload += int(data_a.nbytes)
    signal_reads = 0
    for shot in shotfile.shot_ids(remote):
        for signal in shotfile.signal_names(remote, shot):
            got = shotfile.read_signal(remote, shot, signal)
            want = shotfile.read_signal(local, shot, signal)
            signal_reads += 1
            if got != want:
                mismatches.append(f"read_signal {shot}/{signal}: {got} != {want}")
    return {
        "datasets": len(names),
        "scales": scales,
        "signals": signal_reads,
        "bytes": payload,
        "mismatches": mismatches,
    }


@dataclass(frozen=True)
class VerifyArgs:
    """What the build step asks of this check."""

    bucket: str
    key: str
    local: Path | None = None  # local copy to compare with
    page_buf: int = 0  # page buffer size in bytes (paged files)
    precheck: bool = False


def main(argv: list[str] | None = None) -> int:
    args = parse_or_exit(VerifyArgs, argv, "python -m shotbench.builds.verify")

    import h5py

    from shotbench.hdf5 import ros3open as ros3
    from shotbench.store.s3 import S3Config

    cfg = S3Config.from_env()
    out: dict = {
        "hdf5_version": h5py.version.hdf5_version,
        "h5py_version": h5py.version.version,
        "url": ros3.ros3_url(cfg, args.bucket, args.key),
    }
    started = time.monotonic()
    try:
        remote = ros3.open_ros3(cfg, args.bucket, args.key, page_buf_size=args.page_buf, precheck=args.precheck)
    except UserError as exc:
        out.update(error=str(exc), seconds=round(time.monotonic() - started, 2))
        print(json.dumps(out))
        return 2
    out["open_seconds"] = round(time.monotonic() - started, 3)
    with remote:
        out["driver"] = remote.driver
        if args.local:
            with h5py.File(args.local, "r") as local:
                out.update(compare(remote, local))
        if args.page_buf:
            stats = remote.id.get_page_buffering_stats()
            out["page_buffer"] = {
                part: {field: int(value) for field, value in getattr(stats, part)._asdict().items()}
                for part in ("meta", "raw")
            }
    out["seconds"] = round(time.monotonic() - started, 2)
    print(json.dumps(out))
    return 1 if out.get("mismatches") else 0


if __name__ == "__main__":
    sys.exit(main())

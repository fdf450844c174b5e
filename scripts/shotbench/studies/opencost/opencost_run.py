"""What one ROS3 open sends and costs, per libhdf5, by the minimal reproducer.

`scripts/ros3-open-cost.py` is the reproducer a libhdf5 maintainer can run alone: it opens one
object N times through h5py's ROS3 driver behind a counting relay and prints, per open, the
time, the new connections, the bytes received and every request line with its Range. This
module runs it in each libhdf5 environment against a private embedded server over plain http
(request lines are readable only there), for a 1 MB and a 16 MB object, with and without a page
buffer, open alone and open + one read of the largest signal. Its rows go to `<run>/open-cost.csv`; the
`ros3-open-cost` notebook reads them next to the direction ablation of the same run folder.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import subprocess
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from shotbench.builds.environments import ensure_python
from shotbench.errors import UserError
from shotbench.paths import data_dir, repo_root, state_dir
from shotbench.units import MiB

REPRODUCER = "ros3-open-cost.py"
CSV = "open-cost.csv"
ENVS = ("hdf5-1.14", "hdf5-2.0", "h5py-s3", "hdf5-2.2")
OBJECTS = {"1MB": (1_000_000, 500_000), "16MB": (16_000_000, 8_000_000)}  # name: (file size, page size)
PAGE_BUFFERS = (0, 256 * MiB)
BUCKET = "shotbench"
PREFIX = "open-cost/"


@dataclass(frozen=True)
class OpenCost:
    """One reproducer call: medians over its opens after the first (the first pays for imports)."""

    env: str
    libhdf5: str
    object: str
    object_bytes: int
    page_buffer: int
    open_only: bool
    opens: int
    open_ms: float
    open_ms_low: float  # the 95 % BCa interval of the median open time over the warm opens
    open_ms_high: float
    read_ms: float
    connections_per_open: float
    mb_per_open: float
    gets_per_open: float
    heads_per_open: float
    requests: str  # one warm open's requests, e.g. "HEAD whole; GET bytes=0-7999999"


def from_report(env: str, obj: str, size: int, report: dict) -> OpenCost:
    """The reproducer's JSON, reduced to medians; request lines counted per open."""
    from shotbench.stats import median_interval

    opens = report["opens"]
    warm = opens[1:] or opens
    open_ms = median_interval([float(o["open_ms"]) for o in warm])

    def per_open(method: str) -> float:
        counts = sorted(sum(1 for r in o["requests"] if r.startswith(method + " ")) for o in warm)
        return float(counts[len(counts) // 2])

    return OpenCost(
        env=env,
        libhdf5=str(report["libhdf5"]),
        object=obj,
        object_bytes=size,
        page_buffer=int(report["page_buffer"]),
        open_only=bool(report.get("open_only", False)),
        opens=len(opens),
        open_ms=open_ms.estimate,
        open_ms_low=round(open_ms.low, 2),
        open_ms_high=round(open_ms.high, 2),
        read_ms=float(report.get("median_read_ms", 0.0)),
        connections_per_open=float(report["median_connections_per_open"]),
        mb_per_open=float(report["median_MB_per_open"]),
        gets_per_open=per_open("GET"),
        heads_per_open=per_open("HEAD"),
        requests="; ".join(warm[len(warm) // 2]["requests"]),
    )


def _files() -> Path:
    """The two objects, made once (synthetic shot files of the same format as the benchmark's)."""
    from shotbench.hdf5.synthesis import make_dataset

    root = data_dir() / "open-cost"
    for name, (size, page) in OBJECTS.items():
        made = make_dataset(root / name, shots=1, file_size=size, page_size=page, seed=0)
        if len(made) != 1:
            raise UserError(f"{root / name} should hold one shot file; remove the folder and rerun.")
    return root


def measure(folder: Path, opens: int = 12, timeout: float = 300.0) -> Path:
    """Run the reproducer for every environment, object, page buffer and open-only setting;
    rows already in `<folder>/open-cost.csv` are kept (an interrupted run resumes)."""
    from shotbench.store.embedded import embedded_server
    from shotbench.store.s3 import parse_location
    from shotbench.store.staging import stage

    out = folder / CSV
    done = {(r["env"], r["object"], int(r["page_buffer"]), r["open_only"] == "True") for r in _rows(out)}
    if all((e, n, pb, o) in done for e in ENVS for n in OBJECTS for pb in PAGE_BUFFERS for o in (True, False)):
        return out  # every row is measured: no files, server or environments needed
    root = _files()
    script = repo_root() / "scripts" / REPRODUCER
    with contextlib.ExitStack() as stack:
        info = stack.enter_context(embedded_server(state_dir() / "open-cost-server", tls=False))
        s3 = info.s3config()
        for name in OBJECTS:
            stage(root / name, parse_location(f"s3://{BUCKET}/{PREFIX}{name}/"), s3, progress=False, create_bucket=True)
        env = {
            **os.environ,
            "AWS_ACCESS_KEY_ID": s3.access_key or "",
            "AWS_SECRET_ACCESS_KEY": s3.secret_key or "",
            "AWS_REGION": s3.region,
            "AWS_EC2_METADATA_DISABLED": "true",
        }
        for env_name in ENVS:
            python = ensure_python(env_name)
            for name, (size, _page) in OBJECTS.items():
                key = PREFIX + name + "/" + next((root / name).glob("*.h5")).name
                for pb in PAGE_BUFFERS:
                    for open_only in (True, False):
                        if (env_name, name, pb, open_only) in done:
                            continue
                        cmd = [str(python), str(script), "--endpoint", s3.endpoint_url or "", "--bucket", BUCKET]
                        cmd += ["--key", key, "--opens", str(opens), "--page-buffer", str(pb), "--region", s3.region]
                        cmd += ["--open-only"] if open_only else []
                        print(
                            f"[open-cost] {env_name} {name} pb={pb // MiB} MiB {'open' if open_only else 'open+read'}",
                            flush=True,
                        )
                        try:
                            proc = subprocess.run(
                                cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False
                            )
                        except subprocess.TimeoutExpired:
                            raise UserError(
                                f"the open-cost reproducer in {env_name} took longer than {timeout:.0f} s; "
                                "rerun to resume, or check the server."
                            ) from None
                        if proc.returncode != 0:
                            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                            raise UserError(f"the open-cost reproducer failed in {env_name}: {tail}")
                        _append(out, from_report(env_name, name, size, json.loads(proc.stdout)))
    return out


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _append(path: Path, row: OpenCost) -> None:
    """One row as soon as it is measured (nothing measured is lost)."""
    new = not path.is_file()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[x.name for x in fields(OpenCost)])
        if new:
            w.writeheader()
        w.writerow(asdict(row))

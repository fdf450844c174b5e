"""Where and when a result was measured: run ids, UTC stamps, the machine, the commit.

Every benchmark (reading, transfer, harness) records the same facts in its run.json, so they
are written once here.
"""

from __future__ import annotations

import contextlib
import os
import platform
import secrets
import subprocess
import time
import urllib.request
from datetime import UTC, datetime
from typing import Any

from shotbench.paths import repo_root


def new_run_id() -> str:
    """Sortable and unique: UTC second plus 6 random hex digits."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(3)}"


def utc_iso(t: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if t is None else t, UTC).isoformat(timespec="seconds")


def machine_info() -> dict[str, Any]:
    mem = 0
    with contextlib.suppress(Exception):
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "cpus": os.cpu_count(),
        "memory_bytes": mem,
        "instance_type": ec2_instance_type(),
        "platform": platform.platform(),
    }


def imds_base() -> str | None:
    """Where the EC2 metadata service answers: `AWS_EC2_METADATA_SERVICE_ENDPOINT` (what botocore
    and aws-c-auth honour too), else the link-local address; None when it is disabled."""
    if os.environ.get("AWS_EC2_METADATA_DISABLED", "").lower() == "true":
        return None
    return (os.environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT") or "http://169.254.169.254").rstrip("/")


def imds_get(path: str, timeout: float = 0.3) -> str:
    """One metadata path (IMDSv2 token first, as `HttpTokens=required` demands), or '' off EC2."""
    base = imds_base()
    if base is None:
        return ""
    headers = {}
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via an HTTP proxy
    with contextlib.suppress(Exception):
        req = urllib.request.Request(
            f"{base}/latest/api/token", method="PUT", headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"}
        )
        with opener.open(req, timeout=timeout) as r:
            headers["X-aws-ec2-metadata-token"] = r.read().decode()
    with contextlib.suppress(Exception):
        req = urllib.request.Request(f"{base}/latest/{path}", headers=headers)
        with opener.open(req, timeout=timeout) as r:
            return r.read().decode().strip()
    return ""


def ec2_instance_type(timeout: float = 0.3) -> str:
    """The EC2 instance type from IMDS, or '' when not on EC2."""
    return imds_get("meta-data/instance-type", timeout)


def git_commit() -> str:
    """HEAD of the checkout, '+dirty' when tracked files changed; '' outside a git checkout."""
    try:
        root = repo_root()
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        return f"{sha}{'+dirty' if dirty and sha else ''}"
    except Exception:  # noqa: BLE001 - not a git checkout (e.g. an installed wheel)
        return ""

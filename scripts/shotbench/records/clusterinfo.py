"""run.json's `cluster` (written by `read/pools.py` for a run on a user's Dask cluster) in one line,
for the run's log and the report's "where and on what" table."""

from __future__ import annotations

from typing import Any


def summary(cluster: dict[str, Any] | None) -> str:
    """The scheduler, its version, and workers per host and environment; a run without `cluster`
    ran on a LocalCluster per environment, started by the run itself."""
    if not cluster:
        return "one LocalCluster per environment, on this machine"
    hosts = cluster.get("hosts") or {}
    per_host = "; ".join(
        f"{host}: " + ", ".join(f"{n} {env}" for env, n in envs.items()) for host, envs in hosts.items()
    )
    return (
        f"Dask cluster at {cluster.get('scheduler')} (distributed {cluster.get('scheduler_version') or '?'}), "
        f"{len(hosts)} host{'s' if len(hosts) != 1 else ''}: {per_host or 'no workers'}"
    )

"""Worker pools on a cluster the run did not start: one pool per backend environment.

On one machine each environment's driver starts a LocalCluster from its own Python, so a case's
workers are always the backend's build. On a user's cluster (`bench --scheduler ADDR`) every
driver reaches the same scheduler, and the workers run whatever Python they were started with.

A worker says which environment it serves with a Dask worker resource, `shotbench-env-<env>=1`
(`dask worker --resources`). Resources, rather than one scheduler per environment or a naming
scheme, because they are what Dask itself uses to restrict where a task may run: one scheduler
address for the whole run (one dashboard, one place to start workers), worker names stay free
for the user, and every worker's tag is visible in `scheduler_info()` to the check below.

At prepare, before any case, each backend's pool is checked against the backend's build (the
libhdf5 version and ROS3 flag its own environment's driver reports); a missing pool or a worker of
another build is refused in one sentence that names the worker and the command that starts the
right one. This module is imported by the orchestrator and the drivers: nothing heavy.
"""

from __future__ import annotations

import shlex
from collections import Counter
from typing import Any

from shotbench.errors import UserError, one_line
from shotbench.records.clusterinfo import summary as summary  # run.json's cluster in one line

RESOURCE_PREFIX = "shotbench-env-"


def resource(env_key: str) -> str:
    """The Dask worker resource that marks a worker of `env_key`'s pool."""
    return f"{RESOURCE_PREFIX}{env_key}"


def env_of(resources: dict[str, Any] | None) -> str | None:
    """The environment a worker serves, from its resources (None: it serves none of ours)."""
    for name in resources or {}:
        if name.startswith(RESOURCE_PREFIX):
            return name[len(RESOURCE_PREFIX) :]
    return None


def worker_command(python: str, scheduler: str, env_key: str, nworkers: int = 1) -> list[str]:
    """The command that starts `nworkers` Dask workers of `env_key`'s pool on this host.

    One thread per worker and no memory limit: what the measured LocalClusters use. The worker
    listens on the address it reaches the scheduler from, so each host's workers carry its own."""
    return [
        python,
        "-m",
        "distributed.cli.dask_worker",
        scheduler,
        "--nworkers",
        str(nworkers),
        "--nthreads",
        "1",
        "--memory-limit",
        "0",
        "--no-dashboard",
        "--resources",
        f"{resource(env_key)}=1",
    ]


def start_hint(scheduler: str, env_key: str) -> str:
    """The command a user runs on a host to add a worker to `env_key`'s pool."""
    return f"shotbench cluster workers --scheduler {shlex.quote(scheduler)} --env {env_key} --run"


def _build(versions: dict[str, str]) -> str:
    ros3 = "with ROS3" if str(versions.get("ros3")) == "True" else "without ROS3"
    return f"libhdf5 {versions.get('hdf5') or '(no h5py)'} {ros3}"


def check_pool(
    backend: str, env_key: str, build: dict[str, str], scheduler: str, workers: list[dict[str, str]]
) -> None:
    """Refuse a pool that cannot run `backend` as its build: missing, or a worker of another build.

    `build` is what the backend's own environment reports (`worker.versions()` in its driver);
    `workers` what each worker of the pool reports, with its `address`."""
    if not workers:
        raise UserError(
            f"the Dask cluster at {scheduler} has no worker in the {env_key} pool that the {backend} backend "
            f"runs on; start them on a host with `{start_hint(scheduler, env_key)}`."
        )
    for w in workers:
        if (w.get("hdf5"), str(w.get("ros3"))) != (build.get("hdf5"), str(build.get("ros3"))):
            raise UserError(
                f"the Dask worker {w.get('address')} in the {env_key} pool runs {_build(w)}, where the {backend} "
                f"backend's build is {_build(build)}; stop it and start the right one on its host with "
                f"`{start_hint(scheduler, env_key)}`."
            )


def describe(scheduler: str, scheduler_version: str, pools: dict[str, list[dict[str, str]]]) -> dict[str, Any]:
    """run.json's `cluster`: the scheduler, its version, and workers per host and environment."""
    hosts: dict[str, Counter[str]] = {}
    for env_key, workers in sorted(pools.items()):
        for w in workers:
            hosts.setdefault(w.get("host", ""), Counter())[env_key] += 1
    return {
        "scheduler": scheduler,
        "scheduler_version": scheduler_version,
        "hosts": {h: dict(sorted(c.items())) for h, c in sorted(hosts.items())},
        "workers": {
            env_key: [{k: w.get(k, "") for k in ("address", "host", "hdf5", "ros3")} for w in workers]
            for env_key, workers in sorted(pools.items())
        },
    }


POOL_TIMEOUT = 60.0  # seconds for one environment's driver to list its pool and ask each worker


def verify(drivers: Any, backends: list[str], scheduler: str) -> dict[str, Any]:
    """Every backend's pool checked against its build, before any case (refused in one sentence);
    returns run.json's description of the cluster. `drivers` is the run's `read.drivers.Drivers`,
    each environment's driver already started (its hello carries the build's versions)."""
    from shotbench.backends import registry
    from shotbench.bench.protocol import Pool

    found: dict[str, list[dict[str, str]]] = {}
    version = ""
    for name in backends:
        drv = drivers.for_backend(registry.get(name))
        if drv.name not in found:
            try:
                reply = drv.request(Pool(), timeout=POOL_TIMEOUT)
            except RuntimeError as exc:  # the driver's error (DriverError), or its timeout
                raise UserError(
                    f"the {drv.name} environment could not list its workers on the Dask cluster at {scheduler} "
                    f"({one_line(exc)}); check that its workers can be reached from this host, or drop --scheduler."
                ) from None
            found[drv.name] = reply.workers
            version = version or reply.scheduler_version
        check_pool(name, drv.name, drv.versions, scheduler, found[drv.name])
    return describe(scheduler, version, found)

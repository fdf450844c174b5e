"""Worker pools per build on a cluster the run did not start (`bench --scheduler`).

Real parts throughout: a real `dask scheduler`, workers started from the libhdf5 environments with
the commands `shotbench cluster workers` prints, the embedded S3 server, and `shotbench bench`
as a user runs it. The first test is the issue's "done when": a cluster whose workers all come
from the 2.0 environment is refused before any case, in one sentence naming the missing pool.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shotbench.bench import pools
from shotbench.bench.casesettings import CASE_VARS, CaseSettings, case_settings, in_case, submit
from shotbench.errors import UserError
from shotbench.store.s3 import without_s3_settings
from support.clusterhosts import local_scheduler, wait_for_pools

SECRET = "not-a-real-secret-but-secret-here-0123456789"


# ------------------------------------------------------------------ the check, as data


BUILD_114 = {"hdf5": "1.14.6", "ros3": "True"}


def test_a_missing_pool_is_one_sentence_naming_the_pool_and_the_command() -> None:
    with pytest.raises(UserError) as err:
        pools.check_pool("ros3-1.14", "hdf5-1.14", BUILD_114, "tcp://10.0.0.5:8786", [])
    text = str(err.value)
    assert text.count(". ") == 0 and text.endswith(".")
    assert "no worker in the hdf5-1.14 pool" in text and "ros3-1.14" in text
    assert "`shotbench cluster workers --scheduler tcp://10.0.0.5:8786 --env hdf5-1.14 --run`" in text


@pytest.mark.parametrize(
    ("worker", "says"),
    [
        ({"hdf5": "2.0.0", "ros3": "True"}, "runs libhdf5 2.0.0 with ROS3"),
        ({"hdf5": "1.14.6", "ros3": "False"}, "runs libhdf5 1.14.6 without ROS3"),
        ({"h5py_error": "no h5py"}, "runs libhdf5 (no h5py) without ROS3"),
    ],
)
def test_a_worker_of_another_build_is_named(worker: dict[str, str], says: str) -> None:
    good = {"address": "tcp://10.0.0.7:4001", **BUILD_114}
    bad = {"address": "tcp://10.0.0.8:4002", **worker}
    with pytest.raises(UserError) as err:
        pools.check_pool("ros3-1.14", "hdf5-1.14", BUILD_114, "tcp://10.0.0.5:8786", [good, bad])
    text = str(err.value)
    assert text.startswith("the Dask worker tcp://10.0.0.8:4002 in the hdf5-1.14 pool " + says)
    assert "build is libhdf5 1.14.6 with ROS3" in text and "--env hdf5-1.14 --run" in text
    pools.check_pool("ros3-1.14", "hdf5-1.14", BUILD_114, "tcp://10.0.0.5:8786", [good])  # the right one passes


def test_the_cluster_is_described_per_host_and_environment() -> None:
    found = {
        "hdf5-1.14": [{"address": "tcp://10.1.0.2:1", "host": "10.1.0.2", **BUILD_114}],
        "main": [{"address": f"tcp://10.1.0.{h}:{p}", "host": f"10.1.0.{h}"} for h in (2, 3) for p in (1, 2)],
    }
    cluster = pools.describe("tcp://10.1.0.2:8786", "2026.8.0", found)
    assert cluster["hosts"] == {"10.1.0.2": {"hdf5-1.14": 1, "main": 2}, "10.1.0.3": {"main": 2}}
    assert pools.summary(cluster) == (
        "Dask cluster at tcp://10.1.0.2:8786 (distributed 2026.8.0), 2 hosts: "
        "10.1.0.2: 1 hdf5-1.14, 2 main; 10.1.0.3: 2 main"
    )


# ------------------------------------------------------------------ case settings


def test_case_settings_name_no_value_and_replace_the_workers_own(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {CASE_VARS: "AWS_SECRET_ACCESS_KEY,AWS_REGION", "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "r1"}
    settings = case_settings(env)
    assert settings.names() == ["AWS_REGION", "AWS_SECRET_ACCESS_KEY"]
    assert SECRET not in repr(settings) and SECRET not in str(settings)
    monkeypatch.setenv("AWS_PROFILE", "the-hosts-own")  # a worker's host may have its own
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    assert in_case(settings, os.environ.get, "AWS_SECRET_ACCESS_KEY") == SECRET
    assert "AWS_PROFILE" not in os.environ
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")


def _raises(_: str) -> None:
    raise ValueError("the task failed")


@pytest.mark.slow
def test_settings_reach_a_worker_started_without_them_and_never_its_log(caplog: pytest.LogCaptureFixture) -> None:
    """A worker process started with no AWS variables reads with the case's; a failed task's
    arguments, which Dask logs, show no value."""
    from distributed import Client, LocalCluster

    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("AWS_")}
    try:
        with (
            LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
            Client(cluster, set_as_default=False) as client,
        ):
            worker = next(iter(client.scheduler_info()["workers"]))
            settings = CaseSettings({"AWS_SECRET_ACCESS_KEY": SECRET})
            got = submit(client, settings, os.getenv, "AWS_SECRET_ACCESS_KEY", worker=worker).result(timeout=60)
            assert got == SECRET
            assert client.run(os.getenv, "AWS_SECRET_ACCESS_KEY")[worker] == SECRET  # set in that process
    finally:
        os.environ.update(saved)
    # the worker's log of a failed task (older Dask printed its arguments), made in this process
    with caplog.at_level(logging.WARNING), LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as cluster, Client(cluster, set_as_default=False) as client:  # fmt: skip
        worker = next(iter(client.scheduler_info()["workers"]))
        fut = submit(client, CaseSettings({"AWS_SESSION_TOKEN": SECRET}), _raises, "x", worker=worker)
        with pytest.raises(ValueError):
            fut.result(timeout=60)
    os.environ.pop("AWS_SESSION_TOKEN", None)
    assert "the task failed" in caplog.text  # the worker logged the failed task
    assert SECRET not in caplog.text


# ------------------------------------------------------------------ `shotbench cluster workers`


def _cli(*args: str, envs: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = without_s3_settings()
    if envs is not None:
        env["SHOTBENCH_ENVS"] = str(envs)
    return subprocess.run(
        [sys.executable, "-m", "shotbench.cli", "cluster", "workers", *args],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def test_cluster_workers_prints_one_command_per_environment(tmp_path: Path) -> None:
    # an environment folder of its own, so the test needs no build and passes on a fresh clone
    envs = tmp_path / ".envs"
    args = ("--scheduler", "tcp://10.0.0.5:8786", "--env", "main", "hdf5-1.14", "--nworkers", "3")
    unbuilt = _cli(*args, envs=envs)
    assert unbuilt.returncode != 0 and len(unbuilt.stderr.strip().splitlines()) == 1
    assert "the environment for hdf5-1.14 is not built; run `make envs`" in unbuilt.stderr
    (envs / "hdf5-1.14" / "bin").mkdir(parents=True)
    (envs / "hdf5-1.14" / "bin" / "python").symlink_to(sys.executable)
    proc = _cli(*args, envs=envs)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if not line.startswith("#")]
    assert len(lines) == 2
    assert lines[0].startswith(sys.executable) and "--resources shotbench-env-main=1" in lines[0]
    assert ".envs/hdf5-1.14/bin/python -m distributed.cli.dask_worker tcp://10.0.0.5:8786" in lines[1]
    assert "--nworkers 3 --nthreads 1" in lines[1] and "shotbench-env-hdf5-1.14=1" in lines[1]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--scheduler", "nonsense"], "give it as tcp://HOST:PORT."),
        (["--scheduler", "tcp://h:1", "--env", "hdf5-9.9"], "unknown build 'hdf5-9.9'"),
        (["--scheduler", "tcp://h:1", "--env", "main", "--nworkers", "0"], "give a whole number from 1 to 1024"),
    ],
)
def test_cluster_workers_refuses_bad_input_in_one_sentence(args: list[str], says: str) -> None:
    proc = _cli(*args)
    assert proc.returncode != 0 and says in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


# ------------------------------------------------------------------ bench on a cluster of only 2.0 workers


def _bench(tmp_path: Path, s3env: dict[str, str], data: str, scheduler: str) -> subprocess.CompletedProcess[str]:
    env = without_s3_settings()
    env.update(s3env, SHOTBENCH_STATE=str(tmp_path / "state"))
    cmd = [
        sys.executable, "-m", "shotbench.cli", "bench", "--data", data, "--backends", "ros3-1.14", "ros3-2.0",
        "--workers", "1", "--trials", "1", "--page-buffers", "0", "--scheduler", scheduler,
        "--runs-dir", str(tmp_path / "runs"),
    ]  # fmt: skip
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_cluster_of_only_2_0_workers_is_refused_before_any_case(
    tmp_path: Path, staged_shots, request: pytest.FixtureRequest
) -> None:
    from shotbench.builds.environments import env_python

    loc, cfg, _ = staged_shots
    data = f"s3://{loc.bucket}/{loc.prefix}"
    procs, addr = local_scheduler(request, tmp_path / "logs")
    py20 = str(env_python("hdf5-2.0"))
    procs.start(pools.worker_command(py20, addr, "hdf5-2.0", 1), "pool-hdf5-2.0")
    wait_for_pools(addr, {"hdf5-2.0": 1})

    proc = _bench(tmp_path, cfg.env_vars(), data, addr)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (
        f"shotbench: the Dask cluster at {addr} has no worker in the hdf5-1.14 pool that the ros3-1.14 backend "
        f"runs on; start them on a host with `shotbench cluster workers --scheduler {addr} --env hdf5-1.14 --run`."
    ), proc.stderr[-2000:]
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())  # no case, no folder

    # a worker of the 2.0 environment that claims the 1.14 pool is named, with what it runs
    procs.start(pools.worker_command(py20, addr, "hdf5-1.14", 1), "posing-as-hdf5-1.14")
    info = wait_for_pools(addr, {"hdf5-1.14": 1, "hdf5-2.0": 1})
    posing = next(a for a, w in info.items() if pools.env_of(w.get("resources")) == "hdf5-1.14")
    proc = _bench(tmp_path, cfg.env_vars(), data, addr)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"shotbench: the Dask worker {posing} in the hdf5-1.14 pool runs libhdf5 2.0"), last
    assert "where the ros3-1.14 backend's build is libhdf5 1.14" in last and "--env hdf5-1.14 --run`." in last
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())
    assert cfg.secret_key not in proc.stderr + proc.stdout


def test_the_report_names_the_cluster_or_says_the_run_started_its_own() -> None:
    from shotbench.records.clusterinfo import summary

    assert summary(None) == "one LocalCluster per environment, on this machine"
    cluster = pools.describe("tcp://10.1.0.2:8786", "2026.8.0", {"main": [{"address": "a", "host": "10.1.0.3"}]})
    assert summary(cluster) == "Dask cluster at tcp://10.1.0.2:8786 (distributed 2026.8.0), 1 host: 10.1.0.3: 1 main"


def test_a_marked_environment_gives_its_workers_the_pool_resource(tmp_path: Path) -> None:
    """What Dask itself reads from `<prefix>/etc/dask` at start-up: the pool's resource."""
    import dask.config

    from shotbench.bench.poolstart import mark

    path = mark(tmp_path / "env", "hdf5-1.14")
    assert path == tmp_path / "env" / "etc" / "dask" / "shotbench-pool.yaml"
    config = dask.config.collect(paths=[str(path.parent)], env={})
    resources = config["distributed"]["worker"]["resources"]
    assert pools.env_of(resources) == "hdf5-1.14" and resources == {"shotbench-env-hdf5-1.14": 1}


@pytest.mark.slow
def test_a_plain_dask_worker_from_a_marked_environment_joins_its_pool(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """What SSHCluster or dask-cloudprovider start: `dask worker ADDR` from the environment's Python,
    no shotbench arguments. The mark is removed again whatever happens."""
    from shotbench.bench.poolstart import mark
    from shotbench.builds.environments import env_python

    python = env_python("hdf5-2.0")
    marked = python.parent.parent / "etc" / "dask" / "shotbench-pool.yaml"
    ours = marked.with_name(marked.name + ".by-test")  # this test wrote the mark: a killed run's leftover
    if ours.exists():
        marked.unlink(missing_ok=True)
        ours.unlink()
    if marked.exists():
        pytest.skip(f"{marked} is there already (`shotbench cluster mark` was run); not touching it")
    ours.parent.mkdir(parents=True, exist_ok=True)
    ours.touch()
    # finalizers run last first: the mark goes, then its note
    request.addfinalizer(lambda: ours.unlink(missing_ok=True))
    request.addfinalizer(lambda: marked.unlink(missing_ok=True))
    assert mark(python.parent.parent, "hdf5-2.0") == marked
    procs, addr = local_scheduler(request, tmp_path / "logs")
    procs.start([str(python), "-m", "distributed.cli.dask_worker", addr, "--nthreads", "1"], "plain-worker")
    info = wait_for_pools(addr, {"hdf5-2.0": 1}, timeout=120)
    assert [pools.env_of(w.get("resources")) for w in info.values()] == ["hdf5-2.0"]

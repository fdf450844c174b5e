"""Two hosts on this machine: network namespaces, each with a worker pool per environment.

Host A (its own namespace) runs the Dask scheduler and one worker of each of the main, hdf5-1.14
and hdf5-2.0 pools; host B the same pools. The S3 server (versitygw) listens on the bridge's
address; the orchestrator, in the root namespace, reaches the scheduler and the server over those
addresses only, never loopback. `shotbench bench --scheduler` runs ros3-1.14, ros3-2.0 and fsspec
across both hosts with every byte verified; during a case, one of host B's workers is killed.

Needs root and `ip netns` (CI has both); skipped with the reason where the namespaces cannot be
made. Namespaces, links and processes are removed by finalizers, however the test ends.
"""

from __future__ import annotations

import csv
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from shotbench.bench import pools
from shotbench.store.s3 import S3Config, parse_location, without_s3_settings
from support.clusterhosts import Procs, scheduler_cmd, wait_for_pools

pytestmark = pytest.mark.slow

ENVS = ("main", "hdf5-1.14", "hdf5-2.0")
BACKENDS = {"ros3-1.14": "hdf5-1.14", "ros3-2.0": "hdf5-2.0", "fsspec": "main"}
BENCH_TIMEOUT = 900


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


class Hosts:
    """A bridge in the root namespace (the orchestrator's and the server's address, .1) and two
    namespaces on it (.2, .3), each joined by a veth pair."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        n = 1 + os.getpid() % 200
        self.net = f"10.231.{n}"
        self.bridge = f"sbbr{n}"
        self.names = {"a": f"sbhA{n}", "b": f"sbhB{n}"}
        self.addr = {"root": f"{self.net}.1", "a": f"{self.net}.2", "b": f"{self.net}.3"}
        self._undo: list[list[str]] = []
        request.addfinalizer(self.remove)

    def _must(self, *args: str, undo: list[str] | None = None) -> None:
        done = _ip(*args)
        if done.returncode != 0:
            raise RuntimeError(f"`ip {' '.join(args)}`: {done.stderr.strip()}")
        if undo:
            self._undo.append(undo)

    def make(self) -> None:
        self._must("link", "add", self.bridge, "type", "bridge", undo=["link", "del", self.bridge])
        self._must("addr", "add", f"{self.addr['root']}/24", "dev", self.bridge)
        self._must("link", "set", self.bridge, "up")
        for h, ns in self.names.items():
            veth, peer = f"{ns}v", f"{ns}p"
            self._must("netns", "add", ns, undo=["netns", "del", ns])
            self._must("link", "add", veth, "type", "veth", "peer", "name", peer, undo=["link", "del", veth])
            self._must("link", "set", peer, "netns", ns)
            self._must("link", "set", veth, "master", self.bridge, "up")
            self._must("-n", ns, "addr", "add", f"{self.addr[h]}/24", "dev", peer)
            self._must("-n", ns, "link", "set", peer, "up")
            self._must("-n", ns, "link", "set", "lo", "up")

    def on(self, h: str) -> list[str]:
        return ["ip", "netns", "exec", self.names[h]]

    def remove(self) -> None:
        for undo in reversed(self._undo):
            _ip(*undo)
        self._undo.clear()


@pytest.fixture
def hosts(request: pytest.FixtureRequest) -> Hosts:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2's `ip` (CI has both)")
    h = Hosts(request)
    try:
        h.make()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot make the two hosts' network namespaces here: {exc}")
    return h


def _server(procs: Procs, hosts: Hosts, root: Path) -> S3Config:
    """versitygw on the bridge's address (credentials through its environment, never argv)."""
    from shotbench.gobuild import versitygw
    from shotbench.store.embedded import DEFAULT_REGION, HEALTH_PATH
    from support.clusterhosts import free_port

    port = free_port(hosts.addr["root"])
    access, secret = "sb" + secrets.token_hex(6), secrets.token_hex(20)
    (root / "data").mkdir(parents=True)
    env = {**without_s3_settings(), "ROOT_ACCESS_KEY_ID": access, "ROOT_SECRET_ACCESS_KEY": secret}
    cmd = [str(versitygw()), "--port", f"{hosts.addr['root']}:{port}", "--region", DEFAULT_REGION, "--quiet",
           "--health", HEALTH_PATH, "posix", str(root / "data")]  # fmt: skip
    log = open(root / "versitygw.log", "ab")
    procs.procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
    log.close()
    import urllib.request

    url = f"http://{hosts.addr['root']}:{port}{HEALTH_PATH}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                break
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"versitygw did not answer at {url} within 60 s") from None
            time.sleep(0.3)
    return S3Config(endpoint_url=f"http://{hosts.addr['root']}:{port}", region=DEFAULT_REGION,
                    access_key=access, secret_key=secret)  # fmt: skip


class Killer(threading.Thread):
    """Watches the scheduler; the first time a case's task is on one of host B's workers, kills
    that worker process (SIGKILL: no goodbye to the scheduler or the driver)."""

    def __init__(self, scheduler: str, host_b: str) -> None:
        super().__init__(daemon=True)
        self.scheduler, self.host_b = scheduler, host_b
        self.stop = threading.Event()
        self.killed: tuple[str, str, float] | None = None  # (worker address, its pool, when)
        self.error = ""

    def run(self) -> None:
        from distributed import Client

        try:
            with Client(self.scheduler, timeout=30, set_as_default=False) as client:
                while not self.stop.is_set() and self.killed is None:
                    for worker, keys in client.processing().items():
                        if worker.split("://")[1].startswith(self.host_b + ":") and any(
                            str(k).startswith("run_task_released-") for k in keys
                        ):
                            info = client.scheduler_info()["workers"].get(worker, {})
                            pid = client.run(os.getpid, workers=[worker])[worker]
                            os.kill(pid, signal.SIGKILL)
                            self.killed = (worker, pools.env_of(info.get("resources")) or "", time.time())
                            break
                    time.sleep(0.02)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.error = f"{type(exc).__name__}: {exc}"


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_two_hosts_run_each_build_on_its_own_pool(
    hosts: Hosts, tmp_path: Path, shot_dir: Path, request: pytest.FixtureRequest
) -> None:
    from shotbench.builds.environments import env_python
    from shotbench.store.staging import stage

    procs = Procs(tmp_path / "logs")
    request.addfinalizer(procs.end)
    s3 = _server(procs, hosts, tmp_path / "server")
    s3.boto3_client().create_bucket(Bucket="hosts")
    loc = parse_location("s3://hosts/shots/")
    stage(shot_dir, loc, s3, jobs=2, progress=False)

    scheduler = f"tcp://{hosts.addr['a']}:8786"
    procs.start(scheduler_cmd(hosts.addr["a"], 8786), "scheduler", prefix=hosts.on("a"))
    pythons = {e: sys.executable if e == "main" else str(env_python(e)) for e in ENVS}
    for h in ("a", "b"):  # the commands `shotbench cluster workers` prints, run on each host, no AWS_*
        for e in ENVS:
            procs.start(
                pools.worker_command(pythons[e], scheduler, e, 1), f"pool-{h}-{e}", prefix=hosts.on(h),
                env=without_s3_settings(),
            )  # fmt: skip
    info = wait_for_pools(scheduler, dict.fromkeys(ENVS, 2))
    assert {w["host"] for w in info.values()} == {hosts.addr["a"], hosts.addr["b"]}

    config = tmp_path / "bench.toml"
    config.write_text(
        'page_buffers = [0]\nworkers = [1, 2]\ntrials = 1\nshots_files = 1\nbudget_minutes = 0\nverify = true\nmodes = ["shots"]\n'
        f"backends = {json.dumps(list(BACKENDS))}\n"
    )
    env = without_s3_settings()
    env.update(s3.env_vars(), SHOTBENCH_STATE=str(tmp_path / "state"), AWS_EC2_METADATA_DISABLED="true")
    runs = tmp_path / "runs"
    cmd = [
        sys.executable, "-m", "shotbench.cli", "bench", "--config", str(config), "--data", "s3://hosts/shots/",
        "--local-copies", str(shot_dir), "--scheduler", scheduler, "--runs-dir", str(runs),
    ]  # fmt: skip
    killer = Killer(scheduler, hosts.addr["b"])
    killer.start()
    request.addfinalizer(killer.stop.set)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=BENCH_TIMEOUT)
    killer.stop.set()
    killer.join(timeout=30)
    assert not killer.error, killer.error
    (run,) = [p for p in runs.iterdir() if p.is_dir()]
    meta = json.loads((run / "run.json").read_text())
    cases = _csv(run / "cases.csv")
    workers = _csv(run / "workers.csv")
    assert s3.secret_key not in proc.stdout + proc.stderr + (run / "run.json").read_text()

    # the cluster is named: both hosts, one worker of each environment on each, the scheduler's version
    cluster = meta["cluster"]
    assert cluster["scheduler"] == scheduler and cluster["scheduler_version"]
    assert cluster["hosts"] == {hosts.addr[h]: dict.fromkeys(sorted(ENVS), 1) for h in ("a", "b")}

    # every case ran, each row's libhdf5 is its backend's build, every byte verified
    assert killer.killed is not None, f"no case's task was seen on host B; bench said: {proc.stderr[-2000:]}"
    dead, dead_env, _ = killer.killed
    assert len(cases) == len(BACKENDS) * 2, proc.stderr[-3000:]
    failed = [c for c in cases if c["status"] != "ok"]
    assert len(failed) == 1, [(c["backend"], c["status"], c["first-error"]) for c in failed]
    assert BACKENDS[failed[0]["backend"]] == dead_env
    reason = failed[0]["first-error"]
    assert dead in reason or "closed their connection without rows" in reason, reason  # names what happened
    print(f"killed {dead} ({dead_env}); its case: {reason}")
    builds = {b: meta["versions"]["backends"][b]["hdf5"] for b in BACKENDS}
    assert builds["ros3-1.14"].startswith("1.14") and builds["ros3-2.0"].startswith("2.0")
    ok_ids = {c["case-id"] for c in cases if c["status"] == "ok"}
    measured = [w for w in workers if w["case-id"] in ok_ids]
    assert measured and {w["backend"] for w in measured} == set(BACKENDS)
    for w in measured:
        assert w["hdf5-version"] == builds[w["backend"]], w
        assert w["verified"] == "yes", w
    hosts_used = {w["dask-worker"].split("://")[1].rsplit(":", 1)[0] for w in measured}
    assert hosts_used == {hosts.addr["a"], hosts.addr["b"]}
    assert not any(w["dask-worker"].startswith("tcp://127.") for w in workers)
    # the run went on after the failed case and ended within bounds (a lost worker is not a hang)
    assert time.monotonic() - t0 < BENCH_TIMEOUT
    took = _epoch(failed[0]["finished"]) - _epoch(failed[0]["started"])
    assert took < 75, f"the case whose worker was killed took {took:.0f} s to be recorded"

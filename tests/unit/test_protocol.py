"""The driver protocol: every message survives the pipe, a message from another version of
shotbench is refused in one sentence naming `make envs`, and a task read by `worker.execute`
with the local backend on a real shot file (no Dask) gives the rows the orchestrator records."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from shotbench.backends.base import Source
from shotbench.bench import protocol, worker
from shotbench.bench.checksums import YES, Checksums
from shotbench.bench.protocol import (
    PROTOCOL_VERSION,
    Close,
    Done,
    Failed,
    Gather,
    GatherReply,
    Hello,
    HelloReply,
    Message,
    Pool,
    PoolReply,
    Prepare,
    PrepareReply,
    ProtocolMismatch,
    Quit,
    Run,
    RunReply,
    Spec,
    Upstream,
    UpstreamReply,
    Warm,
    read_reply,
    read_request,
)
from shotbench.plan import matrix as plan

ITEM = plan.Item("shots/1.h5", 2_000_000, "1", "ip")
TASKS = [
    plan.Task(1, (plan.Part("ip", (ITEM, plan.Item("shots/2.h5", 2_000_000, "2", "ip"))),)),
    plan.Task(2, (plan.Part("*", (ITEM,)),), whole=True, reopen=True),
    plan.Task(3, (plan.Part("r", (plan.Item("shots/1.h5", 2_000_000, start=10, length=90),)),)),
]
SPEC = Spec(
    "ros3-2.2",
    Source("s3", "bucket", "pre/", "/data/copies"),
    268435456,
    1 << 20,
    {"index_dir": "/runs/x/index/kerchunk"},
    block_cache=16 << 20,
    verify=True,
)
ROW = {
    "worker#": 1,
    "obj-id": "ip",
    "time": 0.25,
    "objs": 2,
    "dsets": 4,
    "bytes": 4096,
    "error": "",
    "crcs": [["shots/1.h5", "1", "ip", 12345]],
    "retries": "",
}

REQUESTS = [
    Hello(PROTOCOL_VERSION),
    Prepare(2, SPEC),
    Prepare(1, Spec("raw-get", Source("local"), 0, 0)),
    Gather("shots/1.h5", 2_000_000),
    Run(TASKS, park_timeout=300.0),
    Run([]),
    Upstream(2, SPEC, [TASKS[:1], TASKS[1:]], [("shots/1.h5", 2_000_000), ("shots/2.h5", 1_999_000)]),
    Pool(),
    Close(4),
    Quit(),
]
REPLIES = [
    HelloReply(PROTOCOL_VERSION, {"python": "3.11.2", "hdf5": "2.2.0"}, 4242),
    PrepareReply(
        "http://127.0.0.1:8787/status",
        ["tcp://127.0.0.1:1", "tcp://127.0.0.1:2"],
        [Warm(11, "2.2.0"), Warm(12, "2.2.0")],
    ),
    GatherReply(0.0125),
    GatherReply(None),
    RunReply([ROW, {**ROW, "obj-id": "bt"}], 1.5, 1_790_000_000.25, 1_790_000_001.75),
    UpstreamReply([ROW], 2.0, 0.3, 4.5),
    PoolReply("2026.8.0", [{"address": "tcp://10.0.0.7:4001", "host": "10.0.0.7", "hdf5": "1.14.6", "ros3": "True"}]),
    Done(),
]


def through_the_pipe(msg: Message) -> Any:
    """What the other side parses: the message as one JSON line."""
    line = json.dumps(msg.to_json())
    assert "\n" not in line
    return json.loads(line)


@pytest.mark.parametrize("req", REQUESTS, ids=lambda r: type(r).__name__)
def test_every_request_arrives_as_sent(req: protocol.Request[Any]) -> None:
    data = through_the_pipe(req)
    assert data["op"] == req.OP
    assert read_request(data) == req  # what the driver reads
    assert type(req).from_json(data) == req


@pytest.mark.parametrize("reply", REPLIES, ids=lambda r: type(r).__name__)
def test_every_reply_arrives_as_sent(reply: protocol.Reply) -> None:
    data = through_the_pipe(reply)
    assert data["ok"] is True
    request = next(r for r in REQUESTS if r.REPLY is type(reply))
    assert read_reply(request, data) == reply  # what the orchestrator reads


def test_a_failure_reaches_the_orchestrator_as_failed() -> None:
    data = through_the_pipe(Failed("OSError: connection reset"))
    assert data == {"ok": False, "error": "OSError: connection reset"}
    assert read_reply(Prepare(1, SPEC), data) == Failed("OSError: connection reset")


def test_the_spec_and_tasks_reach_the_worker_as_built() -> None:
    """What a Dask task receives after the pipe: the same source, settings and reads."""
    got = read_request(through_the_pipe(Run(TASKS)))
    assert got.tasks == TASKS and all(isinstance(t, plan.Task) for t in got.tasks)
    spec = read_request(through_the_pipe(Prepare(2, SPEC))).spec
    assert spec.source == SPEC.source and (spec.pb_size, spec.chunk_cache, spec.block_cache) == (
        268435456,
        1 << 20,
        16 << 20,
    )
    assert spec.options == {"index_dir": "/runs/x/index/kerchunk"} and spec.verify is True


def _refused(data: Any, parse: Any, *words: str) -> None:
    with pytest.raises(ProtocolMismatch) as err:
        parse(data)
    text = str(err.value)
    assert "`make envs`" in text and all(w in text for w in words), text
    assert text.count(".") == 1 and text.endswith(".")  # one sentence
    assert err.value.exit_code != 0


@pytest.mark.parametrize("msg", [*REQUESTS, *REPLIES], ids=lambda m: type(m).__name__)
def test_an_unknown_field_is_refused(msg: Message) -> None:
    data = {**through_the_pipe(msg), "page_buffer": 1}
    parse = read_request if isinstance(msg, protocol.Request) else type(msg).from_json
    _refused(data, parse, "page_buffer", "unknown field")


@pytest.mark.parametrize("where", ["spec", "source", "task item", "warm"])
def test_an_unknown_nested_field_is_refused(where: str) -> None:
    if where == "warm":
        data = through_the_pipe(REPLIES[1])
        data["warm"][0]["rss"] = 1
        _refused(data, PrepareReply.from_json, "rss")
        return
    data = through_the_pipe(Upstream(2, SPEC, [TASKS], [("k", 1)]))
    if where == "spec":
        data["spec"]["pb"] = 0
    elif where == "source":
        data["spec"]["source"]["region"] = "us-east-1"
    else:
        data["rounds"][0][0]["parts"][0]["items"][0]["etag"] = "x"
    _refused(data, read_request, "make envs")


def test_a_missing_field_an_unknown_request_and_a_stray_op_are_refused() -> None:
    data = through_the_pipe(Prepare(2, SPEC))
    del data["spec"]["chunk_cache"]
    _refused(data, read_request, "lacks the field chunk_cache")
    _refused({"op": "submit", "tasks": []}, read_request, "'submit'")
    _refused(through_the_pipe(Close(2)), Quit.from_json, "'close'")
    _refused([1, 2], read_request, "unknown")


@pytest.mark.parametrize("found", [PROTOCOL_VERSION + 1, None])
def test_a_driver_of_another_protocol_version_is_refused(found: int | None) -> None:
    """A newer driver, or one from before the protocol had a version (its hello has none)."""
    data = {"ok": True, "versions": {"python": "3.11.2"}, "pid": 1}
    if found is not None:
        data["protocol"] = found
    _refused(
        data,
        lambda d: read_reply(Hello(PROTOCOL_VERSION), d),
        f"protocol {found or '(none)'}",
        f"this checkout speaks {PROTOCOL_VERSION}",
    )


# ---------------------------------------------------------------------------- the task, no Dask


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> list[plan.ShotFile]:
    """Two real synthetic single-shot files and what the inventory pass finds in them."""
    from shotbench.bench.inventory import inventory
    from shotbench.hdf5.synthesis import make_dataset

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SHOTBENCH_STATE", str(tmp_path_factory.mktemp("state")))
        paths = make_dataset(
            tmp_path_factory.mktemp("shots"), shots=2, signals=12, file_size=2_000_000, page_size=1_000_000, seed=0
        )
        objs = [SimpleNamespace(key=str(p), size=p.stat().st_size, etag=None) for p in paths]
        return inventory(Source("local"), objs, None, say=lambda _: None)


def test_execute_reads_a_case_with_the_local_backend(shots: list[plan.ShotFile]) -> None:
    """The orchestrator's spec and tasks, through the pipe, read by the task function in this
    process: one row per signal, every dataset and byte h5py finds, checksums that match."""
    import h5py

    from shotbench.hdf5.shotfile import read_signal

    prepare = read_request(through_the_pipe(Prepare(1, Spec("local", Source("local"), 0, 1 << 20, verify=True))))
    (task,) = read_request(through_the_pipe(Run(plan.signals_tasks(shots, 1)))).tasks
    rows = worker.execute(worker.backend_for(prepare.spec), task, prepare.spec.verify)

    signals = plan.all_signals(shots)
    assert [r["obj-id"] for r in rows] == signals and {r["worker#"] for r in rows} == {1}
    assert not [r["error"] for r in rows if r["error"]]
    expected = [0, 0]
    for f in shots:
        with h5py.File(f.key, "r") as fh:
            for name in f.signals:
                d, n = read_signal(fh, f.shot, name)
                expected[0] += d
                expected[1] += n
    assert [sum(r["dsets"] for r in rows), sum(r["bytes"] for r in rows)] == expected
    holding = {name: sum(name in f.signals for f in shots) for name in signals}
    assert all(r["objs"] == holding[r["obj-id"]] and 0 < r["open"] < r["time"] for r in rows)  # a file open per file
    assert all(r["pb-effective"] == 0 and r["chunk-cache-effective"] == 1 << 20 for r in rows)
    checks = Checksums(Source("local"))
    assert {checks.verdict(r) for r in rows} == {(YES, "")}
    assert sum(len(r["crcs"]) for r in rows) == sum(len(f.signals) for f in shots)
    json.dumps(rows)  # what a parked task sends back to the driver


def test_execute_records_a_missing_file_in_its_row(shots: list[plan.ShotFile], tmp_path: Path) -> None:
    gone = plan.ShotFile(str(tmp_path / "gone.h5"), shots[0].size, shots[0].shot, shots[0].signals[:1])
    (task,) = plan.signals_tasks([gone], 1)
    (row,) = worker.run_task(Spec("local", Source("local"), 0, 1 << 20), task)
    assert row["error"].startswith(f"{tmp_path / 'gone.h5'}: ") and row["bytes"] == row["dsets"] == 0


def test_the_protocol_loads_no_heavy_library() -> None:
    """Both sides import it: the orchestrator must not pull in h5py or Dask through it."""
    import subprocess
    import sys

    code = "import sys, shotbench.bench.protocol; print(sorted(set(sys.modules) & {'h5py', 'numpy', 'dask', 'distributed'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"

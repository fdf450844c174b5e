"""The messages between the orchestrator and each environment's driver, one JSON object a line.

The orchestrator (`bench/driverpool.py`, main environment) starts `<env python> -m shotbench.bench.driver
--serve` once per backend environment; every request it sends gets one reply. Both sides import
this module, so it imports nothing heavy (no h5py, no Dask).

A backend environment runs the `shotbench` of the checkout that built it (`make envs` installs it
editable). When that checkout and this one disagree, the hello's `PROTOCOL_VERSION`, or a message
with fields this side does not know, says so in one sentence naming `make envs`, instead of a
KeyError in the middle of a case.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, Generic, TypeVar

from shotbench.backends.base import Source
from shotbench.errors import UserError
from shotbench.plan.matrix import Item, Part, Task, task_from_json, task_to_json

PROTOCOL_VERSION = 5  # raise it with any change to a message below

M = TypeVar("M", bound="Message")
R = TypeVar("R", bound="Reply")
Row = dict[str, Any]  # one workers.csv row as a task reports it (columns: records/schema.py)


class ProtocolMismatch(UserError):
    """The other side sent what this version of shotbench would not: the env is out of date."""


def skew(what: str) -> ProtocolMismatch:
    """The one sentence for a message that shows the two sides run different versions."""
    return ProtocolMismatch(
        f"{what}, so the orchestrator and an environment's driver run different versions "
        "of shotbench; rebuild the environments with `make envs`."
    )


def _checked(cls: type, data: Any, what: str) -> dict[str, Any]:
    """`data` if its keys are exactly the dataclass's fields (those with defaults may be absent)."""
    if not isinstance(data, dict):
        raise skew(f"{what} is not a JSON object")
    unknown = sorted(set(data) - {f.name for f in fields(cls)})
    if unknown:
        raise skew(f"{what} has the unknown field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
    missing = [
        f.name for f in fields(cls) if f.name not in data and f.default is MISSING and f.default_factory is MISSING
    ]
    if missing:
        raise skew(f"{what} lacks the field{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    return data


def _encode(value: Any) -> Any:
    if isinstance(value, Message):
        return value.to_json()
    if isinstance(value, Source):
        return value.to_dict()
    if isinstance(value, Task):
        return task_to_json(value)
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _tasks(data: Any, what: str) -> list[Task]:
    """Tasks (`plan.task_from_json`) whose every part and item has exactly the fields this version has."""
    if not isinstance(data, list):
        raise skew(f"{what} holds no list of tasks")
    for t in data:
        for p in _checked(Task, t, f"a task of {what}")["parts"]:
            for it in _checked(Part, p, f"a task part of {what}")["items"]:
                _checked(Item, it, f"a read of {what}")
    return [task_from_json(t) for t in data]


class Message:
    """A dataclass that crosses the pipe as a JSON object of its fields."""

    WHAT: ClassVar[str] = "a message"  # how an error names it

    def to_json(self) -> dict[str, Any]:
        return {f.name: _encode(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_json(cls: type[M], data: Any) -> M:
        return cls(**cls._decode(_checked(cls, data, cls.WHAT)))

    @classmethod
    def _decode(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Field values from their JSON: nested messages and tasks built, plain values as they are."""
        return data


@dataclass(frozen=True)
class Spec(Message):
    """What a worker builds its backend from: the reader, where the files are, and a case's settings."""

    WHAT: ClassVar[str] = "a backend spec"

    backend: str
    source: Source
    pb_size: int  # page buffer bytes; -1 leaves the library's default
    chunk_cache: int
    options: dict[str, Any] = field(default_factory=dict)
    block_cache: int | None = None  # the 2.2 ROS3 block cache; None leaves it untouched
    verify: bool = False  # rows carry a CRC-32 of every signal, checked by the orchestrator
    # The case's credentials, fetched when it starts (`shotbench.store.credentials`): they travel
    # with the case's tasks, so a worker the run did not start signs with the current set too.
    # `CaseCredentials.to_json()`; None: the worker keeps what its environment holds. Never printed.
    credentials: dict[str, Any] | None = field(default=None, repr=False)
    # The S3 endpoint of this backend's own network path (`[options.<backend>] network`); None: the
    # run's endpoint, which the worker's environment holds. It travels with the case, like the
    # credentials, so one driver and its warm workers serve a backend and its slowed twin alike.
    endpoint: str | None = None

    @classmethod
    def _decode(cls, data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "source": Source(**_checked(Source, data["source"], "a backend spec's source"))}


@dataclass(frozen=True)
class Warm(Message):
    """What one warmed worker process reports."""

    WHAT: ClassVar[str] = "a warmed worker's report"

    pid: int
    hdf5: str


# ---------------------------------------------------------------------------- replies


class Reply(Message):
    """A driver's answer to a request that succeeded: `{"ok": true, ...fields}`."""

    def to_json(self) -> dict[str, Any]:
        return {"ok": True, **super().to_json()}

    @classmethod
    def from_json(cls: type[M], data: Any) -> M:
        if isinstance(data, dict) and data.get("ok") is True:
            data = {k: v for k, v in data.items() if k != "ok"}
        return super().from_json(data)


@dataclass(frozen=True)
class Failed(Message):
    """A request the driver could not carry out: `{"ok": false, "error": ...}` (credentials scrubbed)."""

    WHAT: ClassVar[str] = "a driver's error reply"

    error: str

    def to_json(self) -> dict[str, Any]:
        return {"ok": False, "error": self.error}

    @classmethod
    def from_json(cls, data: Any) -> Failed:
        if isinstance(data, dict) and data.get("ok") is False:
            data = {k: v for k, v in data.items() if k != "ok"}
        return super().from_json(data)


@dataclass(frozen=True)
class HelloReply(Reply):
    WHAT: ClassVar[str] = "a driver's hello"

    protocol: int
    versions: dict[str, str]  # library versions as the environment's interpreter has them
    pid: int

    @classmethod
    def from_json(cls, data: Any) -> HelloReply:
        """The version first: a driver from another checkout may differ in every other field."""
        found = data.get("protocol") if isinstance(data, dict) else None
        if found != PROTOCOL_VERSION:
            raise skew(
                f"its driver speaks protocol {'(none)' if found is None else found} "
                f"where this checkout speaks {PROTOCOL_VERSION}"
            )
        return super().from_json(data)


@dataclass(frozen=True)
class PrepareReply(Reply):
    WHAT: ClassVar[str] = "a driver's prepare reply"

    dashboard: str
    workers: list[str]  # the Dask worker addresses the case's tasks are pinned to
    warm: list[Warm]

    @classmethod
    def _decode(cls, data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "warm": [Warm.from_json(w) for w in data["warm"]]}


@dataclass(frozen=True)
class GatherReply(Reply):
    WHAT: ClassVar[str] = "a driver's gather reply"

    seconds: float | None  # None: the reader's files are not h5py objects


@dataclass(frozen=True)
class RunReply(Reply):
    WHAT: ClassVar[str] = "a driver's run reply"

    rows: list[Row]
    total: float  # the clock: release (or first submit) to the last rows received
    started: float  # wall clock (epoch seconds) at the release
    finished: float


@dataclass(frozen=True)
class UpstreamReply(Reply):
    WHAT: ClassVar[str] = "a driver's upstream reply"

    rows: list[Row]
    total: float
    info_time: float  # the separately timed gather-info pass
    wall: float  # the whole case, Client start-up included


@dataclass(frozen=True)
class PoolReply(Reply):
    """The workers of one environment's pool on a user's cluster, as each reports itself."""

    WHAT: ClassVar[str] = "a driver's pool reply"

    scheduler_version: str
    workers: list[dict[str, str]]  # address, host, and the worker's `versions()` (hdf5, ros3, ...)


@dataclass(frozen=True)
class Done(Reply):
    """The answer to a request that returns nothing (close, quit)."""

    WHAT: ClassVar[str] = "a driver's acknowledgement"


# ---------------------------------------------------------------------------- requests


class Request(Message, Generic[R]):
    """`{"op": OP, ...fields}`; the driver answers with a `REPLY` or a `Failed`.

    A request names its operation and reply type in its class line:
    `class Close(Request[Done], op="close", reply=Done)`."""

    OP: ClassVar[str]
    REPLY: ClassVar[type[Reply]]

    def __init_subclass__(cls, op: str = "", reply: type[Reply] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if op and reply is not None:
            cls.OP, cls.REPLY, cls.WHAT = op, reply, f"{'an' if op[0] in 'aeiou' else 'a'} {op} request"

    def to_json(self) -> dict[str, Any]:
        return {"op": self.OP, **super().to_json()}

    @classmethod
    def from_json(cls: type[M], data: Any) -> M:
        if isinstance(data, dict) and "op" in data:
            if data["op"] != cls.OP:  # type: ignore[attr-defined]
                raise skew(f"{cls.WHAT} arrived as {data['op']!r}")
            data = {k: v for k, v in data.items() if k != "op"}
        return super().from_json(data)


@dataclass(frozen=True)
class Hello(Request[HelloReply], op="hello", reply=HelloReply):
    """The first request. The driver answers with its own protocol version whatever this says:
    the orchestrator, where the user is, refuses a driver that differs."""

    protocol: int


@dataclass(frozen=True)
class Prepare(Request[PrepareReply], op="prepare", reply=PrepareReply):
    """Start (or reuse) a cluster of `workers` and warm every worker for `spec`, before the clock."""

    workers: int
    spec: Spec

    @classmethod
    def _decode(cls, data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "spec": Spec.from_json(data["spec"])}


@dataclass(frozen=True)
class Gather(Request[GatherReply], op="gather", reply=GatherReply):
    """Time upstream's `gather-time` listing of one file on a prepared worker (before the clock)."""

    key: str
    size: int


@dataclass(frozen=True)
class Run(Request[RunReply], op="run", reply=RunReply):
    """Run a case's tasks on the prepared cluster: parked, released together, clocked."""

    tasks: list[Task]
    park_timeout: float = 600.0  # seconds for every task to reach its worker and connect back

    @classmethod
    def _decode(cls, data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "tasks": _tasks(data["tasks"], cls.WHAT)}


@dataclass(frozen=True)
class Upstream(Request[UpstreamReply], op="upstream", reply=UpstreamReply):
    """One case the upstream way: a fresh Client, `rounds` of submit/gather, a gather-info pass."""

    workers: int
    spec: Spec
    rounds: list[list[Task]]
    info_files: list[tuple[str, int]]  # (key, size) of every file the gather-info pass lists

    @classmethod
    def _decode(cls, data: dict[str, Any]) -> dict[str, Any]:
        return {
            **data,
            "spec": Spec.from_json(data["spec"]),
            "rounds": [_tasks(r, cls.WHAT) for r in data["rounds"]],
            "info_files": [(str(k), int(s)) for k, s in data["info_files"]],
        }


@dataclass(frozen=True)
class Pool(Request[PoolReply], op="pool", reply=PoolReply):
    """On `--scheduler`: list this environment's pool and what each worker runs, before any case."""


@dataclass(frozen=True)
class Close(Request[Done], op="close", reply=Done):
    """Close the warm cluster if it has `workers` workers (the orchestrator keeps idle processes within budget)."""

    workers: int


@dataclass(frozen=True)
class Quit(Request[Done], op="quit", reply=Done):
    """Close every cluster and exit."""


REQUESTS: dict[str, type[Request[Any]]] = {c.OP: c for c in (Hello, Prepare, Gather, Run, Upstream, Pool, Close, Quit)}


def read_request(data: Any) -> Request[Any]:
    """The request a line of the orchestrator's holds (driver side)."""
    op = data.get("op") if isinstance(data, dict) else None
    cls = REQUESTS.get(op) if isinstance(op, str) else None
    if cls is None:
        raise skew(f"the request {op!r} is unknown to this driver")
    return cls.from_json(data)


def read_reply(request: Request[R], data: Any) -> R | Failed:
    """The driver's answer to `request`: its reply, or the error it reported (orchestrator side)."""
    if isinstance(data, dict) and data.get("ok") is False:
        return Failed.from_json(data)
    return request.REPLY.from_json(data)  # type: ignore[return-value]

"""Turn (mode, files, signals, workers) into per-task work lists, and a run into cases.

Pure functions of their inputs plus a seed, so a resumed run rebuilds exactly the same
cases and the same file/shot selection.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any, TypeVar

from shotbench.runs import interleave
from shotbench.units import MiB

T = TypeVar("T")

MODES = ("shots", "signals")  # upstream's two access orders: every signal of a shot, or a signal across shots
UPSTREAM_PAGE_BUFFER = 256 * MiB  # the page buffer upstream's runs asked for (its notebooks say "264MB")
# The partial-read workload: k signals of one single-shot file, the file opened once
# for all of them, or once per signal; and the layouts of many-shot files.
PARTIAL_MODES = ("partial-once", "partial-each")
ALL_MODES = MODES + PARTIAL_MODES
PARTIAL_SIGNALS = 8  # k: signals a partial read takes from a shot


@dataclass(frozen=True)
class ShotFile:
    """One shot file and what the inventory pass found in it."""

    key: str
    size: int
    shot: str
    signals: tuple[str, ...]
    weights: tuple[int, ...] = ()  # payload bytes per signal (with its scales); () = unknown
    # what reads must touch (hdf5/storage.py), for bytes-needed; empty/0 = unknown
    file_meta: int = 0  # superblock and the root and /shots headers
    shot_meta: int = 0  # /shots/<shot> and its signals group's headers
    datasets: tuple[tuple[str, ...], ...] = ()  # per signal: the dataset paths its read touches
    stored: tuple[tuple[str, int], ...] = ()  # per dataset path: header + stored data bytes


@dataclass(frozen=True)
class Item:
    """One read: a signal of a file (HDF5 backends) or a byte range of an object (raw-get)."""

    key: str
    size: int
    shot: str = ""
    signal: str = ""
    start: int = 0
    length: int = -1


@dataclass(frozen=True)
class Part:
    """The unit of one CSV row: what one task read for one object id (a shot or a signal)."""

    obj_id: str
    items: tuple[Item, ...]


@dataclass(frozen=True)
class Task:
    """One Dask task; `index` is the upstream `worker#` (1-based batch index)."""

    index: int
    parts: tuple[Part, ...]
    whole: bool = False  # one row for the whole task (many-shot files, partial reads)
    reopen: bool = False  # with `whole`: open the file for every part, not once for the task


@dataclass(frozen=True)
class Case:
    """One measured combination; `order` is its position in the run's interleaved order."""

    case_id: str
    trial: int
    order: int
    backend: str
    mode: str
    workers: int
    pb_size: int
    chunk_cache: int
    block_cache: int | None = None  # 2.2 ROS3 block cache; None for backends without one
    family: str = ""  # file family of a `layouts` run (see families.py); "" = the one workload
    files: int = 1  # shot files a `shots` case reads (every signal of each), so a case is long enough to time

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def split_balanced(items: Sequence[T], n: int) -> list[list[T]]:
    """Contiguous batches whose sizes differ by at most one; never an empty batch."""
    n = max(1, min(n, len(items)))
    q, r = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + q + (1 if i < r else 0)
        out.append(list(items[start:end]))
        start = end
    return [b for b in out if b]


def split_weighted(items: Sequence[T], weights: Sequence[int], n: int) -> list[list[T]]:
    """Batches of about equal total weight (largest first onto the lightest batch), each
    kept in the items' original order; one batch per worker, never an empty one."""
    n = max(1, min(n, len(items)))
    bins: list[list[int]] = [[] for _ in range(n)]
    loads = [0] * n
    for i in sorted(range(len(items)), key=lambda i: (-weights[i], i)):
        b = min(range(n), key=lambda j: (loads[j], len(bins[j]), j))
        bins[b].append(i)
        loads[b] += max(1, int(weights[i]))
    return [[items[i] for i in sorted(b)] for b in sorted(bins, key=lambda b: min(b)) if b]


def split_upstream(items: Sequence[T], workers: int) -> list[list[T]]:
    """The upstream batching: `len(items) // workers + 1` items per batch (may give < workers)."""
    size = len(items) // max(1, workers) + 1
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def seeded(seed: int, *parts: object) -> random.Random:
    """A Random whose stream depends only on the seed and the given labels."""
    text = "|".join(str(p) for p in (seed, *parts))
    return random.Random(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))


def sample_files(files: Sequence[ShotFile], limit: int, seed: int) -> list[ShotFile]:
    """A seeded subset of `limit` files (all when limit <= 0), in key order."""
    ordered = sorted(files, key=lambda f: f.key)
    if limit <= 0 or limit >= len(ordered):
        return ordered
    return sorted(seeded(seed, "files").sample(ordered, limit), key=lambda f: f.key)


def sample_signals(files: Sequence[ShotFile], limit: int, seed: int) -> list[ShotFile]:
    """The same files restricted to a seeded subset of `limit` signal names (all when <= 0)."""
    names = all_signals(files)
    if limit <= 0 or limit >= len(names):
        return list(files)
    keep = set(seeded(seed, "signals").sample(names, limit))
    out = []
    for f in files:
        idx = [i for i, s in enumerate(f.signals) if s in keep]
        weights = tuple(f.weights[i] for i in idx) if len(f.weights) == len(f.signals) else ()
        datasets = tuple(f.datasets[i] for i in idx) if len(f.datasets) == len(f.signals) else ()
        out.append(replace(f, signals=tuple(f.signals[i] for i in idx), weights=weights, datasets=datasets))
    return out


def pick_shot(files: Sequence[ShotFile], seed: int, trial: int, workers: int) -> ShotFile:
    """The shot file a `shots` case reads: random but the same for every backend and page buffer."""
    ordered = sorted(files, key=lambda f: f.key)
    return seeded(seed, "shot", trial, workers).choice(ordered)


def pick_shots(files: Sequence[ShotFile], seed: int, trial: int, workers: int, k: int) -> list[ShotFile]:
    """The k shot files a `shots` case reads, seeded and the same for every backend and page buffer
    of the round; k = 1 is pick_shot's file, so runs made with one file a case keep their files."""
    if k <= 1:
        return [pick_shot(files, seed, trial, workers)]
    ordered = sorted(files, key=lambda f: f.key)
    return seeded(seed, "shots", trial, workers).sample(ordered, min(k, len(ordered)))


def all_signals(files: Sequence[ShotFile]) -> list[str]:
    return sorted({s for f in files for s in f.signals})


def shot_items(f: ShotFile) -> list[Item]:
    return [Item(f.key, f.size, f.shot, s) for s in f.signals]


def shots_tasks(f: ShotFile, workers: int, upstream: bool = False) -> list[Task]:
    """`shots`: the one file's signals split across the workers, one row per task.

    Upstream batches by count; ours balances payload bytes when the inventory knows them
    (signal sizes differ by orders of magnitude, so equal counts leave a worker idle).
    """
    items = shot_items(f)
    if upstream:
        batches = split_upstream(items, workers)
    elif len(f.weights) == len(items):
        batches = split_weighted(items, f.weights, workers)
    else:
        batches = split_balanced(items, workers)
    return [Task(i + 1, (Part(f.shot, tuple(batch)),)) for i, batch in enumerate(batches)]


def shots_tasks_of(shots: Sequence[ShotFile], workers: int) -> list[Task]:
    """`shots` over several files: each file's signals split across the workers as shots_tasks
    splits one, so task i reads its share of every file; one row per (task, file), each an upstream
    `shots` row. One file gives exactly shots_tasks."""
    per_worker: dict[int, list[Part]] = {}
    for f in shots:
        for t in shots_tasks(f, workers):
            per_worker.setdefault(t.index, []).extend(t.parts)
    return [Task(i, tuple(parts)) for i, parts in sorted(per_worker.items())]


def signal_batches(files: Sequence[ShotFile], signal: str, workers: int, upstream: bool = False) -> list[list[Item]]:
    """For one signal, the files holding it split across the workers."""
    split = split_upstream if upstream else split_balanced
    items = [Item(f.key, f.size, f.shot, signal) for f in files if signal in f.signals]
    return split(items, workers)


def signals_tasks(files: Sequence[ShotFile], workers: int) -> list[Task]:
    """`signals`: one task per worker that walks the signals in order, reading its share of
    the files for each; one row per (task, signal), exactly the upstream rows."""
    per_worker: dict[int, list[Part]] = {}
    for signal in all_signals(files):
        for i, batch in enumerate(signal_batches(files, signal, workers)):
            per_worker.setdefault(i + 1, []).append(Part(signal, tuple(batch)))
    return [Task(i, tuple(parts)) for i, parts in sorted(per_worker.items())]


def signals_rounds(files: Sequence[ShotFile], workers: int) -> list[list[Task]]:
    """The upstream `signals` pattern: one submit/gather round per signal."""
    return [
        [
            Task(i + 1, (Part(signal, tuple(b)),))
            for i, b in enumerate(signal_batches(files, signal, workers, upstream=True))
        ]
        for signal in all_signals(files)
    ]


def rawget_tasks(
    mode: str, files: Sequence[ShotFile], shot: ShotFile | Sequence[ShotFile] | None, workers: int
) -> list[Task]:
    """The same objects' full bytes at the same concurrency (see backends.rawget); in `shots` mode
    each task fetches its byte range of every file the case reads."""
    if mode == "shots":
        assert shot is not None
        shots = [shot] if isinstance(shot, ShotFile) else list(shot)
        n = max(1, min(workers, min(f.size for f in shots)))
        parts: dict[int, list[Part]] = {}
        for f in shots:
            bounds = [f.size * i // n for i in range(n + 1)]
            for i in range(n):
                item = Item(f.key, f.size, f.shot, "", bounds[i], bounds[i + 1] - bounds[i])
                parts.setdefault(i + 1, []).append(Part(f.shot, (item,)))
        return [Task(i, tuple(p)) for i, p in sorted(parts.items())]
    batches = split_balanced(sorted(files, key=lambda f: f.key), workers)
    return [
        Task(i + 1, (Part("*", tuple(Item(f.key, f.size, f.shot) for f in batch)),)) for i, batch in enumerate(batches)
    ]


def is_many_shot(files: Sequence[ShotFile]) -> bool:
    """Several shots in one file: the files of a many-shot family share one key."""
    return len({f.key for f in files}) < len(files)


def case_tasks(case: Case, files: Sequence[ShotFile], seed: int, reads_hdf5: bool) -> list[Task]:
    if is_many_shot(files) or case.mode in PARTIAL_MODES:
        return _shaped_tasks(case, files, seed, reads_hdf5)
    shots = pick_shots(files, seed, case.trial, case.workers, case.files) if case.mode == "shots" else None
    if not reads_hdf5:
        return rawget_tasks(case.mode, files, shots, case.workers)
    if case.mode == "shots":
        assert shots is not None
        return shots_tasks_of(shots, case.workers)
    return signals_tasks(files, case.workers)


def _shaped_tasks(case: Case, files: Sequence[ShotFile], seed: int, reads_hdf5: bool) -> list[Task]:
    """Many-shot files and partial reads; raw-get reads the file's bytes once either way."""
    shot = pick_shot(files, seed, case.trial, case.workers)
    if not reads_hdf5:
        return rawget_tasks("shots", files, shot, case.workers)
    if case.mode in PARTIAL_MODES:
        return partial_tasks(case.mode, shot, case.workers, seed, case.trial)
    return many_shot_tasks(case.mode, files, case.workers, seed, case.trial)


def needed_bytes(tasks: Sequence[Task], files: Sequence[ShotFile]) -> int | None:
    """The stored bytes a case's reads cannot avoid (hdf5/storage.py): per task, each dataset it
    touches once (a shared scale, a chunk read by two signals: once), the metadata of each file and
    shot it opens once. None when the inventory did not record the files' storage."""
    index = {(f.key, f.shot): f for f in files}
    stored = {(f.key, f.shot): dict(f.stored) for f in files}
    paths = {(f.key, f.shot): dict(zip(f.signals, f.datasets)) for f in files}
    total = 0
    for task in tasks:
        seen_files: set[str] = set()
        seen_shots: set[tuple[str, str]] = set()
        seen: set[tuple[str, str]] = set()
        for part in task.parts:
            for item in part.items:
                f = index.get((item.key, item.shot))
                touched = paths.get((item.key, item.shot), {}).get(item.signal)
                if f is None or not f.file_meta or touched is None:
                    return None
                if item.key not in seen_files:
                    seen_files.add(item.key)
                    total += f.file_meta
                if (item.key, item.shot) not in seen_shots:
                    seen_shots.add((item.key, item.shot))
                    total += f.shot_meta
                for path in touched:
                    if (item.key, path) not in seen:
                        seen.add((item.key, path))
                        total += stored[(item.key, item.shot)][path]
    return total


def tot_num_obj(mode: str, files: Sequence[ShotFile], shots: int = 1) -> int:
    """Upstream's `tot-num-obj`: signals in `signals` mode, the `shots` files read in `shots` mode
    (upstream: 1); in a many-shot file the shots (`shots`) or signal names (`signals`); in a
    partial read, its signals."""
    if mode in PARTIAL_MODES:
        return min(PARTIAL_SIGNALS, max((len(f.signals) for f in files), default=0))
    if is_many_shot(files):
        return len(files) if mode == "shots" else len(all_signals(files))
    return len(all_signals(files)) if mode == "signals" else shots


@dataclass
class Matrix:
    """What a run measures (a profile, possibly overridden by a TOML config or flags)."""

    backends: list[str]
    modes: list[str] = field(default_factory=lambda: list(MODES))
    workers: list[int] = field(default_factory=lambda: [1, 2])
    page_buffers: list[int] = field(default_factory=lambda: [0, UPSTREAM_PAGE_BUFFER])
    page_buffer_backends: list[str] = field(default_factory=lambda: ["*"])  # fnmatch patterns
    chunk_caches: list[int] = field(default_factory=lambda: [MiB])
    block_caches: list[int] = field(default_factory=lambda: [-1])  # -1 default, 0 off, else bytes
    trials: int = 1
    families: dict[str, Any] = field(default_factory=dict)  # name -> families.Family; {} = one workload
    shots_files: int = 1  # files each `shots` case reads (single-shot files only)


def setting_token(value: int) -> str:
    """A requested size in a case id: -1 is the library's `default`."""
    return "default" if int(value) < 0 else str(int(value))


def plan_cases(
    matrix: Matrix,
    seed: int,
    reads_hdf5: dict[str, bool],
    block_cache: dict[str, bool] | None = None,
) -> list[Case]:
    """Every case of the run, interleaved in a seeded random order within each trial.

    Page buffer and chunk cache only vary for backends that read HDF5 (the page buffer only for
    those `page_buffer_backends` names; the others run without one), the block cache only for
    those that have one (`block_cache[name]`); raw-get runs once per (mode, workers, trial).
    The block cache joins the case id only when it is not the default, so ids of runs made
    before it existed stay the same.
    """
    block_cache = block_cache or {}
    combos = []
    for fam in matrix.families or {"": None}:
        shape = matrix.families.get(fam)
        modes = [m for m in matrix.modes if shape is None or not shape.many_shot or m in MODES]
        for backend in matrix.backends:
            hdf5 = reads_hdf5[backend]
            bcs: list[int | None] = list(matrix.block_caches) if block_cache.get(backend) else [None]
            wanted = (shape.page_buffers or matrix.page_buffers) if shape is not None else matrix.page_buffers
            pbs = [p for p in wanted if shape is None or shape.accepts_page_buffer(p)] or [0]
            if not any(fnmatchcase(backend, pat) for pat in matrix.page_buffer_backends):
                pbs = [0]
            for mode in modes:
                for w in matrix.workers:
                    for pb in dict.fromkeys(pbs) if hdf5 else [0]:
                        for cc in matrix.chunk_caches if hdf5 else [0]:
                            for bc in bcs:
                                combos.append((fam, backend, mode, w, pb, cc, bc))
    cases: list[Case] = []
    trials = range(1, matrix.trials + 1)
    for order, (trial, combo) in enumerate(interleave(combos, trials, lambda t: seeded(seed, "order", t)), start=1):
        fam, backend, mode, w, pb, cc, bc = combo
        cid = f"t{trial}-{fam + '-' if fam else ''}{backend}-{mode}-w{w}-pb{setting_token(pb)}-cc{cc}"
        if bc is not None and bc >= 0:
            cid += f"-bc{setting_token(bc)}"
        shape = matrix.families.get(fam)
        single = shape is None or not shape.many_shot
        k = matrix.shots_files if mode == "shots" and single else 1
        cases.append(Case(cid, trial, order, backend, mode, w, pb, cc, bc, fam, k))
    return cases


def task_to_json(task: Task) -> dict[str, Any]:
    return asdict(task)


def task_from_json(data: dict[str, Any]) -> Task:
    return Task(
        int(data["index"]),
        tuple(Part(p["obj_id"], tuple(Item(**it) for it in p["items"])) for p in data["parts"]),
        bool(data.get("whole", False)),
        bool(data.get("reopen", False)),
    )


# --------------------------------------------------------------------------------------
# Many-shot files and partial reads


def many_shot_objects(mode: str, shots: Sequence[ShotFile]) -> list[Part]:
    """Upstream's objects of one many-shot file: a shot with all its signals (`shots`), or a
    signal across every shot holding it (`signals`); each with its dataset reads."""
    if mode == "shots":
        return [Part(f.shot, tuple(shot_items(f))) for f in sorted(shots, key=lambda f: f.shot)]
    return [
        Part(
            name,
            tuple(Item(f.key, f.size, f.shot, name) for f in sorted(shots, key=lambda f: f.shot) if name in f.signals),
        )
        for name in all_signals(shots)
    ]


def many_shot_tasks(mode: str, shots: Sequence[ShotFile], workers: int, seed: int, trial: int) -> list[Task]:
    """As upstream: the objects in a seeded random order, split evenly across the workers;
    each task opens the file once and reads its objects (one row per task)."""
    objs = many_shot_objects(mode, shots)
    seeded(seed, "many", mode, trial).shuffle(objs)
    return [Task(i + 1, tuple(batch), whole=True) for i, batch in enumerate(split_balanced(objs, workers))]


def partial_tasks(mode: str, f: ShotFile, workers: int, seed: int, trial: int, k: int = PARTIAL_SIGNALS) -> list[Task]:
    """k seeded signals of one shot file, split across the workers; `partial-once` opens the
    file once per task for all of them, `partial-each` once per signal."""
    names = sorted(seeded(seed, "partial", trial).sample(list(f.signals), min(k, len(f.signals))))
    items = [Item(f.key, f.size, f.shot, n) for n in names]
    return [
        Task(i + 1, tuple(Part(it.signal, (it,)) for it in batch), whole=True, reopen=mode == "partial-each")
        for i, batch in enumerate(split_balanced(items, workers))
    ]

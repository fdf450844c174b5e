"""The two upstream access patterns split work exactly as defined, reproducibly."""

from __future__ import annotations

from collections import Counter

from shotbench.plan import matrix as plan
from shotbench.plan.matrix import (
    Matrix,
    ShotFile,
    all_signals,
    case_tasks,
    pick_shot,
    plan_cases,
    rawget_tasks,
    sample_files,
    shots_tasks,
    signals_rounds,
    signals_tasks,
    split_balanced,
    split_upstream,
    task_from_json,
    task_to_json,
    tot_num_obj,
)


def files(n: int = 10, signals: int = 61) -> list[ShotFile]:
    names = tuple(f"sig{i:02d}" for i in range(signals))
    out = [ShotFile(f"shots/{1160000000 + i}.h5", 16_000_000, str(1160000000 + i), names) for i in range(n)]
    # one file lacks a signal, as some upstream files did
    out[3] = ShotFile(out[3].key, out[3].size, out[3].shot, names[:-1])
    return out


def test_split_upstream_matches_upstream_batches() -> None:
    # 500 files / 8 workers: 63 per batch, 8 batches, last 59 (as in the reference CSV)
    sizes = [len(b) for b in split_upstream(list(range(500)), 8)]
    assert sizes == [63] * 7 + [59]
    # 61 signals on 64 workers: one per batch, fewer tasks than workers
    assert len(split_upstream(list(range(61)), 64)) == 61


def test_split_balanced_one_batch_per_worker() -> None:
    for n in (1, 7, 61, 500):
        for w in (1, 2, 3, 8, 64):
            batches = split_balanced(list(range(n)), w)
            assert len(batches) == min(n, w)
            assert max(map(len, batches)) - min(map(len, batches)) <= 1
            assert [x for b in batches for x in b] == list(range(n))


def test_shots_mode_reads_every_signal_of_one_file_once() -> None:
    f = files()[0]
    for w in (1, 2, 4, 64):
        tasks = shots_tasks(f, w)
        items = [it for t in tasks for p in t.parts for it in p.items]
        assert {it.key for it in items} == {f.key}
        assert Counter(it.signal for it in items) == Counter(f.signals)
        assert [t.index for t in tasks] == list(range(1, len(tasks) + 1))
        assert all(len(t.parts) == 1 and t.parts[0].obj_id == f.shot for t in tasks)
        assert len(tasks) == min(w, len(f.signals))


def test_signals_mode_reads_every_signal_from_every_file_holding_it() -> None:
    fs = files()
    for w in (1, 2, 3):
        tasks = signals_tasks(fs, w)
        assert len(tasks) == w
        reads = Counter((it.key, it.signal) for t in tasks for p in t.parts for it in p.items)
        expected = Counter((f.key, s) for f in fs for s in f.signals)
        assert reads == expected
        for t in tasks:  # each part is one signal: the upstream row's obj-id
            assert all({it.signal for it in p.items} == {p.obj_id} for p in t.parts)
            assert [p.obj_id for p in t.parts] == sorted(p.obj_id for p in t.parts)
    assert tot_num_obj("signals", fs) == 61 and tot_num_obj("shots", fs) == 1


def test_upstream_signals_rounds_are_one_per_signal() -> None:
    fs = files()
    rounds = signals_rounds(fs, 4)
    assert len(rounds) == len(all_signals(fs)) == 61
    assert [len(t.parts[0].items) for t in rounds[0]] == [3, 3, 3, 1]


def test_rawget_covers_the_same_bytes() -> None:
    fs = files()
    shot = fs[2]
    for w in (1, 2, 3):
        t = rawget_tasks("shots", fs, shot, w)
        ranges = sorted((it.start, it.length) for x in t for p in x.parts for it in p.items)
        assert sum(n for _, n in ranges) == shot.size and ranges[0][0] == 0
        t = rawget_tasks("signals", fs, None, w)
        assert sorted(it.key for x in t for p in x.parts for it in p.items) == sorted(f.key for f in fs)


def test_selection_is_seeded_and_shared_by_backends() -> None:
    fs = files(50)
    assert sample_files(fs, 6, seed=1) == sample_files(fs, 6, seed=1)
    assert sample_files(fs, 6, seed=1) != sample_files(fs, 6, seed=2)
    assert pick_shot(fs, 0, 1, 2) == pick_shot(list(reversed(fs)), 0, 1, 2)
    m = Matrix(backends=["ros3-2.0", "local", "raw-get"], workers=[1, 2], trials=2)
    a = plan_cases(m, 7, {"ros3-2.0": True, "local": True, "raw-get": False})
    b = plan_cases(m, 7, {"ros3-2.0": True, "local": True, "raw-get": False})
    assert a == b
    ids = [c.case_id for c in a]
    assert len(ids) == len(set(ids)) == 2 * (2 * 2 * 2 * 2 + 2 * 2)
    assert {c.pb_size for c in a if c.backend == "raw-get"} == {0}
    first_trial = [c.backend for c in a if c.trial == 1]
    assert first_trial != sorted(first_trial)  # interleaved, not grouped by backend
    assert [c.order for c in a] == list(range(1, len(a) + 1))
    for c in a:
        t = case_tasks(c, fs, 7, c.backend != "raw-get")
        assert [task_from_json(task_to_json(x)) for x in t] == t


def test_weighted_shots_split_balances_bytes() -> None:
    names = tuple(f"sig{i:02d}" for i in range(61))
    weights = tuple(10 if i < 50 else 100_000 for i in range(61))  # big signals at the end
    f = ShotFile("shots/1.h5", 16_000_000, "1", names, weights)
    for w in (2, 3, 4):
        tasks = shots_tasks(f, w)
        assert len(tasks) == w
        loads = [sum(weights[names.index(it.signal)] for it in t.parts[0].items) for t in tasks]
        assert max(loads) - min(loads) <= 100_000
        got = sorted(it.signal for t in tasks for it in t.parts[0].items)
        assert got == sorted(names)
        for t in tasks:  # each task reads its signals in file order
            sigs = [it.signal for it in t.parts[0].items]
            assert sigs == sorted(sigs)


def test_the_quick_matrix_varies_the_page_buffer_of_the_ros3_backends_only(tmp_path) -> None:
    """The page buffer is the study's knob of the ROS3 driver: `quick` measures it there, and runs
    every other backend without one; page buffers asked for by name apply to every backend."""
    from shotbench.plan import profiles
    from shotbench.plan.matrix import UPSTREAM_PAGE_BUFFER

    reads = {"ros3-1.14": True, "ros3-2.0": True, "fsspec": True, "local": True, "raw-get": False}
    backends = list(reads)

    def pbs(cfg: profiles.BenchConfig) -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        for c in plan_cases(cfg.matrix(), 0, reads):
            out.setdefault(c.backend, set()).add(c.pb_size)
        return out

    quick = pbs(profiles.load("quick", overrides={"backends": backends}))
    assert quick == {
        "ros3-1.14": {0, UPSTREAM_PAGE_BUFFER},
        "ros3-2.0": {0, UPSTREAM_PAGE_BUFFER},
        "fsspec": {0},
        "local": {0},
        "raw-get": {0},
    }
    named = pbs(profiles.load("quick", overrides={"backends": backends, "page_buffers": [0, 64_000_000]}))
    assert named["fsspec"] == named["local"] == named["ros3-2.0"] == {0, 64_000_000}
    config = tmp_path / "pb.toml"
    config.write_text('page_buffers = [0, 64000000]\npage_buffer_backends = ["fsspec"]\n')
    chosen = pbs(profiles.load("quick", config, overrides={"backends": backends}))
    assert chosen["fsspec"] == {0, 64_000_000} and chosen["ros3-2.0"] == chosen["local"] == {0}
    assert pbs(profiles.load("full", overrides={"backends": backends}))["fsspec"] == {0, UPSTREAM_PAGE_BUFFER}


def test_a_shots_case_can_read_several_files_each_split_across_the_workers() -> None:
    """More work per case: k seeded files, every signal of each, each file's signals split across
    the workers as one file's are; one row per (task, file), so every row is an upstream shots row.
    One file a case is exactly the old plan."""
    files = [
        ShotFile(f"s{i}.h5", 16_000_000, str(i), tuple(f"sig{j}" for j in range(6)), weights=(5, 1, 1, 1, 1, 1))
        for i in range(10)
    ]
    three = plan.pick_shots(files, seed=0, trial=1, workers=2, k=3)
    assert len({f.key for f in three}) == 3 and three == plan.pick_shots(files, 0, 1, 2, 3)
    assert plan.pick_shots(files, 0, 1, 2, 1) == [plan.pick_shot(files, 0, 1, 2)]
    assert plan.pick_shots(files, 0, 2, 2, 3) != three  # another round, other files
    tasks = plan.shots_tasks_of(three, 2)
    assert [t.index for t in tasks] == [1, 2]
    assert all([p.obj_id for p in t.parts] == [f.shot for f in three] for t in tasks)
    for f in three:  # every signal of every file, once
        read = sorted(it.signal for t in tasks for p in t.parts if p.obj_id == f.shot for it in p.items)
        assert read == sorted(f.signals)
    assert plan.shots_tasks_of(three[:1], 2) == plan.shots_tasks(three[0], 2)
    raw = plan.rawget_tasks("shots", files, three, 2)
    assert sum(it.length for t in raw for p in t.parts for it in p.items) == 3 * 16_000_000
    assert plan.tot_num_obj("shots", files, 3) == 3
    case = plan.Case("t1-x-shots-w2-pb0-cc0", 1, 1, "x", "shots", 2, 0, 0, files=3)
    assert plan.case_tasks(case, files, 0, reads_hdf5=True) == tasks


def test_trials_given_by_number_run_exactly_unless_a_budget_is_given_too() -> None:
    """The `quick` profile adds rounds where a verdict is open, within its budget; a run that asks
    for a number of trials gets exactly that many, unless it names a budget as well."""
    from shotbench.plan import profiles

    assert profiles.load("quick").budget_minutes > 0
    assert profiles.load("quick", overrides={"trials": 4}).budget_minutes == 0
    assert profiles.load("quick", overrides={"trials": 4, "budget_minutes": 1.5}).budget_minutes == 1.5

"""The transfer report's CPU table: which side's CPU each row's time went to."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from shotbench.transfer import results as analysis
from shotbench.transfer.cpubound import Cores
from shotbench.units import MiB

BASE = {
    "error": "",
    "network": "loopback",
    "test": "128 File/1 MiB ea",
    "file-count": 128,
    "file-size": MiB,
    "total-bytes": 128 * MiB,
    "direction": "download",
    "concurrency": 16,
}


def _run(tmp_path: Path, rows: list[dict]) -> pd.DataFrame:
    (tmp_path / "cases.csv").write_text(pd.DataFrame(rows).to_csv(index=False))
    return analysis.load_cases(tmp_path)


def test_the_cpu_table_sets_stage_beside_the_fastest_other_tool_on_both_sides(tmp_path: Path) -> None:
    rows = []
    for trial, (me, other) in enumerate([(0.137, 0.126), (0.140, 0.125), (0.135, 0.128)]):
        rows += [
            {
                **BASE,
                "trial": trial,
                "tool": "shotbench",
                "seconds": me,
                "mb-per-s": 134 / me,
                "client-cpu-s": 0.14,
                "server-cpu-s": 0.08,
            },
            {
                **BASE,
                "trial": trial,
                "tool": "obstore",
                "seconds": other,
                "mb-per-s": 134 / other,
                "client-cpu-s": 0.12,
                "server-cpu-s": 0.05,
            },
            {
                **BASE,
                "trial": trial,
                "tool": "raw-get",
                "seconds": 0.05,
                "mb-per-s": 2684,
                "client-cpu-s": 0.05,
                "server-cpu-s": 0.05,
            },
        ]
    (row,) = analysis.cpu_table(_run(tmp_path, rows)).to_dict("records")
    assert row["fastest other"] == "obstore" and row["time ÷"] == pytest.approx(0.137 / 0.126, abs=0.01)
    assert (row["stage client CPU s"], row["other client CPU s"]) == (0.14, 0.12)
    assert (row["stage server CPU s"], row["other server CPU s"]) == (0.08, 0.05)
    assert "cores busy" not in row  # without the machine's CPUs, no load to read
    (row,) = analysis.cpu_table(_run(tmp_path, rows), Cores(2)).to_dict("records")
    assert row["cores busy"] == "67 %" and row["CPU ÷"] == pytest.approx(0.22 / 0.17, abs=0.01)


def test_a_run_from_before_cpu_was_counted_has_no_cpu_table(tmp_path: Path) -> None:
    rows = [
        {**BASE, "trial": t, "tool": tool, "seconds": 0.1, "mb-per-s": 1342}
        for t in range(3)
        for tool in ("shotbench", "obstore")
    ]
    cases = _run(tmp_path, rows)
    assert cases["server-cpu-s"].isna().all() and analysis.cpu_table(cases).empty
    assert [c.passed for c in analysis.stage_checks(cases)] == [True]  # the rest of the report still reads it


def test_the_answer_says_which_sides_cpu_a_missed_row_went_to(tmp_path: Path) -> None:
    rows = []
    for trial, (me, other) in enumerate([(0.150, 0.120), (0.152, 0.121), (0.149, 0.119)]):
        rows += [
            {**BASE, "trial": trial, "tool": "shotbench", "seconds": me, "mb-per-s": 134 / me,
             "client-cpu-s": 0.16, "server-cpu-s": 0.09},
            {**BASE, "trial": trial, "tool": "obstore", "seconds": other, "mb-per-s": 134 / other,
             "client-cpu-s": 0.14, "server-cpu-s": 0.06},
        ]  # fmt: skip
    text = analysis.answer(_run(tmp_path, rows))
    assert "not on download 128 File/1 MiB ea at 16 (1.25×, undecided)" in text  # three trials decide nothing
    assert "download 128 File/1 MiB ea at 16 against obstore: +0.020 s here, +0.030 s on the server" in text
    old = [{k: v for k, v in r.items() if not k.endswith("cpu-s")} for r in rows]
    assert "Where the misses' time went" not in analysis.answer(_run(tmp_path, old))
    loaded = analysis.answer(_run(tmp_path, rows), cores=Cores(2))  # 0.20 CPU-s in 0.12 s on two cores
    assert "(the cores were 83 % busy, and stage's CPU (both sides) was 1.25× the other's" in loaded
    assert "time follows the CPU both sides spend" in loaded
    apart = analysis.answer(_run(tmp_path, rows), cores=Cores(2, 1))  # the tools' two: 0.14 CPU-s in 0.12 s
    assert "(the server ran on cores of its own, as S3 does)" in apart
    assert "(the tools' cores were 58 % busy, too few for time to follow CPU)" in apart


def test_the_threshold_block_reads_a_missed_row_through_the_machines_load(tmp_path: Path) -> None:
    rows = []
    for trial in range(5):
        rows += [
            {**BASE, "trial": trial, "tool": "shotbench", "seconds": 0.45 + trial / 1000, "mb-per-s": 300,
             "client-cpu-s": 0.20, "server-cpu-s": 0.60},
            {**BASE, "trial": trial, "tool": "awscrt", "seconds": 0.40 + trial / 1000, "mb-per-s": 330,
             "client-cpu-s": 0.16, "server-cpu-s": 0.57},
        ]  # fmt: skip
    _run(tmp_path, rows)
    (tmp_path / "run.json").write_text('{"kind": "transfer", "machine": {"cpus": 2}}')
    text = analysis.threshold_text(tmp_path)
    assert "FAIL  shotbench 0.45 s" in text
    assert (
        "    CPU: stage +0.040 s on this side; the cores were 91 % busy, and stage's CPU (both sides) was 1.10×" in text
    )


def test_a_summary_is_remembered_by_content_and_never_shared_mutably(tmp_path: Path) -> None:
    rows = [
        {**BASE, "trial": trial, "tool": "shotbench", "seconds": seconds, "mb-per-s": 134 / seconds}
        for trial, seconds in enumerate((1.0, 1.2, 1.1))
    ]
    cases = _run(tmp_path, rows)
    first = analysis.summarize(cases)
    first.loc[:, "seconds"] = -1.0  # a caller that changes its copy changes nobody else's
    again = analysis.summarize(cases.copy())
    assert again["seconds"].tolist() == [1.1]
    slower = cases.assign(seconds=cases["seconds"] * 2)  # other content: its own summary
    assert analysis.summarize(slower)["seconds"].tolist() == [2.2]


def _trials(tool: str, times: list[float], **over: object) -> list[dict]:
    return [{**BASE, **over, "trial": t, "tool": tool, "seconds": s, "mb-per-s": 134 / s} for t, s in enumerate(times)]


def test_a_ratio_gets_a_verdict_only_when_its_interval_is_on_one_side_of_the_threshold(tmp_path: Path) -> None:
    steady = [0.100, 0.101, 0.099, 0.100, 0.102, 0.098, 0.100]
    rows = (
        _trials("shotbench", [0.103, 0.104, 0.102, 0.103, 0.105, 0.101, 0.103])  # 1.03×, tight: within
        + _trials("obstore", steady)
        + _trials("shotbench", [0.130, 0.131, 0.129, 0.132, 0.130, 0.128, 0.131], concurrency=4)  # 1.30×: slower
        + _trials("obstore", steady, concurrency=4)
        + _trials("shotbench", [0.08, 0.14, 0.10, 0.16, 0.09, 0.13, 0.11], concurrency=64)  # 1.10× ± 30 %
        + _trials("obstore", steady, concurrency=64)
    )
    checks = {c.concurrency: c for c in analysis.stage_checks(_run(tmp_path, rows))}
    assert checks[16].verdict == analysis.WITHIN and checks[16].passed
    assert checks[4].verdict == analysis.SLOWER and not checks[4].passed
    assert checks[64].verdict == analysis.UNDECIDED
    assert checks[64].ratio_lo < analysis.THRESHOLD < checks[64].ratio_hi
    assert "(undecided, 7 and 7 trials)" in checks[64].line()


def test_fewer_than_five_trials_a_side_decide_nothing(tmp_path: Path) -> None:
    rows = _trials("shotbench", [0.130, 0.131, 0.129, 0.130]) + _trials("obstore", [0.100, 0.101, 0.099, 0.100])
    (check,) = analysis.stage_checks(_run(tmp_path, rows))
    assert check.ratio_lo > analysis.THRESHOLD  # the interval alone would say slower
    assert check.verdict == analysis.UNDECIDED and not check.passed


def test_only_undecided_rows_get_more_trials_and_only_their_contenders(tmp_path: Path) -> None:
    from shotbench.transfer.moretrials import open_rows

    steady = [0.100, 0.101, 0.099, 0.100, 0.102]
    rows = (
        _trials("shotbench", [0.08, 0.14, 0.10, 0.16, 0.09])  # noisy: undecided against obstore
        + _trials("obstore", steady)
        + _trials("awscrt", [0.104, 0.106, 0.105, 0.103, 0.107])  # within 1.10× of obstore: could lead
        + _trials("awscrt-crc64nvme", [0.30, 0.31, 0.29, 0.30, 0.32])  # stage's check, far slower
        + _trials("s5cmd", [0.50, 0.51, 0.49, 0.50, 0.52])  # cannot lead
        + _trials("raw-get", [0.05] * 5)  # the ceiling, never a rival
        + _trials("shotbench", [0.070] * 5, concurrency=4)  # decided: faster than every tool
        + _trials("obstore", steady, concurrency=4)
        + _trials("awscrt-crc64nvme", [0.30, 0.31, 0.29, 0.30, 0.32], concurrency=4)
    )
    (row,) = open_rows(_run(tmp_path, rows))
    assert (row.direction, row.concurrency) == ("download", 16)
    assert row.tools == ("shotbench", "obstore", "awscrt")  # the like-for-like ratio is decided (0.4×)


def _stolen_rows(pairs: list[tuple[float, float]], tools: tuple[str, ...] = ("shotbench", "obstore", "awscrt")) -> list:
    """Five trials of each tool: (seconds, stolen CPU-s) per trial, the same for every tool."""
    return [
        {**BASE, "trial": t, "tool": tool, "seconds": s, "mb-per-s": 134 / s, "stolen-cpu-s": st}
        for t, (s, st) in enumerate(pairs)
        for tool in tools
    ]


def test_the_report_says_how_much_cpu_the_hypervisor_took_and_whether_it_explains_the_spread(
    tmp_path: Path,
) -> None:
    meta = {"machine": {"cpus": 2}}
    slowed = [(1.0, 0.0), (1.0, 0.02), (1.3, 0.52), (1.0, 0.01), (1.5, 0.9)]  # the slow trials lost the most
    cases = _run(tmp_path, _stolen_rows(slowed))
    st = analysis.stolen(cases, 2)
    assert st is not None and st.cases == 15 and st.over == 6 and st.r is not None and st.r > 0.9
    assert st.most == pytest.approx(0.9 / (1.5 * 2))
    text = analysis.stolen_text(cases, meta)
    assert "at most 30.0 %; 6 of 15 cases lost more than 5 %" in text
    assert "stolen time is one reason identical cases differ" in text
    even = [(1.0, 0.5), (1.3, 0.0), (1.0, 0.0), (1.5, 0.5), (1.0, 0.0)]  # the slow trials lost nothing more
    text = analysis.stolen_text(_run(tmp_path, _stolen_rows(even)), meta)
    assert "stolen time explains little of how identical cases differ" in text
    old = [{k: v for k, v in r.items() if k != "stolen-cpu-s"} for r in _stolen_rows(slowed)]
    assert "did not read the CPU time the hypervisor took" in analysis.stolen_text(_run(tmp_path, old), meta)

"""A real run with a precision target adds rounds until each group is tight or at its cap."""

from __future__ import annotations

import pytest

from shotbench.analyse import decision, stopping


@pytest.mark.slow
def test_a_run_with_precision_adds_rounds_until_tight_or_capped(tmp_path) -> None:
    """The real server and workers: every group ends tight or at the cap of 3 trials, each extra
    trial only for a group that asked for it, and the decision table's noisy flag follows."""
    import json
    import subprocess

    from shotbench.analyse import analysis
    from support.bench import TINY, bench_cmd, bench_env, read_csv
    from support.runfolder import only_run

    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY.format(backends=json.dumps(["local", "fsspec"])).replace("workers = [1, 2]", "workers = [1]"))
    proc = subprocess.run(
        bench_cmd(cfg, tmp_path / "shots", tmp_path / "runs", "--precision", "0.05", "--max-trials", "3"),
        env=bench_env(tmp_path / "state"),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = only_run(tmp_path / "runs")
    rows = read_csv(run / "cases.csv")
    last = stopping.last_rows(rows)
    assert len(last) == 4  # 2 backends × 2 modes
    for group, r in last.items():
        assert r["stop"] in (stopping.TIGHT, stopping.CAP), r
        if r["stop"] == stopping.CAP:
            assert int(r["trial"]) == 3
        else:
            assert float(r["ci-half-width"]) <= 0.05
        trials = sorted(int(x["trial"]) for x in rows if stopping.group_of(x["case-id"]) == group)
        assert trials == list(range(1, int(r["trial"]) + 1))
        for x in rows:  # a trial after one that said tight or cap never ran
            if stopping.group_of(x["case-id"]) == group and int(x["trial"]) < int(r["trial"]):
                assert x["stop"] == stopping.MORE
    table = decision.decision_table(analysis.load([f"r={run}"]))
    capped = {(r["backend"], r["obj-type"]) for r in last.values() if r["stop"] == stopping.CAP}
    assert {(s, m) for s, m, n in zip(table["series"], table["obj-type"], table["noisy"]) if n} == capped

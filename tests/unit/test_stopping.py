"""Trials until the interval is tight: a group stops when its median's 95 % interval is within the
target, at the cap otherwise, and a capped group is noisy in the decision table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shotbench.analyse import decision, stopping
from test_decision import _cases


def test_group_is_the_case_id_without_its_trial() -> None:
    assert stopping.group_of("t12-ros3-2.0-shots-w2-pb0-cc1048576") == "ros3-2.0-shots-w2-pb0-cc1048576"
    assert stopping.group_of("layouts-x") == "layouts-x"


def test_tight_cap_or_more() -> None:
    rule = stopping.Rule(precision=0.05, max_trials=4)
    rng = np.random.default_rng(0)
    steady = rng.normal(1.0, 0.01, 30)
    noisy = rng.lognormal(0, 0.6, 6)
    width, verdict = rule.verdict(steady, trials=2)
    assert verdict == stopping.TIGHT and width <= 0.05
    assert rule.verdict(noisy, trials=2)[1] == stopping.MORE
    assert rule.verdict(noisy, trials=4)[1] == stopping.CAP
    assert rule.verdict([1.0], trials=1)[1] == stopping.MORE  # one sample has no interval: never tight
    assert stopping.Rule().verdict(steady, 1)[1] == stopping.FIXED  # no precision: fixed trials


def test_only_groups_that_asked_for_more_get_another_trial() -> None:
    rows = [
        {"case-id": "t1-a-shots", "trial": "1", "stop": "more"},
        {"case-id": "t2-a-shots", "trial": "2", "stop": "more"},
        {"case-id": "t1-b-shots", "trial": "1", "stop": "tight"},
        {"case-id": "t3-c-shots", "trial": "3", "stop": "cap"},
    ]
    assert stopping.groups_to_extend(rows) == {"a-shots": 3}


def test_a_capped_group_is_noisy_in_the_decision_table() -> None:
    ds = _cases({"a": [1.0, 1.1, 1.05], "b": [2.0, 2.5, 1.6]})
    ds.cases["stop"] = ["", "", "tight", "", "", "cap"]
    t = decision.decision_table(ds)
    assert dict(zip(t["series"], t["noisy"])) == {"a": False, "b": True}
    shown = decision.display_table(t, "shots")
    assert list(shown["interval"]) == ["—", "noisy: stopped at the trial cap"]
    assert "interval" not in decision.display_table(decision.decision_table(_cases({"a": [1.0, 1.1]})), "shots")
    assert pd.isna(ds.cases["stop"]).sum() == 0
    noisy_leader = _cases({"a": [1.0, 1.3, 0.8], "b": [2.0, 2.1, 2.05]})
    noisy_leader.cases["stop"] = ["", "", "cap", "", "", "tight"]
    (answer,) = decision.answer_records(decision.decision_table(noisy_leader))
    assert answer.noisy and "noisy" in answer.text


@pytest.mark.slow
def test_a_run_with_precision_adds_rounds_until_tight_or_capped(tmp_path) -> None:
    """The real server and workers: every group ends tight or at the cap of 3 trials, each extra
    trial only for a group that asked for it, and the decision table's noisy flag follows."""
    import json
    import subprocess

    from shotbench.analyse import analysis
    from test_runner import TINY, bench_cmd, bench_env, only_run, read_csv

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

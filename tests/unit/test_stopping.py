"""Trials until the interval is tight: a group stops when its median's 95 % interval is within the
target, at the cap otherwise, and a capped group is noisy in the decision table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from shotbench.analyse import decision, stopping
from support.synthetic import case_dataset


def _cases(times: dict[str, list[float]]):  # -> analysis.Dataset
    """One-worker shots cases, one per trial."""
    return case_dataset({(name, 1): ts for name, ts in times.items()})


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

"""Stop when answered: a (mode, workers) group stays open while a pair with its leader is undecided."""

from __future__ import annotations

from shotbench.analyse import decision, verdicts
from support.synthetic import case_dataset


def test_only_groups_with_an_undecided_pair_stay_open() -> None:
    """At 1 worker b is 50 % slower every round (decided); at 2 workers c swings ±20 % around a
    (undecided), so only `shots w2` gets another round."""
    a = [1.0, 2.0, 1.0]
    ds = case_dataset(
        {
            ("a", 1): a,
            ("b", 1): [1.5 * x for x in a],
            ("a", 2): a,
            ("c", 2): [x * f for x, f in zip(a, (1.2, 0.8, 1.15))],
        }
    )
    table = decision.decision_table(ds)
    by = {g.key: g for g in verdicts.groups(table, decision.usable_cases(ds.cases))}
    assert by["shots w1"].open_pairs == () and by["shots w1"].rounds == 3
    assert by["shots w2"].open_pairs == ("c",)
    # what another round of a group costs, less the fixed cost per case: its last round's runtimes
    assert (by["shots w1"].seconds, by["shots w1"].cases) == (1.0 + 1.5, 2)
    # the group's per-round spread of log ratios, pooled: 0 at 1 worker (b is 1.5x every round)
    assert by["shots w1"].spread == 0 and by["shots w2"].spread > 0.1


def test_one_round_leaves_every_group_open() -> None:
    ds = case_dataset({("a", 1): [1.0], ("b", 1): [3.0]})
    table = decision.decision_table(ds)
    (g,) = verdicts.groups(table, decision.usable_cases(ds.cases))
    assert g.open_pairs == ("b",) and g.rounds == 1

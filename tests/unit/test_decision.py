"""The decision table ranks backends with CIs, finds the limit, and prices the requests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shotbench import stats
from shotbench.analyse import analysis, decision
from support.golden import RUN_FIXTURE as RUN
from support.synthetic import case_dataset


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return decision.decision_table(analysis.load([f"fixture={RUN}"]))


def test_backends_are_ranked_by_median_runtime_with_the_limit_apart(table: pd.DataFrame) -> None:
    shots1 = table[(table["obj-type"] == "shots") & (table["num-workers"] == 1)]
    assert list(shots1["name"]) == ["ros3-2.0", "ros3-1.14", "raw-get"]
    assert list(shots1["rank"].astype(object)) == [1, 2, pd.NA]
    first, second, raw = (shots1.iloc[i] for i in range(3))
    assert first["runtime"] == pytest.approx(np.median([1.115579, 1.185865]))
    assert raw["verdict"] == decision.LIMIT_ROW
    # limit: the raw-get backend's median for the same mode and workers (no local disk in this run)
    assert first["limit"] == pytest.approx(np.median([0.766659, 0.776885]))
    assert first["vs-limit"] == pytest.approx(first["runtime"] / first["limit"])
    # paired by round: the geometric mean of the per-trial ratios
    assert second["vs-fastest"] == pytest.approx(np.sqrt(1.412746 / 1.115579 * 1.444703 / 1.185865), rel=0.01)
    # two trials each, far apart: the interval excludes 1
    assert 1 < second["vs-fastest-ci-low"] <= second["vs-fastest"] <= second["vs-fastest-ci-high"]
    assert second["verdict"] == decision.SLOWER


def test_costs_follow_the_price_table(table: pd.DataFrame) -> None:
    prices = decision.load_prices()
    row = table[(table["obj-type"] == "shots") & (table["num-workers"] == 1) & (table["series"] == "ros3-1.14")].iloc[0]
    assert (row["gets"], row["bytes"]) == (720, 15_000_000)
    per_read = 720 * prices.get_per_1000 / 1000 + 15_000_000 / 2**30 * prices.transfer_per_gb["internet"]
    assert row[decision.cost_column("internet")] == pytest.approx(1000 * per_read)
    assert row[decision.cost_column("same region")] == pytest.approx(720 * prices.get_per_1000)
    assert prices.as_of and prices.source.startswith("https://")


def _cases(times: dict[str, list[float]]) -> analysis.Dataset:
    return case_dataset({(name, 1): ts for name, ts in times.items()})


def test_overlapping_trials_are_undecided() -> None:
    t = decision.decision_table(
        _cases({"a": [1.0, 1.2, 1.4, 1.1], "b": [1.05, 1.3, 1.0, 1.25], "c": [3.0, 3.1, 3.2, 3.05]})
    )
    assert list(t["verdict"]) == [decision.FASTEST, decision.UNDECIDED, decision.SLOWER]


def test_the_ratio_to_the_fastest_is_paired_by_round() -> None:
    """Rounds that run slow for everyone divide out: b is 10 % slower than a in every round, so it
    is slower, although its runtimes overlap a's; c scatters around a's by a few per cent (the
    spread both are judged by, pooled), so it is equivalent within ±10 %."""
    a = [1.0, 2.0, 1.0, 2.0]
    t = decision.decision_table(
        _cases({"a": a, "b": [1.1 * x for x in a], "c": [x * f for x, f in zip(a, (0.97, 1.03, 0.98, 1.02))]})
    )
    by = t.set_index("name")
    assert by.at["b", "verdict"] == decision.SLOWER
    assert by.at["b", "vs-fastest-ci-low"] > 1
    assert by.at["c", "verdict"] == decision.EQUIVALENT
    # one statistic: the verdict's interval and the next run's are stats.paired_ratios', which
    # `shotbench repeat` and `compare --run` call too
    pr = stats.paired_ratios([[1.1] * 4, [0.97, 1.03, 0.98, 1.02]])[1]
    assert by.at["c", "vs-fastest"] == pytest.approx(pr.estimate)
    assert (by.at["c", "vs-fastest-ci-low"], by.at["c", "vs-fastest-ci-high"]) == pytest.approx(
        (pr.confidence.low, pr.confidence.high)
    )
    assert (by.at["c", "next-run-low"], by.at["c", "next-run-high"]) == pytest.approx(
        (pr.next_run.low, pr.next_run.high)
    )
    # a tighter margin than c's spread can show leaves it undecided: the margin is a setting
    tight = decision.decision_table(
        _cases({"a": a, "b": [1.1 * x for x in a], "c": [x * f for x, f in zip(a, (0.97, 1.03, 0.98, 1.02))]}),
        margin=0.01,
    )
    assert tight.set_index("name").at["c", "verdict"] == decision.UNDECIDED


def test_one_trial_claims_nothing() -> None:
    t = decision.decision_table(_cases({"a": [1.0], "b": [2.0]}))
    assert list(t["verdict"]) == [decision.FASTEST, decision.ONE_TRIAL]
    assert np.isnan(t["runtime-ci-low"]).all()


def test_failed_cases_are_left_out() -> None:
    cases = pd.DataFrame({"total-runtime": [1.0, np.nan, 2.0], "status": ["ok", "failed", "partial"]})
    assert list(decision.usable_cases(cases)["total-runtime"]) == [1.0]


def test_the_answer_is_never_a_backend_that_failed_cases() -> None:
    """Under http-flaky-5pc the answer for shots was ros3-1.14, ranked on the trials that survived
    while another of its cases had failed."""
    ds = _cases({"ros3-1.14": [1.0, 1.1], "fsspec": [2.0, 2.1]})
    lost = ds.cases[ds.cases["backend"] == "ros3-1.14"].iloc[:1].assign(status="partial", trial=2)
    ds.failed = lost
    t = decision.decision_table(ds)
    assert list(zip(t["series"], t["failed"])) == [("ros3-1.14", 1), ("fsspec", 0)]
    (line,) = decision.answers(t)
    assert line.startswith("shots: fsspec with 1 worker, 2.05 s")
    assert line.endswith("; ros3-1.14 with 1 worker was faster (1.05 s) but 1 of its 3 cases failed")
    assert list(decision.display_table(t, "shots")["failed cases"]) == ["1 of 3", "—"]
    assert decision.one_line(t).startswith("shots: fsspec with 1 worker")


def test_answers_name_the_fastest_per_mode(table: pd.DataFrame) -> None:
    lines = decision.answers(table)
    assert lines[0].startswith("shots: ros3-2.0 with 2 workers") and "× the limit" in lines[0]
    assert lines[1].startswith("signals: ros3-2.0 with 4 workers")


def test_findings_are_few_ranked_and_significant() -> None:
    ds = analysis.load([f"fixture={RUN}"])
    lines = decision.findings(ds, decision.decision_table(ds))
    assert 0 < len(lines) <= decision.MAX_FINDINGS
    assert all("95 % CI" in line for line in lines)
    effects = [float(line.split("× ")[0].split()[-1]) for line in lines]
    assert effects == sorted(effects, reverse=True)  # all ratios > 1 here, so larger first
    assert "shots, 2 workers: ros3-1.14 takes 1.19× the runtime of ros3-2.0" in " ".join(lines)


def test_single_trial_reference_gets_a_finding_over_worker_counts() -> None:
    from shotbench.reports.render import reference_inputs

    ds = analysis.load(reference_inputs())
    table = decision.decision_table(ds)
    assert set(table["verdict"]) == {decision.FASTEST, decision.ONE_TRIAL}
    lines = decision.findings(ds, table)
    assert lines == [
        "signals: across 6 worker counts, old-ros3-1.14 takes a median 1.48× the runtime of new-ros3-2.0dev "
        "(95 % CI over worker counts 1.22–2.02×)."
    ]


def test_a_backend_whose_only_case_failed_has_a_row() -> None:
    """A backend that measured nothing was missing from decision.csv, so the table hid it."""
    ds = _cases({"ros3-2.0": [1.0], "fsspec": [2.0, 2.1]})
    lost = ds.cases["backend"] == "ros3-2.0"
    ds.failed = ds.cases[lost].assign(status="failed", **{"total-runtime": np.nan})
    ds.cases = ds.cases[~lost]
    t = decision.decision_table(ds)
    row = t[t["series"] == "ros3-2.0"]
    assert len(row) == 1 and int(row["failed"].iloc[0]) == 1 and int(row["trials"].iloc[0]) == 0
    assert row["verdict"].iloc[0] == decision.NO_MEASUREMENT and pd.isna(row["rank"].iloc[0])
    assert list(decision.display_table(t, "shots")["failed cases"]) == ["—", "1 of 1"]
    assert decision.answers(t)[0].startswith("shots: fsspec")
    assert decision.findings(ds, t) is not None


def test_the_answer_names_the_leader_its_equivalents_and_counts_the_undecided() -> None:
    """Three runs of quick gave a different fastest backend each time: the answer is the leader
    and what is shown equivalent to it, with the slower and the undecided counted, in one sentence."""
    base = [1.00, 1.10, 1.05, 0.98]
    ds = _cases(
        {
            "ros3-1.14": base,
            "obstore": [x * f for x, f in zip(base, (1.02, 0.99, 1.01, 1.0))],
            "fsspec": [2 * x for x in base],
            "remfile": [x * f for x, f in zip(base, (1.2, 0.95, 1.15, 0.97))],
        }
    )
    t = decision.decision_table(ds)
    by = t.set_index("name")["verdict"]
    assert (by["obstore"], by["fsspec"], by["remfile"]) == (decision.EQUIVALENT, decision.SLOWER, decision.UNDECIDED)
    (answer,) = decision.answer_records(t)
    assert answer.names == ("ros3-1.14", "obstore")
    assert (answer.decided, answer.pairs, answer.undecided) == (2, 3, ("remfile",))
    (line,) = decision.answers(t)
    assert line.startswith("shots: ros3-1.14 with 1 worker, 1.02 s")
    assert "; obstore is equivalent (within ±10 %" in line and "; 1 is slower; 1 undecided (remfile" in line
    assert decision.one_line(t).startswith("shots: ros3-1.14 and obstore (equivalent) with 1 worker")
    assert decision.one_line(t).endswith(", 1 undecided")
    # the findings say the clear difference and nothing about the equivalent pair
    found = " ".join(decision.findings(ds, t))
    assert "fsspec takes" in found and "obstore takes" not in found


def test_a_clear_winner_is_named_alone() -> None:
    t = decision.decision_table(_cases({"a": [1.0, 1.01, 0.99, 1.0], "b": [1.5, 1.52, 1.49, 1.51]}))
    (answer,) = decision.answer_records(t)
    assert answer.equivalent == () and answer.text.startswith("shots: a with 1 worker, 1 s")
    assert answer.text.endswith("; 1 is slower")

"""The decision table ranks backends with CIs, finds the limit, and prices the requests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shotbench import stats
from shotbench.analyse import analysis, decision
from support.golden import RUN_FIXTURE as RUN
from support.synthetic import case_dataset as _cases


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
    assert second["vs-fastest"] == pytest.approx(np.median([1.412746, 1.444703]) / first["runtime"])
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


def test_overlapping_trials_are_no_clear_difference() -> None:
    t = decision.decision_table(
        _cases({"a": [1.0, 1.2, 1.4, 1.1], "b": [1.05, 1.3, 1.0, 1.25], "c": [3.0, 3.1, 3.2, 3.05]})
    )
    assert list(t["verdict"]) == [decision.FASTEST, decision.UNCLEAR, decision.SLOWER]


def test_the_ratio_to_the_fastest_is_paired_by_round() -> None:
    """Rounds that run slow for everyone divide out: b is 10 % slower than a in every round, so it
    is slower, although its runtimes overlap a's; c scatters around a's by a few per cent (the spread both are judged by, pooled), so it is a tie."""
    a = [1.0, 2.0, 1.0, 2.0]
    t = decision.decision_table(
        _cases({"a": a, "b": [1.1 * x for x in a], "c": [x * f for x, f in zip(a, (0.97, 1.03, 0.98, 1.02))]})
    )
    by = t.set_index("name")
    assert by.at["b", "verdict"] == decision.SLOWER
    assert by.at["b", "vs-fastest-ci-low"] > 1
    assert by.at["c", "verdict"] == decision.UNCLEAR
    # the interval is the one stated for the next run: the same statistic `shotbench repeat` scores
    ci = stats.next_run_intervals([[1.1] * 4, [0.97, 1.03, 0.98, 1.02]])
    assert (by.at["c", "vs-fastest-ci-low"], by.at["c", "vs-fastest-ci-high"]) == pytest.approx((ci[1].low, ci[1].high))


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


def test_the_answer_names_every_backend_tied_with_the_leader() -> None:
    """Three runs of quick gave a different fastest backend each time: where intervals overlap the
    answer is the group, and the decision table calls the same rows "no clear difference"."""
    ds = _cases(
        {"ros3-1.14": [1.00, 1.10, 1.05, 0.98], "obstore": [1.02, 1.08, 1.12, 1.00], "fsspec": [2.0, 2.1, 2.2, 2.05]}
    )
    t = decision.decision_table(ds)
    assert list(t["verdict"]) == [decision.FASTEST, decision.UNCLEAR, decision.SLOWER]
    (answer,) = decision.answer_records(t)
    assert answer.names == ("ros3-1.14", "obstore")
    spread = np.median([1.02, 1.08, 1.12, 1.00]) / np.median([1.00, 1.10, 1.05, 0.98]) - 1
    assert answer.spread == pytest.approx(spread) and answer.within == 3
    (line,) = decision.answers(t)
    assert line.startswith("shots: ros3-1.14 and obstore with 1 worker are within 3 % of one another")
    assert "pick on cost or simplicity" in line and "fsspec" not in line
    assert decision.one_line(t).startswith("shots: ros3-1.14 and obstore (tied) with 1 worker")
    # the findings say the clear difference and nothing about the tied pair
    found = " ".join(decision.findings(ds, t))
    assert "fsspec takes" in found and "obstore takes" not in found


def test_a_clear_winner_is_named_alone() -> None:
    t = decision.decision_table(_cases({"a": [1.0, 1.01, 0.99, 1.0], "b": [1.5, 1.52, 1.49, 1.51]}))
    (answer,) = decision.answer_records(t)
    assert answer.tied == () and answer.text.startswith("shots: a with 1 worker, 1 s")


def test_a_crowd_of_ties_is_told_as_a_run_that_cannot_rank() -> None:
    """Where the noise hides every difference the answer says so first, names every configuration
    and the way to separate them, instead of a list that reads like a ranking."""
    t = decision.decision_table(
        _cases({n: [1.0 + 0.01 * i, 1.5 - 0.01 * i, 1.1, 1.4] for i, n in enumerate(["a", "b", "c", "d"])})
    )
    (answer,) = decision.answer_records(t)
    assert len(answer.names) == 4
    assert answer.text.startswith("shots: this run cannot tell 4 configurations with 1 worker apart")
    assert all(n in answer.text for n in "abcd") and "--precision" in answer.text
    assert decision.one_line(t).startswith("shots: 4 configurations tied (fastest median: a) with 1 worker")

"""`shotbench transfer`'s header says what the run will do: `--rows 1x0MiB` printed
"1 rows" while 484 cases were planned, the profile's sweep and latency rows kept unseen. The
header is counted from the cases the runner orders, so the two cannot disagree."""

from __future__ import annotations

import argparse

import pytest

from shotbench.commands.transfer import build_plan
from shotbench.transfer.execute import case_order, plan_cases
from shotbench.transfer.plansummary import describe
from shotbench.transfer.programs import make_tools


def _args(**given: str) -> argparse.Namespace:
    args = dict(
        profile="quick", tools=None, trials=None, max_trials=None, networks=None, data=None, rows=None, concurrency=None
    )
    return argparse.Namespace(
        **{**args, "seed": 0, "direction": "both", "server_storage": "auto", "server_cpus": "auto", **given}
    )


@pytest.mark.parametrize(
    "given",
    [{}, {"rows": "1x1MiB"}, {"rows": "1x1MiB", "networks": "none"}, {"concurrency": "4"}, {"tools": "s3fs"}],
    ids=["profile", "--rows", "--rows --networks none", "--concurrency", "--tools"],
)
def test_the_header_counts_the_cases_the_run_orders(given: dict[str, str]) -> None:
    plan = build_plan(_args(**given))
    tools = make_tools(plan.tools, {})
    text = describe(plan, tools)
    ordered = case_order(plan_cases(plan, tools), plan.trials, plan.seed, plan.latency_trials)
    assert text.startswith(f"{len(ordered)} timed cases ("), text


def test_rows_replace_every_row_of_the_profile() -> None:
    plan = build_plan(_args(rows="1x1MiB"))
    text = describe(plan, make_tools(plan.tools, {}))
    assert {r.label for r in plan.all_rows()} == {plan.rows[0].label}
    assert "256 MiB" not in text and "concurrency sweep" not in text


def test_what_the_profile_adds_is_said_with_why() -> None:
    plan = build_plan(_args(concurrency="4"))
    text = describe(plan, make_tools(plan.tools, {}))
    assert "latency sweep" in text and "--networks none drops it" in text


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"tools": "s3fs,obstore,s3fs"}, ["--tools", "s3fs twice"]),
        ({"rows": "1x1MiB,1x1024KiB"}, ["--rows", "1x1MiB and 1x1024KiB twice"]),
        ({"concurrency": "4,16,4"}, ["--concurrency", "4 twice"]),
    ],
)
def test_a_matrix_value_named_twice_is_one_sentence(given: dict[str, str], words: list[str]) -> None:
    """A tool or row given twice timed its cases twice under one case id (a resume then kept one)."""
    from shotbench.errors import UserError

    with pytest.raises(UserError) as caught:
        build_plan(_args(**given))
    assert all(w in str(caught.value) for w in words), str(caught.value)


def test_the_quick_profile_adds_trials_where_undecided_and_an_explicit_trial_count_does_not() -> None:
    from shotbench.errors import UserError

    plan = build_plan(_args())
    assert (plan.trials, plan.max_trials) == (5, 20)
    assert describe(plan, make_tools(plan.tools, {})).endswith(
        "then up to 20 trials of stage and its contenders on rows whose threshold is undecided"
    )
    assert build_plan(_args(trials=3)).max_trials == 0  # a count asked for is the count run
    assert build_plan(_args(trials=3, max_trials=8)).max_trials == 8
    with pytest.raises(UserError, match=r"--max-trials must be at least the trials of every case \(3\)"):
        build_plan(_args(trials=3, max_trials=2))

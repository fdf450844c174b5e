"""Stop when answered: after a run's first rounds, more interleaved rounds for the groups still open.

A (mode, workers) group is open while a pair with its leader has no verdict (analyse/verdicts.py).
Each extra round measures every configuration of every open group once more, at the group's next
trial, interleaved in the seeded order of plan_cases, so the new ratios pair by round like the
first ones. Rounds stop when no group is open, when the next round would not fit the time budget
(counted from the first case), or at the round cap; run.json's
`stop` records per group why it stopped and after how many rounds.

What a round of some groups costs is estimated from the first rounds: a round's wall time is its
cases' runtimes plus a fixed cost per case (release, gather, the raw-GET ceiling measured after
each case, the driver's messages), so the cost per case is (wall − runtimes) ÷ cases of those
rounds, and a round of the open groups costs their last round's runtimes plus that per case.
The cheap `shots` groups can then get several rounds where a `signals` round would not fit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shotbench.analyse import verdicts
from shotbench.plan import matrix as planmod

DEFAULT_CAP = 12  # rounds, when the run sets no max_trials: past this the spread, not the count, decides


@dataclass(frozen=True)
class Budget:
    """What the extra rounds may spend: wall seconds since the run's first case, and a round cap."""

    seconds: float
    max_rounds: int


def _rounded(value: float) -> float | None:
    """A spread for run.json: 4 decimals, None when unknown (JSON has no NaN)."""
    return None if value != value else round(value, 4)


def decide_rounds(
    runner: Any,
    folder: Any,
    matrix: planmod.Matrix,
    seed: int,
    reads: dict[str, bool],
    block: dict[str, bool],
    meta: dict[str, Any],
    budget: Budget,
    started: float,
    say: Callable[[str], None],
) -> dict[str, dict[str, Any]]:
    """Run extra rounds until every group is decided, the budget is spent or the cap reached;
    returns (and records in meta["stop"]) each group's stop reason and rounds."""
    stop: dict[str, dict[str, Any]] = {}
    per_case: float | None = None  # fixed seconds per case beyond its runtime, from the first rounds
    while True:
        groups = verdicts.run_groups(folder.path)
        open_ = [g for g in groups if g.open_pairs]
        for g in groups:
            if not g.open_pairs:
                stop[g.key] = {"reason": verdicts.DECIDED, "rounds": g.rounds, "spread": _rounded(g.spread)}
        if not open_:
            break
        capped = [g for g in open_ if g.rounds >= budget.max_rounds]
        for g in capped:
            stop[g.key] = {
                "reason": verdicts.CAP,
                "rounds": g.rounds,
                "undecided": list(g.open_pairs),
                "spread": _rounded(g.spread),
            }
        open_ = [g for g in open_ if g.rounds < budget.max_rounds]
        if not open_:
            break
        elapsed = time.monotonic() - started
        if per_case is None:
            runtimes, n = sum(g.seconds * g.rounds for g in groups), sum(g.cases * g.rounds for g in groups)
            per_case = max(0.0, elapsed - runtimes) / max(1, n)
        cost = sum(g.seconds + per_case * g.cases for g in open_)
        if elapsed + cost > budget.seconds:
            for g in open_:
                stop[g.key] = {
                    "reason": verdicts.BUDGET,
                    "rounds": g.rounds,
                    "undecided": list(g.open_pairs),
                    "spread": _rounded(g.spread),
                }
            say(
                f"time budget: {elapsed:.0f} of {budget.seconds:.0f} s spent, another round of {len(open_)} open "
                f"group(s) would take about {cost:.0f} s; stopping with them undecided"
            )
            break
        want = {(g.mode, g.workers): g.rounds + 1 for g in open_}
        matrix.trials = max(want.values())
        cases = [c for c in planmod.plan_cases(matrix, seed, reads, block) if want.get((c.mode, c.workers)) == c.trial]
        say(f"another round for {len(open_)} open group(s): {', '.join(g.key for g in open_)} ({len(cases)} cases)")
        meta.setdefault("plan", []).extend(c.to_dict() for c in cases)
        folder.write_meta(meta)
        runner.run(cases)
    meta["stop"] = stop
    folder.write_meta(meta)
    return stop

"""What a transfer run will do, in one header line, counted from the cases it will really run.

`--rows 1x0MiB` once printed "1 rows" while 484 cases were planned: the profile's sweep and
latency rows, up to 1 x 256 MiB, were kept. The header now counts `plan_cases` itself, per
part of the matrix, so no flag can narrow one part while another runs unseen.
"""

from __future__ import annotations

from shotbench.transfer.execute import LOOPBACK, TransferPlan, plan_cases
from shotbench.transfer.programs import Tool


def _rows(rows: list) -> str:
    return ", ".join(r.label for r in dict.fromkeys(rows)) or "none"


def describe(plan: TransferPlan, tools: list[Tool]) -> str:
    """`N cases (main: ..., concurrency sweep: ..., latency sweep: ...)`, each part with its rows."""
    cases = plan_cases(plan, tools)
    main = [c for c in cases if c.network == LOOPBACK and c.concurrency in plan.concurrency]
    sweep = [c for c in cases if c.network == LOOPBACK and c.concurrency not in plan.concurrency]
    latency = [c for c in cases if c.network != LOOPBACK]
    parts = [
        f"main {len(main)} x {plan.trials} trial(s) over rows {_rows([c.row for c in main])} "
        f"at concurrency {list(plan.concurrency)}"
    ]
    if sweep:
        parts.append(
            f"concurrency sweep {len(sweep)} x {plan.trials} over rows {_rows([c.row for c in sweep])} "
            f"at {sorted({c.concurrency for c in sweep})}, the profile's (--concurrency or --rows replaces it)"
        )
    if latency:
        parts.append(
            f"latency sweep {len(latency)} x {plan.latency_trials} over rows "
            f"{_rows([c.row for c in latency])} on {', '.join(dict.fromkeys(c.network for c in latency))}, "
            "the sync-vs-async comparison (--networks none drops it)"
        )
    total = len(main) * plan.trials + len(sweep) * plan.trials + len(latency) * plan.latency_trials
    more = (
        f", then up to {plan.max_trials} trials of stage and its contenders on rows whose threshold is undecided"
        if plan.max_trials > plan.trials
        else ""
    )
    return f"{total} timed cases ({'; '.join(parts)}){more}"

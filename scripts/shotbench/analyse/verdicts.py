"""Stop when answered: which (mode, workers) groups of a run still need another interleaved round.

After a run's first rounds, a group is *open* while a pair involving its leader has no verdict yet:
undecided, or no interval (one round), or shown faster than the leader (the ranking by median and
the paired ratio disagree, so the leader itself is in doubt). Only open groups get another round,
up to the run's time budget; each group's stop reason is recorded in run.json: `decided` (every
pair with the leader is slower or equivalent), `budget spent`, or `round cap`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from shotbench.analyse import analysis, decision

DECIDED, BUDGET, CAP = "decided", "budget spent", "round cap"
OPEN_VERDICTS = (decision.UNDECIDED, decision.ONE_TRIAL, decision.FASTER)


@dataclass(frozen=True)
class Group:
    """One (mode, workers) group of a run and what keeps it open."""

    mode: str
    workers: int
    rounds: int  # the highest trial measured
    open_pairs: tuple[str, ...]  # configurations whose pair with the leader has no verdict yet
    seconds: float = 0.0  # the case runtimes of its last round, added up (what another round costs, less overhead)
    cases: int = 0  # its cases in that round
    spread: float = float("nan")  # the per-round spread of its log ratios to the leader (what decides)

    @property
    def key(self) -> str:
        """How run.json names the group: `shots w2`."""
        return f"{self.mode} w{self.workers}"


def groups(table: pd.DataFrame, trials: pd.DataFrame) -> list[Group]:
    """Every ranked (mode, workers) group of a decision table; `trials` holds the run's usable
    cases (obj-type, num-workers, trial, total-runtime), for each group's rounds and the cost of
    its last one."""
    ranked = table[table["rank"].notna()]
    t = trials.assign(
        trial=pd.to_numeric(trials["trial"], errors="coerce"),
        runtime=pd.to_numeric(trials["total-runtime"], errors="coerce"),
    )
    out = []
    for (mode, workers), g in ranked.groupby(["obj-type", "num-workers"], sort=False):
        stuck = g[g["verdict"].isin(OPEN_VERDICTS)]
        mine = t[(t["obj-type"] == mode) & (t["num-workers"] == workers)]
        top = int(mine["trial"].max()) if len(mine) else 0
        last = mine[mine["trial"] == top]
        out.append(
            Group(
                str(mode),
                int(workers),
                top,
                tuple(str(n) for n in stuck["name"]),
                float(last["runtime"].sum()),
                len(last),
                float(g["round-spread"].max()) if "round-spread" in g.columns else float("nan"),
            )
        )
    return out


def run_groups(folder: Path) -> list[Group]:
    """The groups of a run folder as its cases stand now (the run's own margin)."""
    ds = analysis.load([f"{folder.name}={folder}"])
    table = decision.decision_table(ds, margin=decision.margin_of(ds))
    return groups(table, decision.usable_cases(ds.cases))

"""Which rows of a transfer run get another trial: those whose stage threshold the trials so far
leave undecided.

A 128 x 1 MiB case lasts 0.2-0.4 s on two shared cores and moves ±15 % from one trial to the
next, whatever runs beside it (pairing tools within a trial does not narrow their ratio: the
noise is each case's own). Five trials then leave the ratio of stage to the fastest other tool
with an interval from about 0.9 to 1.3, which can neither pass nor fail a 1.10 threshold. So after
the planned trials, each row whose ratio interval still straddles the threshold (against the
fastest other tool, or against the fastest making stage's check) gets another interleaved trial of
stage and of the tools that could be the fastest on it, until every row is decided or the plan's
trial cap is reached. Rows already decided cost nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from shotbench.transfer.results import (
    BASELINE,
    SELF,
    THRESHOLD,
    UNDECIDED,
    StageCheck,
    like_for_like,
    loopback,
    stage_checks,
    summarize,
)


@dataclass(frozen=True)
class OpenRow:
    """A row of the matrix whose threshold is undecided, and the tools its next trial runs."""

    direction: str
    test: str
    concurrency: int
    tools: tuple[str, ...]  # shotbench first, then its contenders, fastest first


def _key(c: StageCheck) -> tuple[str, str, int]:
    return c.direction, c.test, c.concurrency


def open_rows(cases: pd.DataFrame, threshold: float = THRESHOLD) -> list[OpenRow]:
    """The rows whose stage threshold is undecided, in the order stage_checks gives them.

    A row's contenders are the tools with a verified trial whose median's interval reaches down
    to stage's median, or to within the threshold of the fastest other tool's (any of them could
    be the fastest after another trial), and the fastest tool making stage's check, when that
    comparison is open."""
    checks = stage_checks(cases, threshold)
    same = {_key(c): c for c in like_for_like(cases, threshold)}
    summary = summarize(loopback(cases))
    out = []
    for c in checks:
        if c.seconds is None:
            continue  # no verified trial of stage: another one is not what this row needs
        other = same.get(_key(c))
        undecided = c.verdict == UNDECIDED
        if not undecided and not (other is not None and other.verdict == UNDECIDED):
            continue
        g = summary[
            (summary["direction"] == c.direction)
            & (summary["test"] == c.test)
            & (summary["concurrency"] == c.concurrency)
            & (summary["tool"] != SELF)
            & (summary["tool"] != BASELINE)
            & (summary["good"] > 0)
        ].sort_values("seconds")
        bar = max(c.seconds, (c.best_seconds or 0.0) * threshold)
        low = g["lo"].fillna(g["seconds"])  # a tool whose interval reaches under the bar may be the fastest
        tools = [str(t) for t in g.loc[low <= bar, "tool"]] if undecided else []
        if other is not None and other.verdict == UNDECIDED and other.best_tool not in tools:
            tools.append(other.best_tool)
        out.append(OpenRow(c.direction, c.test, c.concurrency, (SELF, *tools)))
    return out

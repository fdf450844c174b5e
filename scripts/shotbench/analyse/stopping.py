"""Trials until the interval is tight: when a case group has been measured enough.

A case group is one configuration (backend, mode, workers, page buffer, caches) over its trials.
After each of its trials the group's samples are every task read time of every trial so far
(tasks are the unit, as in `compare`); the group is `tight` once the BCa 95 % interval of their
median lies within ±`precision` of it, `cap` once it has run `max_trials` trials without that, and
`more` otherwise: the run then measures it in another interleaved round. The last case row of a
group says which happened; a group whose last row is not `tight` is noisy in the reports.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

TIGHT, CAP, MORE, FIXED = "tight", "cap", "more", ""
NOISY = (CAP, MORE)  # a group that stopped on its cap, or whose run ran out of time


def group_of(case_id: str) -> str:
    """The case id without its trial (`t3-ros3-2.0-shots-w2-…` → `ros3-2.0-shots-w2-…`)."""
    head, sep, rest = case_id.partition("-")
    return rest if sep and head[:1] == "t" and head[1:].isdigit() else case_id


@dataclass(frozen=True)
class Rule:
    """The stopping rule of a run: precision 0 is a fixed number of trials (the old behaviour)."""

    precision: float = 0.0  # target half-width of the 95 % interval, as a fraction of the median
    max_trials: int = 0  # the cap; 0 = the run's trials (no extra rounds)
    max_seconds: float = 0.0  # wall time the extra rounds may take; 0 = no limit

    @property
    def adaptive(self) -> bool:
        return self.precision > 0 and self.max_trials > 0

    def verdict(self, samples: Sequence[float], trials: int) -> tuple[float, str]:
        """(half-width of the median's 95 % interval, tight/cap/more) after `trials` trials."""
        from shotbench import stats  # scipy: 3 s to import, so only once a case ran

        if not self.adaptive:
            return stats.median_interval(samples).half_width, FIXED
        width = stats.median_interval(samples).half_width
        if width == width and width <= self.precision:  # NaN (fewer than 2 samples) is never tight
            return width, TIGHT
        return width, CAP if trials >= self.max_trials else MORE


def last_rows(rows: Iterable[dict[str, str]]) -> dict[str, dict[str, str]]:
    """Each group's row of its highest trial."""
    out: dict[str, dict[str, str]] = {}
    for r in rows:
        g = group_of(r["case-id"])
        if g not in out or int(r["trial"]) > int(out[g]["trial"]):
            out[g] = r
    return out


def groups_to_extend(rows: Iterable[dict[str, str]]) -> dict[str, int]:
    """Groups whose last row asks for more, with the trial to run next."""
    return {g: int(r["trial"]) + 1 for g, r in last_rows(rows).items() if r.get("stop") == MORE}

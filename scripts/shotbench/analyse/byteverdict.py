"""A backend's bytes against h5py's: the verdict of one (backend, family), and what sinks a run.

Kept apart from the check that produces them (`shotbench.bench.bytecheck`, which runs readers in
their environments) so the analysis (the capability matrix) reads verdicts from run.json
without depending on how a run is carried out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from shotbench.plan.matrix import ShotFile
from shotbench.records.status import FAILED, OK, UNSUPPORTED, is_failure, is_unsupported

WRONG = "wrong"


@dataclass(frozen=True)
class Verdict:
    """What one backend returned for one family's file, against h5py on the local copy."""

    backend: str
    family: str  # "" for a run without families
    key: str
    status: str  # ok | unsupported | wrong | failed
    signals: int  # signals compared
    reason: str = ""  # the first unsupported / wrong / error text, one line
    scales: bool = True  # False: the backend was told to skip dimension scales (signal data only)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def is_failure(self) -> bool:
        return is_failure(self.status)


def from_dicts(items: Iterable[dict[str, Any]]) -> list[Verdict]:
    return [Verdict(**d) for d in items]


def verdict(backend: str, family: str, f: ShotFile, got: dict[str, str], want: dict[str, str], scales: bool) -> Verdict:
    """Compare a backend's digests with h5py's: the first difference decides."""
    if "" in got:  # the backend could not start at all
        return Verdict(backend, family, f.key, FAILED, 0, _line(got[""]), scales)
    for k, expected in want.items():
        cell = got.get(k, "missing from the reader's answer")
        if cell == expected:
            continue
        if is_unsupported(cell):
            return Verdict(backend, family, f.key, UNSUPPORTED, len(want), _line(cell), scales)
        if len(cell) == 64 and all(c in "0123456789abcdef" for c in cell):
            return Verdict(
                backend, family, f.key, WRONG, len(want), f"{k}: bytes differ from h5py's on the local copy", scales
            )
        return Verdict(backend, family, f.key, FAILED, len(want), _line(f"{k}: {cell}"), scales)
    return Verdict(backend, family, f.key, OK, len(want), "", scales)


def _line(text: str) -> str:
    return " ".join(str(text).split())[:300]


def failures(verdicts: Iterable[Verdict]) -> list[Verdict]:
    return [v for v in verdicts if v.is_failure]


def failure_message(bad: list[Verdict]) -> str:
    """One sentence naming every backend that returned wrong bytes or crashed, and where."""
    parts = [
        f"{v.backend} on {v.family or 'the files'}: {'wrong bytes' if v.status == WRONG else 'crashed'} ({v.reason})"
        for v in bad
    ]
    return "the byte check against h5py failed for " + "; ".join(parts)

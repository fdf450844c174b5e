"""What each reader can read: reader × file family, ✓ or ✗ with the reason in one line.

Two sources agree here: the run's byte check (`shotbench.bench.bytecheck`, one file per family
against h5py, in run.json) and the timed cases (a case whose reader declared the shape
unsupported has status `unsupported` and the reader's words in `first-error`). A reader that
returned wrong bytes or crashed is marked as such: that is a failure, not a capability.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from shotbench.analyse import byteverdict
from shotbench.analyse.text import as_text
from shotbench.records.status import FAILED, OK, UNSUPPORTED, UNSUPPORTED_PREFIX
from shotbench.runs import read_meta

YES, NO = "✓", "✗"
SKIPPED_SCALES = "signal data only: told to skip the dimension scales it cannot resolve"


@dataclass(frozen=True)
class Capability:
    """One cell of the matrix."""

    backend: str
    family: str
    readable: bool | None  # None: neither checked nor timed on this family
    status: str  # ok | unsupported | wrong | failed | "" (not run)
    reason: str  # one line: why not, or what it reads less of

    @property
    def cell(self) -> str:
        if self.readable is None:
            return "not run"
        mark = YES if self.readable else NO
        return f"{mark} {self.reason}" if self.reason else mark

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def reason_line(error: str) -> str:
    """`unsupported: pyfive: Pyfive cannot yet read … (key)` -> `Pyfive cannot yet read …`."""
    text = " ".join(str(error or "").split())
    if text.startswith(UNSUPPORTED_PREFIX):
        text = text[len(UNSUPPORTED_PREFIX) :]
        text = re.sub(r"^[\w.-]+: ", "", text, count=1)  # the reader's name: the row already says it
    text = re.sub(r"^\S+\.h5: ", "", text)  # a leading object key
    text = re.sub(r" \([^()]*\.h5\)$", "", text)  # a trailing (object key)
    return text[:160]


def capabilities(verdicts: list[byteverdict.Verdict], cases: pd.DataFrame) -> list[Capability]:
    """One Capability per (backend, family) seen in the byte check or the cases."""
    fam_col = "file-family" if "file-family" in cases.columns else None
    case_groups: dict[tuple[str, str], pd.DataFrame] = {}
    if len(cases):
        keys = [
            cases["backend"].astype(str),
            as_text(cases[fam_col]) if fam_col else pd.Series("", index=cases.index),
        ]
        for (b, f), g in cases.groupby(keys, sort=False):
            case_groups[(str(b), str(f))] = g
    checked = {(v.backend, v.family): v for v in verdicts}
    out = []
    for key in dict.fromkeys([*checked, *case_groups]):
        v, g = checked.get(key), case_groups.get(key)
        statuses = set(g["status"].astype(str)) if g is not None and "status" in g.columns else set()
        unsupported_error = ""
        if g is not None and UNSUPPORTED in statuses:
            first = (
                g.loc[g["status"] == UNSUPPORTED, "first-error"]
                if "first-error" in g.columns
                else pd.Series([], dtype=str)
            )
            unsupported_error = reason_line(str(first.iloc[0])) if len(first) else ""
        if v is not None and v.is_failure:
            out.append(
                Capability(
                    *key,
                    False,
                    v.status,
                    ("wrong bytes: " if v.status == byteverdict.WRONG else "crashed: ") + reason_line(v.reason),
                )
            )
        elif (v is not None and v.status == UNSUPPORTED) or UNSUPPORTED in statuses:
            out.append(
                Capability(
                    *key, False, UNSUPPORTED, reason_line(v.reason) if v is not None and v.reason else unsupported_error
                )
            )
        elif v is not None or OK in statuses:
            note = SKIPPED_SCALES if v is not None and not v.scales else ""
            out.append(Capability(*key, True, OK, note))
        elif statuses:
            out.append(Capability(*key, False, FAILED, "its cases failed (see the failed cases)"))
    return out


def matrix(caps: list[Capability]) -> pd.DataFrame:
    """Reader (rows) × family (columns), each cell ✓ / ✗ with its one-line reason."""
    if not caps:
        return pd.DataFrame()
    frame = pd.DataFrame([{"reader": c.backend, "family": c.family or "files", "cell": c.cell} for c in caps])
    table = frame.pivot(index="reader", columns="family", values="cell").fillna("not run")
    order = list(dict.fromkeys(c.backend for c in caps))
    return table.reindex(order)[list(dict.fromkeys(frame["family"]))].rename_axis(None, axis=1)


def run_capabilities(run: Path) -> list[Capability]:
    """The capabilities a run folder records (run.json's byte check and cases.csv)."""
    meta = read_meta(run)
    cases_csv = run / "cases.csv"
    cases = (
        pd.read_csv(cases_csv, dtype=str, keep_default_na=False)
        if cases_csv.is_file() and cases_csv.stat().st_size
        else pd.DataFrame()
    )
    return capabilities(byteverdict.from_dicts(meta.get("readcheck") or []), cases)


def run_matrix(run: Path) -> pd.DataFrame:
    """`matrix` of a run folder: what each reader can read, as that run found."""
    return matrix(run_capabilities(run))
